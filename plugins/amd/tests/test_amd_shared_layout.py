"""The LDS layout of MFMA/WMMA operands (``tritium_amd.passes.shared_layout``): the swizzled placement is a
bijection whose bit map (what the lowering computes addresses with) agrees with the encoding's
element formula, a tensor written from the global-load layout and read back in the ``dot_op``
layout arrives whole, each lane's K run is one vector access, and the swizzle spreads one read
over the banks; then the compiled fp16 matmul's loop reads its operands with 64-bit LDS reads."""
import importlib.util
import itertools
import os
import re
import sys

import numpy as np
import pytest
from xdsl.dialects.builtin import IntegerType, TensorType, f16, f32

from tritium.ttgir.encodings import BlockedEncodingAttr, DotOperandEncodingAttr, SwizzledSharedEncodingAttr
from tritium_amd.passes.instructions import _MFMA, _WMMA, warps_per_cta
from tritium_amd.passes.shared_layout import operand_shared_encoding

from test_amd_layouts import encoding

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
INSTRS = {"mfma32_f16": _MFMA[("cdna3", "f16")][0], "mfma16_f16": _MFMA[("cdna3", "f16")][1],
          "mfma32_i8": _MFMA[("cdna3", "i8")][0], "mfma16_i8": _MFMA[("cdna3", "i8")][1],
          "wmma_f16": _WMMA["f16"], "wmma_i8": _WMMA["i8"]}
SHAPES = [(128, 128, 64), (64, 64, 32), (32, 128, 128), (128, 64, 16)]


def operand_types(ins, m, n, k, num_warps):
    enc = encoding(ins, warps_per_cta(num_warps, m, n, ins))
    ety = f16 if ins.a_type == "f16" else IntegerType(8)
    return (TensorType(ety, [m, k], DotOperandEncodingAttr(0, enc, ins.k_width)),
            TensorType(ety, [k, n], DotOperandEncodingAttr(1, enc, ins.k_width)))


def cases():
    for name, (m, n, k), w in itertools.product(sorted(INSTRS), SHAPES, (4, 8)):
        ins = INSTRS[name]
        if m % ins.m or n % ins.n or k % ins.k:
            continue
        for op_idx in (0, 1):
            yield pytest.param(name, (m, n, k), w, op_idx, id=f"{name}-{m}x{n}x{k}-w{w}-op{op_idx}")


def _xor_map(bases, coords):
    out = 0
    for d, c in enumerate(coords):
        for bit, v in enumerate(bases[d]):
            if c >> bit & 1:
                out ^= v
    return out


@pytest.mark.parametrize("name, mnk, num_warps, op_idx", list(cases()))
def test_operand_layout_round_trips(name, mnk, num_warps, op_idx):
    ins = INSTRS[name]
    t = operand_types(ins, *mnk, num_warps)[op_idx]
    enc = operand_shared_encoding(t)
    assert enc is not None
    shape = t.get_shape()
    ebytes = 2 if ins.a_type == "f16" else 1
    k_dim = 1 - op_idx
    assert enc.order == (k_dim, 1 - k_dim)  # K fastest for both operands
    bases = enc.byte_bases(shape, ebytes)
    coords = list(itertools.product(*(range(s) for s in shape)))
    offs = np.array([_xor_map(bases, c) for c in coords])
    # the bit map is the encoding's formula, and a bijection onto the buffer's element slots
    assert list(offs) == [enc.offset(c, shape) * ebytes for c in coords]
    assert sorted(offs) == list(range(0, len(coords) * ebytes, ebytes))
    # written from a blocked (global-load) layout, read back in the dot_op layout
    data = np.random.default_rng(7).permutation(len(coords))
    value = dict(zip(coords, data))
    lds = np.full(len(coords) * ebytes, -1)
    src = BlockedEncodingAttr([1, 4], [8, 64 // 8 if ins.kind == "mfma" else 4], [num_warps, 1], [1, 0]) \
        .linear_layout(shape)
    for c in map(tuple, src.table().reshape(-1, 2)):
        lds[_xor_map(bases, c)] = value[c]
    dst = t.encoding.linear_layout(shape)
    tab = dst.table()
    got = np.vectorize(lambda i, j: lds[_xor_map(bases, (i, j))])(tab[..., 0], tab[..., 1])
    want = np.vectorize(lambda i, j: value[(i, j)])(tab[..., 0], tab[..., 1])
    np.testing.assert_array_equal(got, want)
    # each lane's K run: consecutive registers at consecutive bytes, one access of vec elements
    vec = enc.vec.data
    assert vec == min(ins.k_width, 16 // ebytes)
    for r in range(vec.bit_length() - 1):
        assert _xor_map(bases, dst.register[r]) == (1 << r) * ebytes


@pytest.mark.parametrize("op_idx", [0, 1])
def test_swizzle_spreads_a_read_over_the_banks(op_idx):
    """16 lanes of one ds_read_b64 of the 128x128x64 fp16 matmul's operand (32x32x8 MFMA) touch
    all 32 banks with the swizzle; without it they all hit the same two."""
    ins = INSTRS["mfma32_f16"]
    t = operand_types(ins, 128, 128, 64, 4)[op_idx]
    enc = operand_shared_encoding(t)
    shape = t.get_shape()
    plain = SwizzledSharedEncodingAttr(enc.vec.data, 1, 1, enc.order)
    tab = t.encoding.linear_layout(shape).table()   # [warp, lane, register] -> coords

    def banks(e):
        bases = e.byte_bases(shape, 2)
        words = set()
        for lane in range(16):
            off = _xor_map(bases, tuple(tab[0, lane, 0]))
            words |= {(off // 4 + i) % 32 for i in range(2)}
        return len(words)

    assert banks(enc) == 32 and banks(plain) == 2


def test_no_layout_for_other_operands():
    blocked = BlockedEncodingAttr([1, 1], [1, 64], [4, 1], [1, 0])
    assert operand_shared_encoding(TensorType(f32, [64, 64], blocked)) is None


def test_nonlinear_swizzle_is_refused():
    enc = SwizzledSharedEncodingAttr(4, 1, 32, (1, 0))
    assert not enc.is_linear((64, 64))   # 4 * 32 elements of swizzle in a 64-element row
    with pytest.raises(ValueError, match="not a bit map"):
        enc.byte_bases((64, 64), 2)


# --- the compiled matmul -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def avt():
    spec = importlib.util.spec_from_file_location("amd_vs_triton", os.path.join(ROOT, "bench", "amd_vs_triton.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["amd_vs_triton"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("kernel", ["matmul", "matmul-hints"])
def test_matmul_loop_reads_operands_in_64_bit(avt, kernel, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    spec = next(s for s in avt.specs() if s.name == kernel)
    asm, _ = avt.compile_tritium(spec, "hip:gfx942")
    loop = avt.main_loop(asm)
    reads = [m for m in loop if m.startswith("ds_read")]
    assert sum(m.startswith("v_mfma") for m in loop) == 32
    # 2 operands x 8 K steps of 8-byte runs per lane, paired by LLVM (ds_read2*_b64): 16 reads
    assert reads and all(m.endswith(("_b64", "_b128")) for m in reads), reads
    assert len(reads) <= 16
    assert not any(m.startswith(("ds_read_u16", "ds_read_u8")) for m in loop)
    # the accumulator is stored from its MFMA layout (optimize-epilogue): no LDS reads outside the
    # loop, and no waits for them before each predicated store
    st = avt.count(asm)
    assert sum(st.lds_reads.values()) == len(reads)
    assert st.waitcnt <= 18 and st.barrier <= 4


# --- the lowering, run on the host SIMT emulator -------------------------------------------------
@pytest.mark.parametrize("case_id", [
    "ir_files/amd-convert-blocked-to-amd_dot_a32-64x64-fp16",
    "ir_files/amd-convert-blocked-to-amd_dot_b32-64x64-bf16",
    "ir_files/amd-convert-blocked_4x4-to-amd_dot_b32-64x64-fp16",   # K runs in the second register dim
    "ir_files/amd-convert-blocked_t-to-amd_dot_b16-64x64-int8",
    "ir_files/amd-convert-amd_mfma32-to-amd_dot_a32-64x64-fp16",
])
def test_operand_conversion_through_swizzled_lds_on_host_simt(case_id, monkeypatch):
    """The core's conversion lowering with AMD's placement (vector accesses, swizzled addresses
    split into XOR and immediate parts), executed one OS thread per lane: every element arrives."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "conversion"))
    import simt
    import test_layouts_simt
    from conformance.cases import ir_files
    chosen = []

    def placement(self, src_t, dst_t):
        chosen.append(operand_shared_encoding(dst_t))
        return chosen[-1]

    monkeypatch.setattr(simt.HostSIMTTarget, "convert_scratch_encoding", placement, raising=False)
    case = {c.id: c for c in ir_files.CASES}[case_id]
    assert test_layouts_simt._run(case, case.kernel.warp_size, seed=3) is None
    assert chosen and chosen[0] is not None and chosen[0].maxPhase.data > 1


def test_attention_stays_in_registers_between_its_dots(avt, tmp_path, monkeypatch):
    """Attention forward (fp16, d64) on gfx942: both dots on transposed 32x32 MFMA tiles with every
    wavefront on its own rows, so P feeds the second dot without LDS and the row statistics need
    one cross-lane step; the operands' LDS reads are 64-bit and the writes vectors."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    spec = next(s for s in avt.specs() if s.name == "attention-fp16-d64")
    import tritium
    import tritium.language as tl
    from kernel_files import load_kernels
    mod = load_kernels("_tritium_attention_test", tritium, tl, spec.file)
    k = tritium.compile(getattr(mod, spec.fn), target="hip:gfx942", signature=spec.signature,
                        constexprs=spec.constexprs, attrs={n: {"tt.divisibility": 16} for n in spec.hints},
                        num_warps=4, num_stages=2)
    mfma = {ln.split("#ttg.amd_mfma", 1)[1].split(">", 1)[0] for ln in k.asm["ttgir"].splitlines()
            if "tt.dot " in ln}
    assert mfma and all("warpsPerCTA = [4, 1]" in m and "isTransposed = true" in m for m in mfma), mfma
    loop = avt.main_loop(k.asm["amdgcn"])
    assert sum(m.startswith("v_mfma") for m in loop) == 32
    reads = [m for m in loop if m.startswith("ds_read")]
    writes = [m for m in loop if m.startswith("ds_write")]
    assert reads and all(m.endswith("_b64") for m in reads), reads
    assert writes and not any(m.startswith(("ds_write_b16", "ds_write_b8")) for m in writes), writes
    assert sum(m.startswith(("ds_swizzle", "ds_bpermute")) for m in loop) <= 4
    assert loop.count("s_barrier") <= 4 and loop.count("s_waitcnt") <= 30


def _compile_spec(avt, name, target):
    spec = next(s for s in avt.specs() if s.name == name)
    import tritium
    import tritium.language as tl
    from kernel_files import load_kernels
    mod = load_kernels(f"_tritium_{name.replace('-', '_')}_test", tritium, tl, spec.file)
    return tritium.compile(getattr(mod, spec.fn), target=target, signature=spec.signature,
                           constexprs=spec.constexprs, attrs={n: {"tt.divisibility": 16} for n in spec.hints},
                           num_warps=spec.num_warps, num_stages=spec.num_stages)


@pytest.mark.parametrize("name, tiles", [("attention-fp16-d64", 64 * 64 * 2 * 2),
                                         ("attention-fp16-d128", 64 * 128 * 2 * 2)])
def test_rdna3_attention_moves_p_between_wavefront_halves(avt, name, tiles, tmp_path, monkeypatch):
    """Attention on gfx1100: the WMMA accumulators are transposed (a lane holds every other column
    of a row), so P reaches the second dot's A operand by swapping the wavefront's halves
    (v_permlanex16) instead of a round trip through LDS, and Q's one conversion into its operand
    takes its unpadded bytes: the LDS is the K and V tiles alone, as Triton's."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = _compile_spec(avt, name, "hip:gfx1100")
    wmma = {ln.split("#ttg.amd_wmma", 1)[1].split(">", 1)[0] for ln in k.asm["ttgir"].splitlines()
            if "tt.dot " in ln}
    assert wmma and all("isTranspose = true" in w for w in wmma), wmma
    assert k.metadata["shared"] == tiles
    loop = avt.main_loop(k.asm["amdgcn"])
    assert sum(m.startswith("v_wmma") for m in loop) == (64 if "d64" in name else 128)
    assert "v_permlanex16_b32" in loop
    writes = [m for m in loop if m.startswith("ds_store")]
    assert writes and not any(m.startswith(("ds_store_b16", "ds_store_b8")) for m in writes), writes
    assert not any(m.startswith(("ds_swizzle", "ds_bpermute")) for m in loop)


def test_unhinted_loads_keep_the_straight_path(avt, tmp_path, monkeypatch):
    """The unhinted matmul's 64 masked 16-bit loads a K step (runtime strides: no buffer form) are
    branches around each load; the branch says the load usually happens, so LLVM keeps the load
    on the straight path and each uniform mask costs one compare and one branch (before: the loads
    out of line, a compare and a branch on both sides)."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = _compile_spec(avt, "matmul", "hip:gfx942")
    assert re.search(r'!\{ ?!"branch_weights", i32 1024, i32 1 ?\}', k.asm["llir"])
    loop = avt.main_loop(k.asm["amdgcn"])
    loads = sum(m.startswith("global_load") for m in loop)
    assert loads == 64
    assert sum(m.startswith("s_cmp") for m in loop) <= loads // 2 + 4
    assert len(loop) <= 500


def test_scalar_operand_loads_still_write_k_runs(avt, tmp_path, monkeypatch):
    """Without divisibility hints every global load is one 16-bit element, and the B operands (the
    matmul's B, attention's V) walk N: with one element a thread, each would be its own 16-bit
    write to the K-contiguous LDS tile. The in-thread transpose gives each thread 4 K rows of its
    column instead (the same scalar loads, as many), written as one ``ds_write_b64``."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    for name, b64 in (("matmul", 8), ("attention-fp16-d128-nohints", 8)):  # whole kernel: prologue + loop
        spec = next(s for s in avt.specs() if s.name == name)
        asm, _ = avt.compile_tritium(spec, "hip:gfx942")
        st = avt.count(asm)
        assert set(st.global_loads) == {"ushort"}, (name, st.global_loads)
        assert st.lds_writes.get("b64", 0) == b64, (name, st.lds_writes)
        # every loaded element written once: the other operand's still one at a time
        assert st.lds_writes["b16"] + 4 * b64 == sum(st.global_loads.values()), (name, st.lds_writes)


@pytest.mark.parametrize("wmma", [False, True])
def test_placed_operand_fits_the_unpadded_scratch(wmma):
    """The AMD scratch rule gives an operand conversion the lowering places swizzled
    (``convert_scratch_encoding``) the tensor's own bytes, not the core's padded rows: every address
    the placement can form stays below them."""
    from xdsl.dialects.builtin import IntegerType
    from tritium_amd.passes.encodings import AMDMfmaEncodingAttr, AMDWmmaEncodingAttr
    parent = AMDWmmaEncodingAttr(1, [4, 1], True) if wmma else AMDMfmaEncodingAttr(3, [4, 1], [32, 32], True)
    checked = 0
    for op_idx in (0, 1):
        for ety, ebytes, kw in ((f16, 2, 16 if wmma else 4), (IntegerType(8), 1, 16 if wmma else 8),
                                (f32, 4, 16 if wmma else 2)):
            for shape in ((128, 64), (64, 128), (128, 128), (32, 64), (256, 32)):
                enc = operand_shared_encoding(TensorType(ety, shape, DotOperandEncodingAttr(op_idx, parent, kw)))
                if enc is None:
                    continue
                top = 0
                for dim in enc.byte_bases(shape, ebytes):
                    for v in dim:
                        top |= v
                assert top + ebytes <= shape[0] * shape[1] * ebytes, (op_idx, ety, shape)
                checked += 1
    assert checked >= 20
