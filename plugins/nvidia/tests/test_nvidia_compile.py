"""CPU-only: the tutorial kernels compile through every NVIDIA stage to cubin, without a GPU."""
import pytest

import tritium as triton
from conformance.cases import tutorials_basic as tb

D = {"tt.divisibility": 16}
KERNELS = {
    "add": (tb.add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
            {"BLOCK_SIZE": 1024}, {"x_ptr": D, "y_ptr": D, "output_ptr": D, "n_elements": D}),
    "softmax": (tb.softmax_kernel, {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32",
                                    "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                {"BLOCK_SIZE": 1024, "num_stages": 1},
                {"output_ptr": D, "input_ptr": D, "input_row_stride": D, "output_row_stride": D, "n_cols": D}),
    "layer_norm": (tb._layer_norm_fwd_fused, {"X": "*fp32", "Y": "*fp32", "W": "*fp32", "B": "*fp32", "Mean": "*fp32",
                                              "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32"},
                   {"BLOCK_SIZE": 1024}, {"X": D, "Y": D, "W": D, "B": D, "stride": D, "N": D}),
}


@pytest.mark.parametrize("target", ["cuda:90", "cuda:80"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_tutorial_compiles_to_cubin(name, target, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    fn, sig, consts, attrs = KERNELS[name]
    k = triton.compile(fn, target=target, signature=sig, constexprs=consts, attrs=attrs, num_warps=4)
    assert set(k.asm) >= {"ttir", "ttgir", "llir", "ptx", "cubin"}
    assert k.asm["cubin"][:4] == b"\x7fELF"
    assert k.metadata["name"] == fn.__name__ and k.metadata["num_warps"] == 4
    assert f".entry {fn.__name__}" in k.asm["ptx"]
    if name == "add":
        assert "ld.global.v4.b32" in k.asm["ptx"] and "st.global.v4.b32" in k.asm["ptx"]
    if name == "softmax":
        assert k.metadata["shared"] > 0 and "shfl.sync.bfly" in k.asm["ptx"]


@triton.jit
def _amdgcn_asm(x_ptr, z_ptr):
    offs = triton.language.arange(0, 128)
    z = triton.language.inline_asm_elementwise("v_lshlrev_b32 $0, 3, $1", "=v,v", [triton.language.load(x_ptr + offs)],
                                               dtype=triton.language.int32, is_pure=True, pack=1)
    triton.language.store(z_ptr + offs, z)


def test_foreign_inline_asm_constraint_is_refused_at_the_kernel_line(monkeypatch, tmp_path):
    """NVPTX cannot allocate AMDGCN's 'v' (LLVM would stop the process): refused before LLVM."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    with pytest.raises(triton.CompilationError, match=r"constraint 'v' is not one the nvidia backend") as e:
        triton.compile(_amdgcn_asm, target="cuda:90", signature={"x_ptr": "*i32", "z_ptr": "*i32"}, constexprs={})
    assert "inline_asm_elementwise(" in str(e.value)


@triton.jit
def _to_fp8(x_ptr, y_ptr, DT: triton.language.constexpr, RTZ: triton.language.constexpr):
    offs = triton.language.arange(0, 256)
    x = triton.language.load(x_ptr + offs)
    if RTZ:
        y = x.to(DT, fp_downcast_rounding="rtz")
    else:
        y = x.to(DT)
    triton.language.store(y_ptr + offs, y)


@pytest.mark.parametrize("target, dt, rtz, native", [
    ("cuda:90", "fp8e4nv", False, True), ("cuda:90", "fp8e5", False, True),
    ("cuda:89", "fp8e4nv", False, True), ("cuda:90", "fp8e4nv", True, False), ("cuda:80", "fp8e5", False, False)])
def test_fp32_to_fp8_uses_the_native_conversion(target, dt, rtz, native, monkeypatch, tmp_path):
    """From sm_89 an f32 -> fp8 cast (round to nearest even) is cvt.rn.satfinite on pairs of
    values, as Triton's; toward zero, and before sm_89, it is the portable integer arithmetic.
    e5m2's NaN is rewritten to the canonical code the portable rule gives (the instruction writes
    another NaN code); the conformance suite's fp8_storage cases check the bits on a GPU."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = triton.compile(_to_fp8, target=target, signature={"x_ptr": "*fp32", "y_ptr": f"*{dt}"},
                       constexprs={"DT": getattr(triton.language, {"fp8e4nv": "float8e4nv", "fp8e5": "float8e5"}[dt]),
                                   "RTZ": rtz}, num_warps=4)
    ptx = k.asm["ptx"]
    fmt = {"fp8e4nv": "e4m3", "fp8e5": "e5m2"}[dt]
    cvts = ptx.count(f"cvt.rn.satfinite.{fmt}x2.f32")
    if native:
        assert cvts == 1   # 256 elements over 128 threads: one pair a thread
        assert "cvt.rni.f32.f32" not in ptx and "cvt.rzi" not in ptx
        assert ("setp.nan.f32" in ptx or "setp.num.f32" in ptx) == (fmt == "e5m2")
    else:
        assert cvts == 0
