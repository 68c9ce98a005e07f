"""AMD code, Tritium against Triton, without an AMD GPU: the same kernel source compiled by both
for gfx942 and gfx1100, and the AMDGCN of each counted instruction by instruction.

    python bench/amd_vs_triton.py [--targets hip:gfx942,hip:gfx1100] [--kernels add,matmul]

Triton's side needs only its pip wheel (it compiles for AMD targets on a CPU machine):
``pip install triton==3.6.0``. Without it the table has Tritium's column alone. Nothing here
runs a kernel; speed on hardware is not measured. Exits 1 when Tritium fails to compile a kernel
(the row then shows Triton's figures beside "failed").

Per kernel and target it prints, Tritium / Triton:
- instructions in the whole kernel (its whole function, past the first ``s_endpgm``) and in the
  main loop (the loop with the most MFMA/WMMA, else the longest);
  kernels: vector add, softmax, layer norm, the tutorial matmul (fp16 and bf16, without and with
  divisibility hints on sizes and strides, 2 and 3 stages; int8 with an int32 accumulator),
  attention forward (fp16 d64 and d128, 2 and 3 stages, bf16 d128, fp16 d128 without hints);
- MFMA/WMMA count, and the MFMAs covering a load: the fewest MFMA/WMMA issued between a global
  load of the main loop and the ``s_waitcnt vmcnt`` that waits for it; global loads by width;
- LDS reads and writes by width; ``s_waitcnt``; ``s_barrier``;
- VGPRs, AGPRs, SGPRs, LDS bytes and scratch bytes, from the assembler's own summary.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from kernel_files import load_kernels  # noqa: E402


# ---- the kernels ---------------------------------------------------------------------------------

@dataclass
class Spec:
    name: str
    file: str  # a kernel file of bench/
    fn: str
    signature: dict
    constexprs: dict
    num_warps: int = 4
    num_stages: int = 2
    hints: tuple = ()  # argument names given divisibility 16 (Triton's and Tritium's tt.divisibility)


def _mm(dtype: str, out: str, hinted: bool, bm=128, bn=128, bk=64) -> tuple[dict, dict, tuple]:
    sig = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{out}", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32",
           "stride_cn": "i32"}
    consts = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8}
    # the unit strides are constants (1) in both compilers' specialization
    consts.update(stride_ak=1, stride_bn=1, stride_cn=1)
    for k in ("stride_ak", "stride_bn", "stride_cn"):
        sig.pop(k)
    hints = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm") if hinted else \
        ("a_ptr", "b_ptr", "c_ptr")
    return sig, consts, hints


def _attn(dtype: str, d: int) -> tuple[dict, dict, tuple]:
    names = ["Q", "K", "V", "sm_scale", "Out", "stride_qz", "stride_qh", "stride_qm", "stride_qk", "stride_kz",
             "stride_kh", "stride_kn", "stride_kk", "stride_vz", "stride_vh", "stride_vk", "stride_vn", "stride_oz",
             "stride_oh", "stride_om", "stride_on", "H", "N_CTX"]
    sig = {n: ("fp32" if n == "sm_scale" else f"*{dtype}" if len(n) <= 3 and n != "H" else "i32") for n in names}
    consts = {"HEAD_DIM": d, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": False}
    for k in ("stride_qk", "stride_kk", "stride_vn", "stride_on"):
        sig.pop(k)
        consts[k] = 1
    hints = ("Q", "K", "V", "Out", "stride_qz", "stride_qh", "stride_qm", "stride_kz", "stride_kh", "stride_kn",
             "stride_vz", "stride_vh", "stride_vk", "stride_oz", "stride_oh", "stride_om", "N_CTX")
    return sig, consts, hints


def specs() -> list[Spec]:
    tut, mm = "tutorial_kernels.py", "matmul_kernels.py"
    add_sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}
    sm_sig = {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32", "output_row_stride": "i32",
              "n_rows": "i32", "n_cols": "i32"}
    ln_sig = {"X": "*fp32", "Y": "*fp32", "W": "*fp32", "B": "*fp32", "Mean": "*fp32", "Rstd": "*fp32",
              "stride": "i32", "N": "i32", "eps": "fp32"}
    out = [
        Spec("add", tut, "add_kernel", add_sig, {"BLOCK_SIZE": 1024}, hints=("x_ptr", "y_ptr", "output_ptr")),
        Spec("softmax", tut, "softmax_kernel", sm_sig, {"BLOCK_SIZE": 1024}, hints=("output_ptr", "input_ptr")),
        Spec("layernorm", tut, "layer_norm_fwd", ln_sig, {"BLOCK_SIZE": 1024}, hints=("X", "Y", "W", "B")),
    ]
    # (name, operand dtype, output dtype, divisibility hints on sizes and strides, num_stages)
    for name, dtype, outt, hinted, stages in (
            ("matmul", "fp16", "fp16", False, 2), ("matmul-bf16", "bf16", "bf16", False, 2),
            ("matmul-hints", "fp16", "fp16", True, 2), ("matmul-hints-bf16", "bf16", "bf16", True, 2),
            ("matmul-hints-s3", "fp16", "fp16", True, 3), ("matmul-hints-bf16-s3", "bf16", "bf16", True, 3),
            ("matmul-int8", "i8", "i32", True, 2)):
        sig, consts, hints = _mm(dtype, outt, hinted)
        consts["ACC_INT"] = dtype == "i8"
        out.append(Spec(name, mm, "matmul_kernel", sig, consts, num_stages=stages, hints=hints))
    # (operand dtype, head dim, num_stages, divisibility hints on strides and sizes)
    for dtype, d, stages, hinted in (("fp16", 64, 2, True), ("fp16", 128, 2, True), ("bf16", 128, 2, True),
                                     ("fp16", 64, 3, True), ("fp16", 128, 3, True), ("fp16", 128, 2, False)):
        sig, consts, hints = _attn(dtype, d)
        if not hinted:
            hints = ("Q", "K", "V", "Out")
        name = f"attention-{dtype}-d{d}" + ("-s3" if stages == 3 else "") + ("" if hinted else "-nohints")
        out.append(Spec(name, mm, "attn_fwd", sig, consts, num_stages=stages, hints=hints))
    # split-K: partial sums added into an fp32 C with tl.atomic_add (splitk_kernels.py)
    sk_sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
              "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
    out.append(Spec("splitk", "splitk_kernels.py", "matmul_splitk", sk_sig,
                    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "SPLIT_K": 4},
                    hints=tuple(sk_sig)))
    return out


# ---- the counts ----------------------------------------------------------------------------------

_INSTR = re.compile(r"^\s+([a-z_][a-z0-9_.]*)\b")
_LABEL = re.compile(r"^(\.?[A-Za-z_$][\w$.]*):")
_BRANCH = re.compile(r"^\s+s_cbranch_\w+\s+(\S+)|^\s+s_branch\s+(\S+)")
# the assembler's resource summary (both compilers print it through LLVM's AMDGPU asm printer)
_SUMMARY = {"vgpr": r"\.set \S+\.num_vgpr, (\d+)", "agpr": r"\.set \S+\.num_agpr, (\d+)",
            "sgpr": r"\.amdhsa_next_free_sgpr (\d+)",
            # the descriptor's VGPR count: LLVM raises it to the fewest registers that allow no more
            # wavefronts than the kernel's LDS does (see :func:`vgpr_file`)
            "next_free_vgpr": r"\.amdhsa_next_free_vgpr (\d+)",
            "scratch": r"\.amdhsa_private_segment_fixed_size (\d+)",
            "lds": r"\.amdhsa_group_segment_fixed_size (\d+)"}


@dataclass
class Stats:
    instructions: int = 0
    loop_instructions: int = 0
    matrix: int = 0
    #: the fewest MFMA/WMMA between a main-loop global load and its wait (:func:`mfma_cover`)
    cover: int | None = None
    global_loads: Counter = field(default_factory=Counter)
    lds_reads: Counter = field(default_factory=Counter)
    lds_writes: Counter = field(default_factory=Counter)
    waitcnt: int = 0
    barrier: int = 0
    regs: dict = field(default_factory=dict)

    def lds_total(self) -> int:
        return sum(self.lds_reads.values()) + sum(self.lds_writes.values())


def _kernel_body(asm: str) -> list[str]:
    """The lines of the kernel's function, all of it: from its first label to the function's end
    (``.Lfunc_end``), past the first ``s_endpgm`` (code placed after it, cold blocks and the
    returns of other paths, is counted too); without that marker, to the last ``s_endpgm``."""
    lines = asm.splitlines()
    start = next((i for i, ln in enumerate(lines) if _LABEL.match(ln) and not ln.startswith(".L")), 0)
    end = next((i for i in range(start, len(lines)) if lines[i].startswith(".Lfunc_end")), None)
    if end is None:
        ends = [i for i in range(start, len(lines)) if "s_endpgm" in lines[i]]
        end = ends[-1] if ends else len(lines) - 1
    return lines[start:end + 1]


def _mnemonic(line: str) -> str | None:
    m = _INSTR.match(line)
    if not m or m.group(1).startswith("."):
        return None
    return m.group(1)


def _width(mnemonic: str) -> str:
    """``ds_read_b128`` -> ``b128``, ``global_load_dwordx4`` -> ``x4``, ``ds_read2st64_b64`` -> ``2st64_b64``."""
    for prefix in ("ds_read", "ds_load", "ds_write", "ds_store", "global_load", "buffer_load"):
        if mnemonic.startswith(prefix):
            rest = mnemonic[len(prefix):].lstrip("_")
            return rest.replace("dword", "") or "x1"
    return mnemonic


_TERMINATORS = ("s_branch", "s_endpgm", "s_setpc_b64", "s_trap")


def _blocks(body: list[str]) -> list[tuple[int, int]]:
    """The basic blocks of ``body`` as (first, last) line ranges: a block starts at a label or
    after a branch, and ends before the next label or at a branch."""
    out, start = [], 0
    for i, line in enumerate(body):
        if _LABEL.match(line) and i > start:
            out.append((start, i - 1))
            start = i
        m = _mnemonic(line)
        if m and (m.startswith("s_cbranch_") or m in _TERMINATORS):
            out.append((start, i))
            start = i + 1
    if start < len(body):
        out.append((start, len(body) - 1))
    return out


def _successors(body: list[str], blocks: list[tuple[int, int]]) -> list[list[int]]:
    labels = {}
    for k, (lo, _hi) in enumerate(blocks):
        lab = _LABEL.match(body[lo])
        if lab:
            labels[lab.group(1)] = k
    succ: list[list[int]] = []
    for k, (lo, hi) in enumerate(blocks):
        out = []
        last = next((_mnemonic(body[i]) for i in range(hi, lo - 1, -1) if _mnemonic(body[i])), None)
        b = _BRANCH.match(body[hi])
        if b and (b.group(1) or b.group(2)) in labels:
            out.append(labels[b.group(1) or b.group(2)])
        if last not in _TERMINATORS and k + 1 < len(blocks):
            out.append(k + 1)                          # falls through (conditional branch or none)
        succ.append(out)
    return succ


def _loops(body: list[str]) -> list[list[tuple[int, int]]]:
    """The natural loops of ``body``'s control-flow graph, each as its blocks' line ranges in
    program order: for a branch to a block that dominates it (the header), every block that
    reaches the branch without passing through the header.  Blocks LLVM places out of line (a
    rarely taken path that rejoins the loop) belong to the loop; code between them that does not
    does not."""
    blocks = _blocks(body)
    succ = _successors(body, blocks)
    pred: list[list[int]] = [[] for _ in blocks]
    for k, ss in enumerate(succ):
        for t in ss:
            pred[t].append(k)
    # dominators (entry: block 0); an edge k -> h is a back edge when h dominates k (a jump up to
    # code that merely continues the straight path, as LLVM's out-of-line blocks make, is not)
    reach, work = {0}, [0]
    while work:
        for t in succ[work.pop()]:
            if t not in reach:
                reach.add(t)
                work.append(t)
    every = set(range(len(blocks)))
    dom = [every.copy() for _ in blocks]
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for k in sorted(reach - {0}):
            ps = [dom[p] for p in pred[k] if p in reach]    # a label after a jump: not a way in
            new = ({k} | set.intersection(*ps)) if ps else {k}
            if new != dom[k]:
                dom[k], changed = new, True
    loops: dict[int, set[int]] = {}
    for k, ss in enumerate(succ):
        for h in ss:
            if k not in reach or h not in dom[k]:
                continue
            members = loops.setdefault(h, {h})
            work = [k] if k != h else []
            while work:
                x = work.pop()
                if x in members:
                    continue
                members.add(x)
                work.extend(p for p in pred[x] if p in reach)
    return [[blocks[k] for k in sorted(m)] for _h, m in sorted(loops.items())]


def _loop_lines(body: list[str], loop: list[tuple[int, int]]) -> list[str]:
    return [body[i] for lo, hi in loop for i in range(lo, hi + 1)]


def main_loop(asm: str) -> list[str]:
    """The mnemonics of the main loop: the loop with the most MFMA/WMMA, else the longest."""
    return [m for m in (_mnemonic(ln) for ln in main_loop_lines(asm)) if m]


_WAIT_VM = re.compile(r"vmcnt\((\d+)\)")


def _is_vmem(m: str, stores_in_vmcnt: bool) -> bool:
    """A vector-memory instruction the ``vmcnt`` counter tracks: loads, and on gfx9 (no ``vscnt``)
    stores too."""
    if m.startswith(("global_load", "buffer_load", "flat_load", "global_atomic", "buffer_atomic")):
        return True
    return stores_in_vmcnt and m.startswith(("global_store", "buffer_store", "flat_store"))


def mfma_cover(loop: list[str], stores_in_vmcnt: bool = True) -> int | None:
    """The fewest MFMA/WMMA instructions issued between a global load of the main loop and the
    ``s_waitcnt vmcnt`` that waits for it (the loop run twice, so a load waited on in the next
    iteration counts the MFMAs up to that wait): how much matrix work hides each load's latency.
    ``loop`` holds the loop's lines (instructions with their operands). ``None`` when the loop has
    no global load."""
    seq = []
    for line in loop:
        m = _mnemonic(line)
        if m:
            seq.append((m, line))
    n = len(seq)
    if not any(m.startswith(("global_load", "buffer_load")) for m, _ in seq):
        return None
    outstanding: list[list] = []  # [index in the first pass or None, mfmas seen since issue]
    covers: list[int] = []
    for step in range(2 * n):
        m, line = seq[step % n]
        if m.startswith(("v_mfma", "v_wmma", "v_smfmac")):
            for o in outstanding:
                o[1] += 1
        elif m.startswith("s_waitcnt") and "vscnt" not in m:
            w = _WAIT_VM.search(line)
            if w is not None:
                keep = int(w.group(1))
                done, outstanding = outstanding[:max(0, len(outstanding) - keep)], \
                    outstanding[max(0, len(outstanding) - keep):]
                covers += [c for i, c in done if i is not None]
        elif _is_vmem(m, stores_in_vmcnt):
            first = step < n and m.startswith(("global_load", "buffer_load"))
            outstanding.append([step if first else None, 0])
    covers += [c for i, c in outstanding if i is not None]  # never waited on within two passes
    return min(covers) if covers else None


def main_loop_lines(asm: str) -> list[str]:
    """The lines of the main loop (see :func:`main_loop`), its blocks in program order."""
    body = _kernel_body(asm)
    best, key_best = [], None
    for loop in _loops(body):
        lines = _loop_lines(body, loop)
        ms = [m for m in (_mnemonic(ln) for ln in lines) if m]
        key = (sum(m.startswith(("v_mfma", "v_wmma")) for m in ms), len(ms))
        if key_best is None or key > key_best:
            best, key_best = lines, key
    return best


def count(asm: str, lds_bytes: int | None = None, target: str = "hip:gfx942") -> Stats:
    """The counts of one kernel's assembly; ``lds_bytes`` overrides the code object's fixed LDS
    size (for a compiler that sizes LDS at launch); ``target`` says whether stores count in
    ``vmcnt`` (gfx9) or in ``vscnt`` (gfx11)."""
    body = _kernel_body(asm)
    st = Stats()
    for line in body:
        m = _mnemonic(line)
        if m is None:
            continue
        st.instructions += 1
        if m.startswith(("v_mfma", "v_wmma", "v_smfmac")):
            st.matrix += 1
        elif m.startswith(("global_load", "buffer_load")):
            st.global_loads[_width(m)] += 1
        elif m.startswith(("ds_read", "ds_load")) and "addtid" not in m:
            st.lds_reads[_width(m)] += 1
        elif m.startswith(("ds_write", "ds_store")):
            st.lds_writes[_width(m)] += 1
        elif m.startswith("s_waitcnt"):
            st.waitcnt += 1
        elif m == "s_barrier":
            st.barrier += 1

    loop = main_loop_lines(asm)
    if loop:
        st.loop_instructions = sum(1 for ln in loop if _mnemonic(ln))
        st.cover = mfma_cover(loop, stores_in_vmcnt=target.startswith("hip:gfx9"))
    for key, pattern in _SUMMARY.items():
        m = re.search(pattern, asm)
        st.regs[key] = int(m.group(1)) if m else None
    if lds_bytes is not None:
        st.regs["lds"] = lds_bytes
    st.regs["vgpr_file"] = vgpr_file(st.regs.get("vgpr"), st.regs.get("agpr"), target)
    return st


def vgpr_file(vgpr: int | None, agpr: int | None, target: str) -> int | None:
    """The registers of the VGPR file the code uses. On CDNA (gfx90a, gfx942) the AGPRs sit above
    the architectural VGPRs in one file, from ``accum_offset`` (a multiple of 4) up; elsewhere the
    two are separate and the larger counts.

    Not the descriptor's ``.amdhsa_next_free_vgpr``: LLVM raises that to the fewest registers that
    allow no more wavefronts a SIMD than the kernel's LDS does (with 64 KiB of LDS, one wavefront:
    257), which occupies nothing the LDS had not already taken, and it can only do so where the
    LDS size is in the code object -- Triton sizes LDS at launch, so its figure is never raised."""
    if vgpr is None:
        return None
    agpr = agpr or 0
    if agpr and target.startswith(("hip:gfx90a", "hip:gfx94", "hip:gfx95")):
        return -(-vgpr // 4) * 4 + agpr
    return max(vgpr, agpr)


# ---- compiling -----------------------------------------------------------------------------------

def compile_tritium(spec: Spec, target: str):
    import tritium
    import tritium.language as tl
    mod = load_kernels(f"_tritium_{spec.file[:-3]}", tritium, tl, spec.file)
    attrs = {n: {"tt.divisibility": 16} for n in spec.hints}
    k = tritium.compile(getattr(mod, spec.fn), target=target, signature=spec.signature, constexprs=spec.constexprs,
                        attrs=attrs, num_warps=spec.num_warps, num_stages=spec.num_stages)
    return k.asm["amdgcn"], int(k.metadata["shared"])


def triton_available() -> bool:
    try:
        import triton  # noqa: F401
        from triton.backends.compiler import GPUTarget  # noqa: F401
    except Exception:
        return False
    return True


def compile_triton(spec: Spec, target: str):
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    mod = load_kernels(f"_triton_{spec.file[:-3]}", triton, tl, spec.file)
    fn = getattr(mod, spec.fn)
    sig = dict(spec.signature, **{c: "constexpr" for c in spec.constexprs})
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in spec.hints}
    arch = target.split(":", 1)[1]
    gpu = GPUTarget("hip", arch, 64 if arch.startswith("gfx9") else 32)
    k = triton.compile(ASTSource(fn, sig, spec.constexprs, attrs), target=gpu,
                       options={"num_warps": spec.num_warps, "num_stages": spec.num_stages})
    # Triton's LDS is sized at launch (the code object's fixed size is 0): its metadata says how much
    return k.asm["amdgcn"], int(k.metadata.shared)


# ---- the table -----------------------------------------------------------------------------------

def _widths(c: Counter) -> str:
    return " ".join(f"{w}:{n}" for w, n in sorted(c.items())) or "-"


def _pair(a, b) -> str:
    return f"{a} / {b}" if b is not None else f"{a}"


def _regs(s: Stats) -> str:
    return f"{s.regs.get('vgpr')}/{s.regs.get('agpr')}/{s.regs.get('sgpr')}"


def waves_per_simd(vgpr_file: int | None, target: str, lds: int | None = None, num_warps: int = 4) -> int | None:
    """Wavefronts per SIMD the registers and the LDS allow.

    CDNA (gfx90a, gfx942): the VGPR file gives each lane 512 registers, shared by the architectural
    VGPRs and the AGPRs, allocated in granules of 8, at most 8 waves; the 64 KiB of LDS a CU holds
    gives ``65536 // lds`` workgroups of ``num_warps`` wavefronts over its 4 SIMDs.
    gfx1100/gfx1101 (wave32): 1536 VGPRs a lane, granules of 24, at most 16 waves (so anything up to
    96 VGPRs keeps all 16); LDS is not counted there (a WGP's 128 KiB, two CU modes).
    The lower figure; ``None`` for other targets."""
    if vgpr_file is None:
        return None
    if target.startswith("hip:gfx9"):
        waves = min(8, 512 // max(8, -(-vgpr_file // 8) * 8))
        if lds:
            waves = min(waves, max(1, (65536 // lds) * num_warps // 4))
        return waves
    if target in ("hip:gfx1100", "hip:gfx1101"):
        return min(16, 1536 // max(24, -(-vgpr_file // 24) * 24))
    return None


def _vgpr_file(target: str, num_warps: int = 4):
    def f(s: Stats) -> str:
        waves = waves_per_simd(s.regs.get("vgpr_file"), target, s.regs.get("lds"), num_warps)
        return f"{s.regs.get('vgpr_file')}" + (f" ({waves}w)" if waves else "")
    return f


#: issue #16's bounds on gfx942 (and gfx1100 where Triton does not spill), Tritium against Triton:
#: (what, Tritium's figure, Triton's figure, the most Tritium may have)
def bounds(t: Stats, r: Stats) -> list[tuple[str, int, int, float]]:
    checks = [("LDS instructions", t.lds_total(), r.lds_total(), r.lds_total()),
              ("s_waitcnt", t.waitcnt, r.waitcnt, 1.3 * r.waitcnt),
              ("instructions", t.instructions, r.instructions, 1.15 * r.instructions),
              ("main-loop instructions", t.loop_instructions, r.loop_instructions, 1.05 * r.loop_instructions),
              # the register file that sets occupancy: on CDNA AGPRs and VGPRs are one file
              ("VGPR file", t.regs.get("vgpr_file") or 0, r.regs.get("vgpr_file") or 0,
               (r.regs.get("vgpr_file") or 0) + 8)]
    # no scratch where Triton has none; where it spills, no more than it
    checks.append(("scratch bytes", t.regs.get("scratch") or 0, r.regs.get("scratch") or 0,
                   r.regs.get("scratch") or 0))
    return checks


def bound_failures(name: str, t: Stats, r: Stats) -> list[str]:
    """The bounds ``t`` misses. Where Triton itself spills (its dot kernels on gfx1100) the only
    bound is the spill: scratch no larger than Triton's (the issue's exception)."""
    checks = bounds(t, r)
    if r.regs.get("scratch"):
        checks = [c for c in checks if c[0] == "scratch bytes"]
    out = [f"{name}: {what} {a} > {limit:g} (Triton {b})" for what, a, b, limit in checks if a > limit]
    if r.regs.get("scratch"):
        return out
    if r.cover and (t.cover or 0) < r.cover:
        # a lower bound: at least as many MFMAs hide each main-loop load as in Triton's loop
        out.append(f"{name}: MFMAs covering a load {t.cover or 0} < {r.cover} (Triton)")
    return out


#: the table's columns after the kernel's name: heading and figure of one side
COLUMNS = [
    ("instructions", lambda s: s.instructions),
    ("main loop", lambda s: s.loop_instructions),
    ("mfma/wmma", lambda s: s.matrix),
    ("MFMAs covering a load", lambda s: "-" if s.cover is None else s.cover),
    ("global loads", lambda s: _widths(s.global_loads)),
    ("LDS reads", lambda s: _widths(s.lds_reads)),
    ("LDS writes", lambda s: _widths(s.lds_writes)),
    ("s_waitcnt", lambda s: s.waitcnt),
    ("s_barrier", lambda s: s.barrier),
    ("v/a/s GPRs", _regs),
    ("VGPR file", None),  # per target: :func:`_vgpr_file`
    ("LDS bytes", lambda s: s.regs.get("lds")),
    ("scratch", lambda s: s.regs.get("scratch")),
]
HEADER = ["kernel"] + [heading for heading, _ in COLUMNS]


def row(name: str, t: Stats, r: Stats | None, target: str = "") -> list[str]:
    fs = [f or _vgpr_file(target) for _, f in COLUMNS]
    return [name] + [_pair(f(t), f(r) if r is not None else None) for f in fs]


def markdown(rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", default="hip:gfx942,hip:gfx1100")
    ap.add_argument("--kernels", default="", help="comma-separated kernel names (default: all)")
    args = ap.parse_args(argv)
    os.environ.setdefault("TRITIUM_CACHE_DIR", tempfile.mkdtemp(prefix="tritium-amd-vs-triton-"))
    wanted = {k for k in args.kernels.split(",") if k}
    chosen = [s for s in specs() if not wanted or s.name in wanted]
    have_triton = triton_available()
    if not have_triton:
        print("Triton is not importable: only Tritium's column is shown (pip install triton==3.6.0 adds it)")
    failures = 0
    missed: list[str] = []
    for target in args.targets.split(","):
        rows = []
        for spec in chosen:
            try:
                t = count(*compile_tritium(spec, target), target=target)
            except Exception as exc:  # report and go on: one kernel must not hide the others
                print(f"{target} {spec.name}: Tritium failed: {type(exc).__name__}: {str(exc)[:300]}")
                failures += 1
                t = None
            r = None
            if have_triton:
                try:
                    r = count(*compile_triton(spec, target), target=target)
                except Exception as exc:
                    print(f"{target} {spec.name}: Triton failed: {type(exc).__name__}: {str(exc)[:300]}")
            if t is not None:
                rows.append(row(spec.name, t, r, target))
                if r is not None:
                    missed += [f"{target} {m}" for m in bound_failures(spec.name, t, r)]
            elif r is not None:  # Triton's figures beside Tritium's failure
                rows.append([spec.name] + [f"failed / {c}" for c in row(spec.name, r, None, target)[1:]])
        side = "Tritium / Triton 3.6" if have_triton else "Tritium"
        print(f"\n{target} ({side}; num_warps {chosen[0].num_warps if chosen else '-'}, counts from the AMDGCN)\n")
        print(markdown(rows))
    if have_triton:
        print("\nBounds (LDS instructions <= Triton's, s_waitcnt <= 1.3x, instructions <= 1.15x, main loop <= "
              "1.05x, MFMAs covering a load >= Triton's, VGPR file <= Triton's + 8, no scratch where Triton has "
              "none; where Triton spills, only scratch <= Triton's):")
        print("\n".join(f"  missed: {m}" for m in missed) if missed else "  all met")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
