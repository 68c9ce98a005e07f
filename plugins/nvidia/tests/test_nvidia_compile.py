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
