"""``tt.gather``: its text (Triton's form, read and printed both ways, and accepted by Triton's own
MLIR parser when Triton is installed), its verifier, what the frontend emits for ``tl.gather``, the
layout convert-to-ttgir gives its result, and the interpreter on the shapes whose one-hot
expansion was too large, including out-of-range indices."""
import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

import tritium
import tritium.language as tl
from tritium.hooks.types import GPUTarget, Options
from tritium.ttgir.ir import print_module as print_ttgir
from tritium.ttgir.pass_lists import make_ttgir
from tritium.ttir.ir import parse_module, print_module

GATHER = """module {
  tt.func public @k(%src: tensor<128x64xf32>, %idx: tensor<256x64xi32>) -> tensor<256x64xf32> {
    %0 = tt.gather %src[%idx] {axis = 0 : i32} : (tensor<128x64xf32>, tensor<256x64xi32>) -> tensor<256x64xf32>
    tt.return %0 : tensor<256x64xf32>
  }
}
"""


def _with(src="tensor<128x64xf32>", idx="tensor<256x64xi32>", res="tensor<256x64xf32>", axis=0):
    return (GATHER.replace("tensor<128x64xf32>", "SRC").replace("tensor<256x64xi32>", "IDX")
            .replace("tensor<256x64xf32>", "RES").replace("axis = 0", f"axis = {axis}")
            .replace("SRC", src).replace("IDX", idx).replace("RES", res))


def test_text_round_trips():
    text = print_module(parse_module(GATHER))
    assert "tt.gather %src[%idx] {axis = 0 : i32} : (tensor<128x64xf32>, tensor<256x64xi32>) -> " \
           "tensor<256x64xf32>" in text
    assert print_module(parse_module(text)) == text
    generic = print_module(parse_module(GATHER), generic=True)
    assert '"tt.gather"' in generic and print_module(parse_module(generic)) == text


@pytest.mark.parametrize("kw,message", [
    (dict(src="tensor<128xf32>", idx="tensor<256x64xi32>", res="tensor<256x64xf32>"), "rank"),
    (dict(src="tensor<128x32xf32>"), "indices dimension 1 (64) must equal the source's (32)"),
    (dict(idx="tensor<256x64xf32>"), "indices must be integers"),
    (dict(res="tensor<256x64xf16>"), "element type"),
    (dict(res="tensor<128x64xf32>"), "shape"),
    (dict(axis=2), "axis 2 is out of range"),
])
def test_verifier_says_what_is_wrong(kw, message):
    with pytest.raises(VerifyException, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_module(_with(**kw)).verify()


@tritium.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, AXIS: tl.constexpr, S0: tl.constexpr, S1: tl.constexpr,
                  I0: tl.constexpr, I1: tl.constexpr):
    src = tl.load(src_ptr + tl.arange(0, S0)[:, None] * S1 + tl.arange(0, S1)[None, :])
    offs = tl.arange(0, I0)[:, None] * I1 + tl.arange(0, I1)[None, :]
    tl.store(out_ptr + offs, tl.gather(src, tl.load(idx_ptr + offs), AXIS))


@tritium.jit
def gather_transposed_index(src_ptr, idx_ptr, out_ptr, S: tl.constexpr):
    offs = tl.arange(0, S)[:, None] * S + tl.arange(0, S)[None, :]
    idx = tl.trans(tl.load(idx_ptr + offs))  # the index in a layout of its own
    tl.store(out_ptr + offs, tl.gather(tl.load(src_ptr + offs), idx, 1))


SIG = {"src_ptr": "*fp32", "idx_ptr": "*i32", "out_ptr": "*fp32"}


def _ttir(fn, constexprs, sig=SIG):
    return tritium.compile(fn, signature=sig, constexprs=constexprs, target="interpreter", stage="ttir").asm["ttir"]


def test_frontend_emits_one_gather_op():
    text = _ttir(gather_kernel, dict(AXIS=0, S0=128, S1=64, I0=256, I1=64))
    assert text.count("tt.gather") == 1 and "tt.reduce" not in text
    assert "{axis = 0 : i32} : (tensor<128x64xf32>, tensor<256x64xi32>) -> tensor<256x64xf32>" in text


def test_ttgir_result_takes_the_indices_layout():
    module = make_ttgir(parse_module(_ttir(gather_transposed_index, dict(S=32))), GPUTarget("cuda", 90, 32),
                        Options(num_warps=4, threads_per_warp=32))
    op = next(o for o in module.walk() if o.name == "tt.gather")
    assert op.result.type.encoding == op.indices.type.encoding
    assert "tt.gather" in print_ttgir(module)


@pytest.mark.parametrize("src_shape,idx_shape,axis", [([128, 64], [256, 64], 0), ([128, 64], [128, 128], 1)])
def test_interpreter_large_gathers(src_shape, idx_shape, axis):
    rng = np.random.default_rng(1)
    src = rng.standard_normal(src_shape).astype(np.float32)
    idx = rng.integers(0, src_shape[axis], idx_shape).astype(np.int32)
    out = np.full(idx_shape, np.nan, np.float32)
    gather_kernel[(1,)](src, idx, out, axis, *src_shape, *idx_shape)
    np.testing.assert_array_equal(out, np.take_along_axis(src, idx, axis))


def test_interpreter_out_of_range_indices_read_index_mod_extent():
    rng = np.random.default_rng(2)
    src = rng.standard_normal((16, 8)).astype(np.float32)
    idx = rng.integers(-100, 100, (32, 8)).astype(np.int32)
    out = np.full((32, 8), np.nan, np.float32)
    gather_kernel[(1,)](src, idx, out, 0, 16, 8, 32, 8)
    np.testing.assert_array_equal(out, np.take_along_axis(src, idx % 16, 0))


@tritium.jit
def gather_float_index(src_ptr, out_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(src_ptr + offs)
    tl.store(out_ptr + offs, tl.gather(x, x, 0))


def test_float_index_is_an_error_at_the_call():
    with pytest.raises(tritium.CompilationError) as e:
        _ttir(gather_float_index, {}, {"src_ptr": "*fp32", "out_ptr": "*fp32"})
    assert "gather's index must be integers, got fp32" in str(e.value)
    assert "tl.gather(x, x, 0)" in str(e.value)


def test_triton_mlir_parser_reads_tritium_gather(tmp_path):
    pytest.importorskip("triton", reason="Triton is not installed (used only as an independent MLIR parser)")
    libtriton = pytest.importorskip("triton._C.libtriton")
    ir = libtriton.ir
    for generic in (False, True):
        path = tmp_path / "m.mlir"
        path.write_text(print_module(parse_module(_ttir(gather_kernel, dict(AXIS=1, S0=32, S1=16, I0=32, I1=64))),
                                     generic=generic))
        ctx = ir.context()
        ir.load_dialects(ctx)
        assert ir.parse_mlir_module(str(path), ctx).verify()
