"""TTIR text is MLIR: Triton's own MLIR parser (when Triton happens to be installed; it is never a
dependency) reads and verifies what Tritium prints, custom and generic forms, and Tritium reads
the TTIR Triton prints for the same tutorial kernels."""
import importlib

import pytest

import tritium
from tritium.ttir.ir import parse_module, print_module

triton = pytest.importorskip("triton", reason="Triton is not installed (used only as an independent MLIR parser)")
libtriton = pytest.importorskip("triton._C.libtriton")

F32 = "*fp32"
KERNELS = {
    "vector_add": ("add_kernel", {"x_ptr": F32, "y_ptr": F32, "output_ptr": F32, "n_elements": "i32"},
                   {"BLOCK_SIZE": 1024}),
    "fused_softmax": ("softmax_kernel", {"output_ptr": F32, "input_ptr": F32, "input_row_stride": "i32",
                                         "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                      {"BLOCK_SIZE": 1024, "num_stages": 3}),
    "layer_norm": ("_layer_norm_fwd_fused", {**{n: F32 for n in "XYWB"}, "Mean": F32, "Rstd": F32, "stride": "i32",
                                             "N": "i32", "eps": "fp32"}, {"BLOCK_SIZE": 1024}),
}


def _mlir_parses(text, tmp_path):
    ir = libtriton.ir
    path = tmp_path / "m.mlir"
    path.write_text(text)
    ctx = ir.context()
    ir.load_dialects(ctx)
    return ir.parse_mlir_module(str(path), ctx).verify()


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_tritium_ttir_parses_in_mlir(name, tmp_path):
    fn_name, sig, consts = KERNELS[name]
    fn = getattr(importlib.import_module(f"tritium.examples.{name}"), fn_name)
    m = parse_module(tritium.compile(fn, signature=sig, constexprs=consts, target="interpreter", stage="ttir").asm["ttir"])
    assert _mlir_parses(print_module(m), tmp_path)
    assert _mlir_parses(print_module(m, generic=True), tmp_path)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_triton_ttir_parses_here(name, tmp_path):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    fn_name, sig, consts = KERNELS[name]
    src = importlib.import_module(f"tritium.examples.{name}")
    path = tmp_path / f"{name}_for_triton.py"
    path.write_text(open(src.__file__).read().replace("import tritium as triton", "import triton")
                    .replace("import tritium.language as tl", "import triton.language as tl"))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    full = {n: sig.get(n, "constexpr") for n in getattr(mod, fn_name).arg_names}
    k = triton.compile(ASTSource(getattr(mod, fn_name), full, consts), target=GPUTarget("cuda", 90, 32))
    ours = parse_module(k.asm["ttir"])  # Triton's text, with its #loc aliases
    assert "tt.func public @" + fn_name in print_module(ours)


def test_dot_scaled_text_parses_in_mlir(tmp_path):
    from conformance.cases.dot_scaled import dot_scaled_kernel
    sig = {"a_ptr": "*u8", "as_ptr": "*u8", "b_ptr": "*bf16", "bs_ptr": "*u8", "c_ptr": "*fp32", "z_ptr": "*fp32"}
    for fb, sb, pack in (("e4m3", True, True), ("bf16", False, False)):
        consts = dict(M=64, N=64, K=64, FA="e2m1", FB=fb, SCALE_A=True, SCALE_B=sb, FAST=sb, USE_ACC=False,
                      A_K_PACK=pack, B_K_PACK=True)
        sig["b_ptr"] = "*bf16" if fb == "bf16" else "*u8"
        text = tritium.compile(dot_scaled_kernel, signature=sig, constexprs=consts, target="interpreter",
                               stage="ttir").asm["ttir"]
        m = parse_module(text)
        assert "tt.dot_scaled" in text
        assert _mlir_parses(print_module(m), tmp_path)
        assert _mlir_parses(print_module(m, generic=True), tmp_path)
