"""Hopper SASS, Tritium against Triton, without a GPU: the same kernel source compiled by both for
sm_90 and the main loop of each counted instruction class by instruction class.

    python bench/sass_compare.py [--kernels mm-fp16-128x256,attn-fp16-d64] [--dump DIR]

Triton's side needs only its pip wheel (``pip install triton==3.6.0``); its ``nvdisasm`` and
``cuobjdump`` (``triton/backends/nvidia/bin``) disassemble both cubins. Without Triton the script
stops (it needs the wheel's disassembler). Nothing here runs a kernel.

Launch parameters are the benchmark's (``bench/bench_matmul.py``): 4096-sized problems, so every
pointer, size and stride is divisible by 16 and the unit strides are the constant 1 on both sides.
The main loop is the loop with the most wgmma (``HGMMA``, ``QGMMA``, ``IGMMA``). Per kernel the
table gives, Tritium / Triton:
the loop's instructions and each class of them (see ``CLASSES``), then the whole kernel's
instructions, registers, spill instructions and the epilogue's global stores and conversions.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from kernel_files import load_kernels  # noqa: E402


# ---- the kernels ---------------------------------------------------------------------------------

@dataclass
class Spec:
    name: str
    fn: str
    signature: dict
    constexprs: dict
    num_warps: int
    num_stages: int
    source: str = "matmul_kernels.py"


_MM_INTS = ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")


def _mm(name, dtype, out, bm, bn, bk, warps, stages, k_major_b=False) -> Spec:
    sig = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{out}"}
    sig.update({n: "i32" for n in _MM_INTS})
    consts = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8, "ACC_INT": False}
    # the unit strides are the constant 1 (both compilers specialise an integer argument equal to 1)
    for k in ("stride_ak", "stride_bk" if k_major_b else "stride_bn", "stride_cn"):
        sig.pop(k)
        consts[k] = 1
    return Spec(name, "matmul_kernel", sig, consts, warps, stages)


def _attn(name, dtype, d, bm, bn, warps, stages) -> Spec:
    names = ["Q", "K", "V", "sm_scale", "Out", "stride_qz", "stride_qh", "stride_qm", "stride_qk", "stride_kz",
             "stride_kh", "stride_kn", "stride_kk", "stride_vz", "stride_vh", "stride_vk", "stride_vn", "stride_oz",
             "stride_oh", "stride_om", "stride_on", "H", "N_CTX"]
    fp8 = dtype.startswith("fp8")
    sig = {n: ("fp32" if n == "sm_scale" else f"*{dtype}" if n in ("Q", "K", "V", "Out") else "i32") for n in names}
    if fp8:  # fp16 output; V stored [d, N] (the second dot's B K-contiguous), as bench_matmul's fp8 rows
        sig["Out"] = "*fp16"
    consts = {"HEAD_DIM": d, "BLOCK_M": bm, "BLOCK_N": bn, "CAUSAL": False}
    for k in ("stride_qk", "stride_kk", "stride_vk" if fp8 else "stride_vn", "stride_on"):
        sig.pop(k)
        consts[k] = 1
    return Spec(name, "attn_fwd", sig, consts, warps, stages)


def _attn_bwd(name, fn, d, bm, bn, warps, stages) -> Spec:
    outs = ("DK", "DV") if fn == "attn_bwd_dkdv" else ("DQ",)
    sig = {n: "*fp16" for n in ("Q", "K", "V", "DO")}
    sig.update(LSE="*fp32", Delta="*fp32", **{o: "*fp16" for o in outs}, sm_scale="fp32", N_CTX="i32")
    return Spec(name, fn, sig, {"HEAD_DIM": d, "BLOCK_M": bm, "BLOCK_N": bn, "CAUSAL": False}, warps, stages)


def _persistent(name, fn, warps=8, stages=3) -> Spec:
    """bench/persistent_kernels.py as bench_persistent.py launches it at 4096^3 (132 SMs)."""
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_bn": "i32", "stride_cm": "i32"}
    consts = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "NUM_SMS": 132}
    return Spec(name, fn, sig, consts, warps, stages, "persistent_kernels.py")


def _splitk(name, bm, bn, bk, split, warps, stages) -> Spec:
    """bench/splitk_kernels.py: partial sums added into an fp32 C with tl.atomic_add."""
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
    consts = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "SPLIT_K": split}
    return Spec(name, "matmul_splitk", sig, consts, warps, stages, "splitk_kernels.py")


def _streamk(name, bm, bn, bk, warps, stages) -> Spec:
    """bench/splitk_kernels.py's stream-K: runs of K steps per program, whole tiles stored, pieces added."""
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32", "per_program": "i32", "extra": "i32"}
    consts = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}
    return Spec(name, "matmul_streamk", sig, consts, warps, stages, "splitk_kernels.py")


SPECS = [
    _mm("mm-fp16-128x256x64-w8s3", "fp16", "fp16", 128, 256, 64, 8, 3),
    _mm("mm-fp16-128x128x64-w4s4", "fp16", "fp16", 128, 128, 64, 4, 4),
    _mm("mm-fp16-128x128x64-w8s3", "fp16", "fp16", 128, 128, 64, 8, 3),
    _mm("mm-fp16-64x256x32-w4s4", "fp16", "fp16", 64, 256, 32, 4, 4),    # the tutorial list's BK=32 configs
    _mm("mm-fp16-128x128x32-w4s4", "fp16", "fp16", 128, 128, 32, 4, 4),
    _mm("mm-bf16-128x256x64-w8s3", "bf16", "bf16", 128, 256, 64, 8, 3),
    _mm("mm-bf16-128x256x64-w8s4", "bf16", "bf16", 128, 256, 64, 8, 4),
    _mm("mm-fp8e4-128x256x128-w8s3", "fp8e4nv", "fp16", 128, 256, 128, 8, 3, k_major_b=True),
    _mm("mm-tf32-128x128x32-w4s4", "fp32", "fp32", 128, 128, 32, 4, 4),
    _mm("mm-tf32-128x256x32-w8s3", "fp32", "fp32", 128, 256, 32, 8, 3),  # B N-contiguous: 4-byte copies
    _mm("mm-tf32-kb-128x256x32-w8s3", "fp32", "fp32", 128, 256, 32, 8, 3, k_major_b=True),  # bench_matmul's
    _attn("attn-fp16-d64", "fp16", 64, 128, 64, 4, 3),
    _attn("attn-fp16-d128", "fp16", 128, 128, 64, 4, 3),
    _attn("attn-fp16-d64-m64", "fp16", 64, 64, 64, 4, 3),   # the config both sides pick in bench_matmul
    _attn("attn-fp16-d128-m64", "fp16", 128, 64, 64, 4, 3),
    _attn("attn-fp16-d128-m128-w8", "fp16", 128, 128, 64, 8, 3),
    _attn("attn-fp8e4-d64-m64", "fp8e4nv", 64, 64, 64, 4, 3),   # the fp8 rows' chosen config
    _attn("attn-fp8e4-d128-m64", "fp8e4nv", 128, 64, 64, 4, 3),
    _attn_bwd("attn-bwd-dkdv-d64", "attn_bwd_dkdv", 64, 64, 64, 4, 3),
    _attn_bwd("attn-bwd-dq-d64", "attn_bwd_dq", 64, 64, 64, 4, 3),
    _attn_bwd("attn-bwd-dkdv-d128", "attn_bwd_dkdv", 128, 64, 64, 4, 3),
    _attn_bwd("attn-bwd-dq-d128", "attn_bwd_dq", 128, 64, 64, 4, 3),
    _persistent("pm-plain", "persistent_plain"),
    _persistent("pm-block-ptr", "persistent_block_ptr"),
    _splitk("splitk-fp16-128x128x64-s4", 128, 128, 64, 4, 4, 4),
    _streamk("streamk-fp16-128x128x64", 128, 128, 64, 4, 3),
]


def _divisible(spec: Spec) -> list[str]:
    """Every pointer and every integer argument (4096-sized problems): divisibility 16."""
    return [n for n, t in spec.signature.items() if t.startswith("*") or t == "i32"]


# ---- compiling -----------------------------------------------------------------------------------

def compile_tritium(spec: Spec) -> bytes:
    import tritium
    import tritium.language as tl
    mod = load_kernels("_sass_tritium_" + spec.source[:-3], tritium, tl, spec.source)
    attrs = {n: {"tt.divisibility": 16} for n in _divisible(spec)}
    k = tritium.compile(getattr(mod, spec.fn), target="cuda:90", signature=spec.signature,
                        constexprs=spec.constexprs, attrs=attrs, num_warps=spec.num_warps,
                        num_stages=spec.num_stages)
    return k.asm["cubin"]


def compile_triton(spec: Spec) -> bytes:
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    mod = load_kernels("_sass_triton_" + spec.source[:-3], triton, tl, spec.source)
    fn = getattr(mod, spec.fn)
    sig = dict(spec.signature, **{c: "constexpr" for c in spec.constexprs})
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in _divisible(spec)}
    k = triton.compile(ASTSource(fn, sig, spec.constexprs, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": spec.num_warps, "num_stages": spec.num_stages})
    return k.asm["cubin"]


def _tool(name: str) -> str:
    import triton
    path = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{name} not found in the Triton wheel ({path})")
    return path


def disassemble(cubin: bytes) -> tuple[str, str]:
    """(nvdisasm text with labels, cuobjdump's resource usage line) of one cubin."""
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
        path = f.name
    try:
        sass = subprocess.run([_tool("nvdisasm"), "-c", "-hex", path], capture_output=True, text=True,
                              check=True).stdout
        res = subprocess.run([_tool("cuobjdump"), "-res-usage", path], capture_output=True, text=True,
                             check=True).stdout
    finally:
        os.unlink(path)
    return sass, res


# ---- the counts ----------------------------------------------------------------------------------

_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
# one instruction: optional predicate, opcode (with its modifiers), operands
_INSTR = re.compile(r"^\s*(?:/\*[0-9a-f]+\*/\s*)?(@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)\s*([^;]*);")
_BRANCH = re.compile(r"\bBRA\b.*?(\.L_x_\d+)")

_GMMA = ("HGMMA", "QGMMA", "IGMMA", "BGMMA")  # wgmma: fp16/bf16/tf32, fp8, int8, binary

#: instruction classes, first match wins: (heading, test on the opcode)
CLASSES = [
    ("GMMA", lambda op: op.startswith(_GMMA)),
    ("wg.arrive", lambda op: op.startswith("WARPGROUP.ARRIVE")),
    ("wg.depbar", lambda op: op.startswith("WARPGROUP.DEPBAR")),
    ("wg.other", lambda op: op.startswith("WARPGROUP") or op.startswith("WARPSYNC")),
    ("LDGSTS", lambda op: op.startswith("LDGSTS")),
    ("LDGDEPBAR", lambda op: op.startswith("LDGDEPBAR")),
    ("DEPBAR", lambda op: op.startswith("DEPBAR")),
    ("BAR", lambda op: op.startswith(("BAR.", "BAR ")) or op == "BAR"),
    ("MEMBAR/FENCE", lambda op: op.startswith(("MEMBAR", "FENCE"))),
    ("R2UR", lambda op: op.startswith("R2UR")),
    ("uniform", lambda op: op.startswith("U") and not op.startswith("UNDEF")),
    ("int addr", lambda op: op.split(".")[0] in ("IADD3", "IMAD", "LEA", "LOP3", "SHF", "IABS", "IMNMX",
                                                 "VIADD", "IADD", "SGXT", "BMSK", "LEA.HI", "PRMT",
                                                 "IMAD.WIDE", "VIMNMX")),
    ("ISETP/SEL", lambda op: op.split(".")[0] in ("ISETP", "SEL", "PLOP3", "P2R", "R2P", "FSEL")),
    ("MOV", lambda op: op.split(".")[0] in ("MOV", "MOV32I", "S2R", "S2UR", "CS2R")),
    ("LDS/STS/LDSM", lambda op: op.split(".")[0] in ("LDS", "STS", "LDSM", "STSM")),
    ("FP", lambda op: op.split(".")[0] in ("FMUL", "FADD", "FFMA", "FMNMX", "MUFU", "FSETP", "HADD2", "HMUL2",
                                           "HFMA2", "F2FP", "F2F", "FSWZADD", "SHFL")),
    ("branch", lambda op: op.split(".")[0] in ("BRA", "EXIT", "BSYNC", "BSSY", "NOP", "YIELD", "RET")),
]


def classify(op: str) -> str:
    return next((name for name, test in CLASSES if test(op)), "other")


@dataclass
class Stats:
    instructions: int
    loop: Counter                  # class -> count in the main loop (+ "total", "opcodes")
    loop_opcodes: Counter          # full opcode -> count in the main loop
    hgmma_shapes: Counter
    regs: int | None
    spills: int                    # STL + LDL in the whole kernel
    stores: Counter                # global stores by opcode
    conversions: int               # F2FP / F2F in the whole kernel
    bars: int                      # BAR.* in the whole kernel


def _parse(sass: str) -> list[tuple[str | None, str, str]]:
    """(label or None, opcode, operands) per line of the kernel's text section."""
    out = []
    for line in sass.splitlines():
        lab = _LABEL.match(line)
        if lab:
            out.append((lab.group(1), "", ""))
            continue
        m = _INSTR.match(line)
        if m:
            out.append((None, m.group(2), m.group(3)))
    return out


def count(sass: str, res: str) -> Stats:
    lines = _parse(sass)
    labels: dict[str, int] = {}
    loops: list[tuple[int, int]] = []
    instrs = []
    for i, (lab, op, args) in enumerate(lines):
        if lab:
            labels[lab] = i
            continue
        instrs.append(op)
        if op == "BRA":
            t = _BRANCH.search("BRA " + args)
            if t and t.group(1) in labels:  # a branch back to a label above: a loop
                loops.append((labels[t.group(1)], i))

    def ops_in(lo, hi):
        return [op for lab, op, _ in lines[lo:hi + 1] if not lab]

    body: list[str] = []
    if loops:
        body = max((ops_in(lo, hi) for lo, hi in loops),
                   key=lambda ops: (sum(o.startswith(_GMMA) for o in ops), len(ops)))
    loop = Counter(classify(op) for op in body)
    loop["total"] = len(body)
    shapes = Counter(op.split(".")[1] for op in body if op.startswith(_GMMA))
    m = re.search(r"REG:(\d+)", res)
    return Stats(
        instructions=len(instrs), loop=loop, loop_opcodes=Counter(body), hgmma_shapes=shapes,
        regs=int(m.group(1)) if m else None,
        spills=sum(op.startswith(("STL", "LDL")) for op in instrs),
        stores=Counter(op for op in instrs if op.startswith(("STG", "ST.E", "STS"))),
        conversions=sum(op.startswith(("F2FP", "F2F.")) for op in instrs),
        bars=sum(op.startswith("BAR") for op in instrs))


# ---- the table -----------------------------------------------------------------------------------

def _short(c: Counter) -> str:
    return " ".join(f"{k}:{v}" for k, v in sorted(c.items())) or "-"


COLUMNS = [("loop", lambda s: s.loop["total"])] + [
    (name, (lambda n: lambda s: s.loop[n])(name)) for name, _ in CLASSES if name not in ("branch",)] + [
    ("loop other", lambda s: s.loop["other"]),
    ("GMMA shape", lambda s: _short(s.hgmma_shapes)),
    ("kernel", lambda s: s.instructions),
    ("regs", lambda s: s.regs),
    ("spills", lambda s: s.spills),
    ("bar (kernel)", lambda s: s.bars),
    ("cvt (kernel)", lambda s: s.conversions),
    ("stores", lambda s: _short(s.stores)),
]


def table(rows: list[tuple[str, Stats, Stats]]) -> str:
    """Transposed (one column per kernel, cells Tritium / Triton): the classes are many, kernels few."""
    head = ["class"] + [name for name, _, _ in rows]
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for heading, f in COLUMNS:
        out.append("| " + " | ".join([heading] + [f"{f(t)} / {f(r)}" for _, t, r in rows]) + " |")
    return "\n".join(out)


def opcode_diff(t: Stats, r: Stats, top: int = 25) -> str:
    """The opcodes whose main-loop count differs most between the two (Tritium - Triton)."""
    keys = set(t.loop_opcodes) | set(r.loop_opcodes)
    diffs = sorted(keys, key=lambda k: (-abs(t.loop_opcodes[k] - r.loop_opcodes[k]), k))
    return ", ".join(f"{k} {t.loop_opcodes[k]}/{r.loop_opcodes[k]}" for k in diffs[:top]
                     if t.loop_opcodes[k] != r.loop_opcodes[k])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", default="", help="comma-separated names or prefixes (default: all)")
    ap.add_argument("--dump", default="", help="write each side's SASS to this folder")
    ap.add_argument("--diff", action="store_true", help="also list the main-loop opcodes that differ")
    args = ap.parse_args(argv)
    os.environ.setdefault("TRITIUM_CACHE_DIR", tempfile.mkdtemp(prefix="tritium-sass-compare-"))
    try:
        import triton  # noqa: F401
    except ImportError:
        print("Triton is not importable: pip install triton==3.6.0 (its wheel brings nvdisasm)")
        return 2
    wanted = [k for k in args.kernels.split(",") if k]
    chosen = [s for s in SPECS if not wanted or any(s.name.startswith(w) for w in wanted)]
    rows, failures = [], 0
    for spec in chosen:
        try:
            t = disassemble(compile_tritium(spec))
        except Exception as exc:  # report and go on: one kernel must not hide the others
            print(f"{spec.name}: Tritium failed: {type(exc).__name__}: {str(exc)[:300]}")
            failures += 1
            continue
        r = disassemble(compile_triton(spec))
        if args.dump:
            os.makedirs(args.dump, exist_ok=True)
            for side, (sass, _) in (("tritium", t), ("triton", r)):
                with open(os.path.join(args.dump, f"{spec.name}.{side}.sass"), "w") as f:
                    f.write(sass)
        rows.append((spec.name, count(*t), count(*r)))
    print("sm_90 SASS, Tritium / Triton 3.6; main loop = the loop with the most HGMMA/QGMMA\n")
    print(table(rows))
    if args.diff:
        print()
        for name, t, r in rows:
            print(f"{name}: {opcode_diff(t, r)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
