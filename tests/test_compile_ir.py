"""``tritium.compile`` on IR (Triton's ``IRSource``): paths and text, TTIR and TTGIR, the launch
signature from the ``tt.func`` arguments, the options from the module; run on the interpreter
(which reads TTGIR with its layouts ignored)."""
import numpy as np
import pytest

import tritium
from tritium.compiler.source import IRSource, guess_ext

_TTGIR = """
#blocked = #ttg.blocked<{sizePerThread = [1, 2], threadsPerWarp = [4, 8], warpsPerCTA = [2, 1], order = [1, 0]}>
#row = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [1, 2], order = [1, 0]}>
module attributes {"ttg.num-warps" = 2 : i32, "ttg.num-ctas" = 1 : i32, "ttg.threads-per-warp" = 32 : i32} {
  tt.func public @row_sums(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32>, %n: i32) {
    %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32, #ttg.slice<{dim = 1, parent = #blocked}>>
    %c = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32, #ttg.slice<{dim = 0, parent = #blocked}>>
    %r2 = tt.expand_dims %r {axis = 1 : i32} : tensor<8xi32, #ttg.slice<{dim = 1, parent = #blocked}>> -> tensor<8x1xi32, #blocked>
    %ns = tt.splat %n : i32 -> tensor<8x1xi32, #blocked>
    %rn = arith.muli %r2, %ns : tensor<8x1xi32, #blocked>
    %c2 = tt.expand_dims %c {axis = 0 : i32} : tensor<16xi32, #ttg.slice<{dim = 0, parent = #blocked}>> -> tensor<1x16xi32, #blocked>
    %rb = tt.broadcast %rn : tensor<8x1xi32, #blocked> -> tensor<8x16xi32, #blocked>
    %cb = tt.broadcast %c2 : tensor<1x16xi32, #blocked> -> tensor<8x16xi32, #blocked>
    %off = arith.addi %rb, %cb : tensor<8x16xi32, #blocked>
    %ps = tt.splat %x : !tt.ptr<f32> -> tensor<8x16x!tt.ptr<f32>, #blocked>
    %p = tt.addptr %ps, %off : tensor<8x16x!tt.ptr<f32>, #blocked>, tensor<8x16xi32, #blocked>
    %v = tt.load %p : tensor<8x16x!tt.ptr<f32>, #blocked>
    %s = "tt.reduce"(%v) <{axis = 1 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tt.reduce.return %t : f32
    }) : (tensor<8x16xf32, #blocked>) -> tensor<8xf32, #ttg.slice<{dim = 1, parent = #blocked}>>
    %s2 = ttg.convert_layout %s : tensor<8xf32, #ttg.slice<{dim = 1, parent = #blocked}>> -> tensor<8xf32, #ttg.slice<{dim = 0, parent = #row}>>
    %i = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32, #ttg.slice<{dim = 0, parent = #row}>>
    %qs = tt.splat %y : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>, #ttg.slice<{dim = 0, parent = #row}>>
    %q = tt.addptr %qs, %i : tensor<8x!tt.ptr<f32>, #ttg.slice<{dim = 0, parent = #row}>>, tensor<8xi32, #ttg.slice<{dim = 0, parent = #row}>>
    tt.store %q, %s2 : tensor<8x!tt.ptr<f32>, #ttg.slice<{dim = 0, parent = #row}>>
    tt.return
  }
}
"""

_TTIR = """
module {
  tt.func public @double(%x: !tt.ptr<i32>, %y: !tt.ptr<i32>) {
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ps = tt.splat %x : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
    %p = tt.addptr %ps, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    %v = tt.load %p : tensor<64x!tt.ptr<i32>>
    %w = arith.addi %v, %v : tensor<64xi32>
    %qs = tt.splat %y : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
    %q = tt.addptr %qs, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    tt.store %q, %w : tensor<64x!tt.ptr<i32>>
    tt.return
  }
}
"""


def test_ir_source_reads_signature_and_options(tmp_path):
    path = tmp_path / "row_sums.ttgir"
    path.write_text(_TTGIR)
    src = IRSource(str(path))
    assert (src.ext, src.name, src.path) == ("ttgir", "row_sums", str(path))
    assert src.signature == {0: "*fp32", 1: "*fp32", 2: "i32"}
    assert src.arg_names == ["x", "y", "n"]
    assert src.parse_options() == {"num_warps": 2, "num_ctas": 1, "threads_per_warp": 32}
    assert IRSource(_TTGIR).key() == src.key()
    assert guess_ext(_TTIR) == "ttir" and guess_ext(_TTGIR) == "ttgir"


@pytest.mark.parametrize("as_path", [True, False], ids=["path", "text"])
def test_ttgir_runs_on_the_interpreter(tmp_path, as_path):
    path = tmp_path / "row_sums.ttgir"
    path.write_text(_TTGIR)
    kernel = tritium.compile(str(path) if as_path else _TTGIR, target="interpreter")
    assert kernel.name == "row_sums" and kernel.metadata.num_warps == 2
    assert kernel.runtime_signature == {0: "*fp32", 1: "*fp32", 2: "i32"}
    x = np.random.default_rng(0).uniform(-1, 1, (8, 16)).astype(np.float32)
    y = np.full(8, np.nan, np.float32)
    kernel[(1, 1, 1)](x, y, 16)
    np.testing.assert_allclose(y, x.sum(axis=1), rtol=1e-5)


def test_ttir_text_and_pathlib_path(tmp_path):
    path = tmp_path / "double.ttir"
    path.write_text(_TTIR)
    kernel = tritium.compile(path, target="interpreter")
    assert kernel.name == "double" and "ttir" in kernel.asm
    x = np.arange(64, dtype=np.int32)
    y = np.zeros(64, np.int32)
    kernel[(1,)](x, y)
    np.testing.assert_array_equal(y, 2 * x)


def test_local_memory_ops_on_the_interpreter():
    text = _TTGIR.replace(
        "%s2 = ttg.convert_layout %s : tensor<8xf32, #ttg.slice<{dim = 1, parent = #blocked}>> -> "
        "tensor<8xf32, #ttg.slice<{dim = 0, parent = #row}>>",
        "%m = ttg.local_alloc %s : (tensor<8xf32, #ttg.slice<{dim = 1, parent = #blocked}>>) -> "
        "!ttg.memdesc<8xf32, #shared, #ttg.shared_memory>\n"
        "    %s2 = ttg.local_load %m : !ttg.memdesc<8xf32, #shared, #ttg.shared_memory> -> "
        "tensor<8xf32, #ttg.slice<{dim = 0, parent = #row}>>")
    text = "#shared = #ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>\n" + text
    assert "local_load" in text
    kernel = tritium.compile(text, target="interpreter")
    x = np.ones((8, 16), np.float32)
    y = np.zeros(8, np.float32)
    kernel[(1,)](x, y, 16)
    np.testing.assert_array_equal(y, np.full(8, 16, np.float32))


@pytest.mark.parametrize("text, message", [
    (_TTGIR.replace("tt.func public @row_sums", "tt.func private @row_sums"), "no public tt.func"),
    (_TTGIR.replace('"ttg.num-warps" = 2 : i32, ', ""), "ttg.num-warps"),
    (_TTGIR.replace("warpsPerCTA = [2, 1]", "warpsPerCTA = [4, 1]"), "laid out for 4 warps"),
    (_TTGIR.replace("threadsPerWarp = [4, 8]", "threadsPerWarp = [8, 8]"), "64 threads per warp"),
])
def test_ir_source_errors(text, message):
    with pytest.raises(ValueError, match=message):
        IRSource(text)


def test_unknown_text_and_extension(tmp_path):
    with pytest.raises(ValueError, match="cannot tell the IR's language"):
        IRSource("this is not IR")
    with pytest.raises(ValueError, match="IR sources are"):
        IRSource(_TTIR, ext="mlir")


def test_missing_file():
    with pytest.raises(FileNotFoundError, match="no IR file"):
        tritium.compile("/nonexistent/kernel.ttgir", target="interpreter")


def test_triton_names():
    assert tritium.IRSource is IRSource and tritium.compiler.IRSource is IRSource
    assert IRSource(_TTIR).hash() == IRSource(_TTIR).key()


def test_a_triton_dump_with_location_aliases():
    """What ``TRITON_KERNEL_DUMP`` writes: ``#loc`` aliases after the module, located arguments,
    ``attributes {noinline = false}``, ``ttg.target``."""
    import pathlib
    path = pathlib.Path(__file__).parent / "ttgir" / "kernels" / "triton_dump_add.ttgir"
    kernel = tritium.compile(str(path), target="interpreter")
    assert kernel.name == "add_kernel" and kernel.metadata.num_warps == 4
    x = np.arange(3000, dtype=np.float32)
    out = np.zeros(3000, np.float32)
    kernel[(3,)](x, np.ones(3000, np.float32), out, 3000)
    np.testing.assert_array_equal(out, x + 1)
