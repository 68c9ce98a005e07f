"""CPU-only: which tensor-core instruction a ``tl.dot`` becomes, per target, dtypes, tile, warps,
operand major order and rank, against Triton's own choice (``AccelerateMatmul``: wgmma on sm_90 for
2-D dots with M % 64 == 0, N % 8 == 0, num_warps % 4 == 0 and K of at least one instruction, for
fp16/bf16/tf32/int8/fp8 operands and fp16 accumulators; mma.sync for everything else, batched dots
included; FMA for exact fp32) and the PTX its test suite asserts (int8 mma.sync saturates)."""
import re

import pytest

import tritium
import tritium.language as tl

D = {"tt.divisibility": 16}


@tritium.jit
def one_dot_kernel(x_ptr, sxm, sxk, y_ptr, syk, syn, w_ptr, z_ptr, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr, PRECISION: tl.constexpr, CHAIN: tl.constexpr, OUT: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    x = tl.load(x_ptr + rm[:, None] * sxm + rk[None, :] * sxk)
    y = tl.load(y_ptr + rk[:, None] * syk + rn[None, :] * syn)
    z = tl.dot(x, y, input_precision=PRECISION, out_dtype=OUT)
    if CHAIN:  # a second dot fed by the first one's result, in registers
        w = tl.load(w_ptr + rn[:, None] * BN + rn[None, :])
        z = tl.dot(z.to(w.dtype), w, input_precision=PRECISION, out_dtype=OUT)
    tl.store(z_ptr + rm[:, None] * BN + rn[None, :], z)


@tritium.jit
def batched_dot_kernel(x_ptr, y_ptr, z_ptr, BB: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr, PRECISION: tl.constexpr, OUT: tl.constexpr):
    rb = tl.arange(0, BB)[:, None, None]
    rm = tl.arange(0, BM)[None, :, None]
    rn = tl.arange(0, BN)[None, None, :]
    rk = tl.arange(0, BK)
    x = tl.load(x_ptr + rb * (BM * BK) + rm * BK + rk[None, None, :])
    y = tl.load(y_ptr + rb * (BK * BN) + rk[None, :, None] * BN + rn)
    tl.store(z_ptr + rb * (BM * BN) + rm * BN + rn, tl.dot(x, y, input_precision=PRECISION, out_dtype=OUT))


_PTR = {"fp16": "*fp16", "bf16": "*bf16", "fp32": "*fp32", "int8": "*i8", "fp8e5": "*fp8e5", "fp8e4nv": "*fp8e4nv"}
_OUT = {"fp16": tl.float16, "fp32": tl.float32, "int32": tl.int32}


def _compile(target, in_t, out_t, m, n, k, warps, precision="ieee", col_a=False, col_b=False, chain=False,
             z_t=None):
    sig = {"x_ptr": _PTR[in_t], "y_ptr": _PTR[in_t], "w_ptr": _PTR[in_t], "z_ptr": z_t or ("*i32" if out_t == "int32" else
                                                                                      "*" + out_t)}
    strides = {"sxm": 1 if col_a else k, "sxk": m if col_a else 1, "syk": 1 if col_b else n, "syn": k if col_b else 1}
    cx = {name: 1 for name, v in strides.items() if v == 1}
    sig.update({name: "i32" for name, v in strides.items() if v != 1})
    attrs = {name: D for name in sig}
    cx.update(BM=m, BN=n, BK=k, PRECISION=precision, CHAIN=chain, OUT=_OUT[out_t])
    return tritium.compile(one_dot_kernel, target=target, signature=sig, constexprs=cx, attrs=attrs,
                           num_warps=warps, stage="ptx")


def _instructions(ptx: str) -> set:
    return set(re.findall(r"(wgmma\.mma_async\S+|mma\.sync\S+)", ptx))


# (in, out, M, N, K, warps, precision, col_a, col_b) -> the instruction sm_90 must use
SM90 = [
    # fp16 accumulators: wgmma .f16 where Triton takes v3, mma.sync .f16 elsewhere
    (("fp16", "fp16", 64, 64, 64, 4), "wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16"),
    (("fp16", "fp16", 128, 256, 32, 8), "wgmma.mma_async.sync.aligned.m64n256k16.f16.f16.f16"),
    (("fp16", "fp16", 128, 128, 64, 4, "ieee", True, True), "wgmma.mma_async.sync.aligned.m64n128k16.f16.f16.f16"),
    (("fp16", "fp16", 32, 32, 32, 4), "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"),
    (("fp16", "fp16", 128, 128, 64, 2), "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"),
    # int8: wgmma whatever the operands' major order (transposed through shared memory)
    (("int8", "int32", 128, 128, 64, 4), "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8"),
    (("int8", "int32", 64, 128, 128, 4, "ieee", True, False), "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8"),
    (("int8", "int32", 128, 16, 32, 4, "ieee", True, True), "wgmma.mma_async.sync.aligned.m64n16k32.s32.s8.s8"),
    (("int8", "int32", 32, 128, 64, 4), "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"),
    (("int8", "int32", 64, 64, 32, 2), "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"),
    # tf32 from fp32 operands, either major order; tf32x3 too (three dots)
    (("fp32", "fp32", 64, 64, 64, 4, "tf32"), "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"),
    (("fp32", "fp32", 128, 16, 32, 4, "tf32", True, False), "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32"),
    (("fp32", "fp32", 64, 64, 64, 4, "tf32x3"), "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"),
    (("fp32", "fp32", 32, 32, 32, 4, "tf32x3"), "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
    # M = 64 rows for one warpgroup of 4 warps, and 16-bit operands in either order
    (("fp16", "fp32", 64, 128, 128, 4, "ieee", True, True), "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"),
    (("bf16", "fp32", 64, 64, 64, 4), "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"),
]


@pytest.mark.parametrize("args,instruction", SM90, ids=["-".join(map(str, a)) for a, _ in SM90])
def test_sm90_dot_takes_tritons_instruction(args, instruction, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    in_t, out_t, m, n, k, warps, *rest = args
    precision, col_a, col_b = (list(rest) + ["ieee", False, False][len(rest):])
    k_ = _compile("cuda:90", in_t, out_t, m, n, k, warps, precision, col_a, col_b)
    ptx = k_.asm["ptx"]
    assert _instructions(ptx) == {instruction}, _instructions(ptx)
    if instruction.startswith("wgmma"):
        assert "fma.rn" not in ptx
        ttgir = k_.asm["ttgir"]
        if in_t not in ("fp16", "bf16"):  # wgmma reads 8-bit and tf32 operands K-contiguous only
            assert re.search(r"memdesc<\d+x\d+x\w+, #ttg.nvmma_shared<\{[^}]*transposed = false", ttgir)
            assert re.search(r"memdesc<\d+x\d+x\w+, #ttg.nvmma_shared<\{[^}]*transposed = true", ttgir)
    if precision == "tf32x3":
        steps = (m // 64 if instruction.startswith("wgmma") else 1) * k // 8
        assert ptx.count(instruction) >= 3 * steps and "cvt.rna.tf32.f32" in ptx


@pytest.mark.parametrize("fp8,name", [("fp8e5", "e5m2"), ("fp8e4nv", "e4m3")])
def test_sm90_fp8_chained_dot_is_wgmma_and_stores_fp64_pairs(fp8, name, monkeypatch, tmp_path):
    """Triton's fp8 case: a 128x128x64 dot chained into a second one, stored to an fp64 tensor."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    ptx = _compile("cuda:90", fp8, "fp32", 128, 128, 64, 4, chain=True, z_t="*fp64").asm["ptx"]
    assert _instructions(ptx) == {f"wgmma.mma_async.sync.aligned.m64n128k32.f32.{name}.{name}"}
    assert "st.global.v2.b64" in ptx and "ld.global.v4" in ptx


def test_fp8_wgmma_respects_a_small_max_num_imprecise_acc(monkeypatch, tmp_path):
    """Triton keeps fp8 off wgmma when fp32 partial sums are asked for more often than every 32
    products; into an fp16 accumulator fp8 takes wgmma."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))

    @tritium.jit
    def kernel(x_ptr, y_ptr, z_ptr, ACC: tl.constexpr, OUT: tl.constexpr):
        r = tl.arange(0, 64)
        x = tl.load(x_ptr + r[:, None] * 64 + r[None, :])
        y = tl.load(y_ptr + r[:, None] * 64 + r[None, :])
        tl.store(z_ptr + r[:, None] * 64 + r[None, :], tl.dot(x, y, max_num_imprecise_acc=ACC, out_dtype=OUT))

    def build(acc, out, z):
        return tritium.compile(kernel, target="cuda:90", signature={"x_ptr": "*fp8e4nv", "y_ptr": "*fp8e4nv",
                                                                    "z_ptr": z},
                               constexprs={"ACC": acc, "OUT": out}, num_warps=4, stage="ptx").asm["ptx"]
    # off wgmma, mma.sync of the operands upcast to fp16 (sm_90 runs fp8 mma.sync as exactly that)
    assert _instructions(build(16, tl.float32, "*fp32")) == {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"}
    assert _instructions(build(64, tl.float32, "*fp32")) == {"wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3"}
    assert _instructions(build(None, tl.float16, "*fp16")) == {"wgmma.mma_async.sync.aligned.m64n64k32.f16.e4m3.e4m3"}


@pytest.mark.parametrize("target,in_t,m,n,k,warps,instruction", [
    # Triton 3.6's test_dot small cases and what its test asserts on sm_90
    ("cuda:90", "fp16", 2, 4, 32, 1, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    ("cuda:90", "fp8e5", 1, 2, 32, 1, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    ("cuda:90", "bf16", 8, 8, 16, 4, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
    ("cuda:90", "int8", 4, 1, 64, 2, "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"),
    ("cuda:90", "fp32", 1, 16, 16, 4, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
    ("cuda:90", "fp16", 32, 64, 32, 4, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    ("cuda:89", "fp8e4nv", 2, 16, 32, 4, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"),
    ("cuda:80", "fp16", 4, 4, 16, 1, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
])
def test_tiles_smaller_than_an_instruction_take_mma_sync(target, in_t, m, n, k, warps, instruction, monkeypatch,
                                                         tmp_path):
    """M below 16 or N below 8 (down to 1): one mma.sync a 16x8 block as Triton's, not FMA -- the
    rows and columns past the tile are copies; each instruction's inputs are read where its rows
    and columns wrap onto the tile and its copied outputs land on the registers they copy.  fp8
    operands of mma.sync are upcast to fp16 except on sm_89 (and sm_120), Triton's rule."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k_ = _compile(target, in_t, "int32" if in_t == "int8" else "fp32", m, n, k, warps,
                  precision="tf32" if in_t == "fp32" else "ieee")
    ptx = k_.asm["ptx"]
    assert _instructions(ptx) == {instruction}
    assert "fma.rn" not in ptx
    instr_k = {"int8": 32, "fp32": 8}.get(in_t, 32 if instruction.endswith("e4m3.f32") else 16)
    blocks = -(-m // 16) * -(-n // 8) * (k // instr_k)
    per_warp = blocks if m <= 16 and n <= 8 else None     # a tile inside one instruction: every warp computes it
    if per_warp is not None:
        assert ptx.count(instruction) == per_warp


def test_sm80_takes_mma_sync_with_fp16_accumulators_and_saturating_int8(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    assert _instructions(_compile("cuda:80", "fp16", "fp16", 64, 64, 64, 4).asm["ptx"]) == {
        "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"}
    assert _instructions(_compile("cuda:80", "int8", "int32", 64, 64, 64, 4).asm["ptx"]) == {
        "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"}
    ieee = _compile("cuda:90", "fp32", "fp32", 64, 64, 64, 4)
    assert not _instructions(ieee.asm["ptx"]) and "keeps fp32 exact on FMA" in ieee.asm["ttgir"]


# batched dots: Triton's mma.sync with the warps along the batch, never the fp16 FMA chain that
# rounded every product (and gave wrong fp16 results at Triton's 64x64x64 shapes)
BATCHED = [
    ("fp16", "fp16", 2, 4, "ieee", "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"),
    ("fp16", "fp16", 8, 1, "ieee", "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"),
    ("fp16", "fp32", 1, 16, "ieee", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    ("int8", "int32", 8, 4, "ieee", "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"),
    ("bf16", "fp32", 4, 2, "ieee", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
    ("fp32", "fp32", 4, 8, "tf32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
]


@pytest.mark.parametrize("target", ["cuda:90", "cuda:80"])
@pytest.mark.parametrize("in_t,out_t,bsz,warps,precision,instruction", BATCHED)
def test_batched_dot_is_mma_sync_with_warps_along_the_batch(target, in_t, out_t, bsz, warps, precision, instruction,
                                                            monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    m = n = 32
    k = 64
    k_ = tritium.compile(batched_dot_kernel, target=target,
                         signature={"x_ptr": _PTR[in_t], "y_ptr": _PTR[in_t],
                                    "z_ptr": "*i32" if out_t == "int32" else "*" + out_t},
                         constexprs={"BB": bsz, "BM": m, "BN": n, "BK": k, "PRECISION": precision, "OUT": _OUT[out_t]},
                         num_warps=warps, stage="ptx")
    ptx, ttgir = k_.asm["ptx"], k_.asm["ttgir"]
    assert _instructions(ptx) == {instruction}
    assert "fma.rn" not in ptx and "tritium.fma_reason" not in ttgir
    enc = f"#ttg.nvidia_mma<{{versionMajor = 2, versionMinor = 0, warpsPerCTA = [{warps}, 1, 1], instrShape = [1, 16, 8]}}>"
    assert enc in ttgir
    # each warp computes its batch entries' whole tiles: per thread, one instruction per 16x8 tile,
    # K step and batch entry of its own
    instr_k = 8 if in_t == "fp32" else 32 if in_t == "int8" else 16
    per_warp = -(-bsz // warps)
    assert ptx.count(instruction) == per_warp * (m // 16) * (n // 8) * (k // instr_k)
