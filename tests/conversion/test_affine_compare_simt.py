"""Index compares lowered against immediates (``ttgir_to_llvm/affine_compare.py``) and a masked
``a * b + where(c, K1, K2)`` lowered as two fmas (``elementwise._fma_over_select``), run for real
on the CPU with the host SIMT target: every predicate, both operand orders, offsets chosen so that
the column side wraps past INT_MAX (and the row side sits at INT_MIN), against numpy's int32
arithmetic.  The rewrite's own arithmetic is also checked alone, JIT-compiled for the host, over
edge values with and without LLVM's optimizer."""
import ctypes
import itertools
import os
import random
import sys

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import simt  # noqa: E402

from tritium.conversion.ttgir_to_llvm.affine_compare import emit_compares  # noqa: E402
from tritium.ttgir.ir import parse_module  # noqa: E402

I32 = ir.IntType(32)
_OPS = {"sge": np.greater_equal, "sgt": np.greater, "sle": np.less_equal, "slt": np.less, "eq": np.equal,
        "ne": np.not_equal}
_EDGES = [-2**31, -2**31 + 1, -2**31 + 39, -2**31 + 40, -41, -1, 0, 1, 39, 40, 1000, 2**31 - 41, 2**31 - 40,
          2**31 - 39, 2**31 - 20, 2**31 - 2, 2**31 - 1]


def _wrap32(x):
    return ((np.asarray(x, dtype=np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


# --- the arithmetic alone -----------------------------------------------------------------------------
def _jit_compares(pred: str, span: int, wraps: bool, optimize: bool):
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    m = ir.Module("m")
    m.triple = llvm.get_process_triple()
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [I32, I32, ir.PointerType()]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    x, common, out = fn.args
    for i, p in enumerate(emit_compares(b, pred, [x] * span, common, list(range(span)), span, wraps)):
        b.store(b.zext(p, ir.IntType(8)), b.gep(out, [ir.Constant(I32, i)], source_etype=ir.IntType(8)))
    b.ret_void()
    mod = llvm.parse_assembly(str(m))
    mod.verify()
    tm = llvm.Target.from_default_triple().create_target_machine()
    if optimize:
        pb = llvm.create_pass_builder(tm, llvm.PipelineTuningOptions(speed_level=3))
        pb.getModulePassManager().run(mod, pb)
    ee = llvm.create_mcjit_compiler(mod, tm)
    ee.finalize_object()
    f = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p)(ee.get_function_address("f"))
    return ee, f


@pytest.mark.parametrize("optimize", [False, True])
@pytest.mark.parametrize("pred", list(_OPS))
def test_compares_exact_with_wraparound(pred, optimize):
    span = 40
    rng = random.Random(1)
    values = _EDGES + [rng.randint(-2**31, 2**31 - 1) for _ in range(20)]
    ee, f = _jit_compares(pred, span, True, optimize)
    buf = (ctypes.c_uint8 * span)()
    wrong = []
    for x, common in itertools.product(values, values):
        f(x, common, ctypes.addressof(buf))
        ref = _OPS[pred](np.int32(x), _wrap32(np.int64(common) + np.arange(span)))
        got = np.frombuffer(bytes(buf), dtype=np.uint8).astype(bool)
        if not (got == ref).all():
            wrong.append((x, common))
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("pred", ["sge", "sgt", "sle", "slt"])
def test_compares_exact_where_nothing_wraps(pred):
    """``wraps=False``: one compare a register, for every ``common`` whose columns stay in range."""
    span = 40
    values = [v for v in _EDGES if v <= 2**31 - span]
    ee, f = _jit_compares(pred, span, False, True)
    buf = (ctypes.c_uint8 * span)()
    for x, common in itertools.product(_EDGES, values):
        f(x, common, ctypes.addressof(buf))
        ref = _OPS[pred](np.int32(x), (np.int64(common) + np.arange(span)).astype(np.int32))
        assert (np.frombuffer(bytes(buf), dtype=np.uint8).astype(bool) == ref).all(), (x, common)


# --- whole kernels on the host SIMT target ---------------------------------------------------------------
_MMA = "#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 128, 16]}>"
M, N = 64, 128


def _mask_kernel(pred: str, rows_left: bool, combine: str = "add") -> str:
    """``out[i, j] = (a + i) pred (s + j)`` (or with the sides swapped), in wgmma's accumulator layout;
    ``x[i, j] * 0.5 + where(that, 0.0, -1.0e6)`` into ``y`` (``combine``: ``add``, ``radd`` with
    the select first, ``sub`` for ``-``)."""
    rs, cs = "#ttg.slice<{dim = 1, parent = #mma}>", "#ttg.slice<{dim = 0, parent = #mma}>"
    t, ti1, tf = f"tensor<{M}x{N}xi32, #mma>", f"tensor<{M}x{N}xi1, #mma>", f"tensor<{M}x{N}xf32, #mma>"
    lhs, rhs = ("%rb", "%cb") if rows_left else ("%cb", "%rb")
    combine_op = {"add": "arith.addf %scaled, %bias", "radd": "arith.addf %bias, %scaled",
                  "sub": "arith.subf %scaled, %bias"}[combine]
    return f"""#mma = {_MMA}
module attributes {{"ttg.num-warps" = 4 : i32, "ttg.num-ctas" = 1 : i32, "ttg.threads-per-warp" = 32 : i32}} {{
  tt.func public @mask(%out: !tt.ptr<i32> {{tt.divisibility = 16 : i32}},
                       %x: !tt.ptr<f32> {{tt.divisibility = 16 : i32}},
                       %y: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}, %a: i32, %s: i32) {{
    %r = tt.make_range {{end = {M} : i32, start = 0 : i32}} : tensor<{M}xi32, {rs}>
    %c = tt.make_range {{end = {N} : i32, start = 0 : i32}} : tensor<{N}xi32, {cs}>
    %as = tt.splat %a : i32 -> tensor<{M}xi32, {rs}>
    %rows = arith.addi %as, %r : tensor<{M}xi32, {rs}>
    %r2 = tt.expand_dims %rows {{axis = 1 : i32}} : tensor<{M}xi32, {rs}> -> tensor<{M}x1xi32, #mma>
    %rb = tt.broadcast %r2 : tensor<{M}x1xi32, #mma> -> {t}
    %c2 = tt.expand_dims %c {{axis = 0 : i32}} : tensor<{N}xi32, {cs}> -> tensor<1x{N}xi32, #mma>
    %ss = tt.splat %s : i32 -> tensor<1x{N}xi32, #mma>
    %cols = arith.addi %ss, %c2 : tensor<1x{N}xi32, #mma>
    %cb = tt.broadcast %cols : tensor<1x{N}xi32, #mma> -> {t}
    %m = arith.cmpi {pred}, {lhs}, {rhs} : {t}
    %one = arith.constant dense<1> : {t}
    %zero = arith.constant dense<0> : {t}
    %v = arith.select %m, %one, %zero : {ti1}, {t}
    %ri = tt.expand_dims %r {{axis = 1 : i32}} : tensor<{M}xi32, {rs}> -> tensor<{M}x1xi32, #mma>
    %n = arith.constant dense<{N}> : tensor<{M}x1xi32, #mma>
    %rn = arith.muli %ri, %n : tensor<{M}x1xi32, #mma>
    %rnb = tt.broadcast %rn : tensor<{M}x1xi32, #mma> -> {t}
    %cib = tt.broadcast %c2 : tensor<1x{N}xi32, #mma> -> {t}
    %off = arith.addi %rnb, %cib : {t}
    %po = tt.splat %out : !tt.ptr<i32> -> tensor<{M}x{N}x!tt.ptr<i32>, #mma>
    %p = tt.addptr %po, %off : tensor<{M}x{N}x!tt.ptr<i32>, #mma>, {t}
    tt.store %p, %v : tensor<{M}x{N}x!tt.ptr<i32>, #mma>
    %px = tt.splat %x : !tt.ptr<f32> -> tensor<{M}x{N}x!tt.ptr<f32>, #mma>
    %pxo = tt.addptr %px, %off : tensor<{M}x{N}x!tt.ptr<f32>, #mma>, {t}
    %xv = tt.load %pxo : tensor<{M}x{N}x!tt.ptr<f32>, #mma>
    %half = arith.constant dense<5.000000e-01> : {tf}
    %scaled = arith.mulf %xv, %half : {tf}
    %fz = arith.constant dense<0.000000e+00> : {tf}
    %fneg = arith.constant dense<-1.000000e+06> : {tf}
    %bias = arith.select %m, %fz, %fneg : {ti1}, {tf}
    %sum = {combine_op} : {tf}
    %py = tt.splat %y : !tt.ptr<f32> -> tensor<{M}x{N}x!tt.ptr<f32>, #mma>
    %pyo = tt.addptr %py, %off : tensor<{M}x{N}x!tt.ptr<f32>, #mma>, {t}
    tt.store %pyo, %sum : tensor<{M}x{N}x!tt.ptr<f32>, #mma>
    tt.return
  }}
}}
"""


@pytest.mark.parametrize("combine", ["add", "radd", "sub"])
def test_mask_kernel_takes_the_rewrite(combine):
    from tritium.conversion.ttgir_to_llvm import lower_to_llvm
    from tritium.ttgir.pass_lists import finalize_ttgir
    module = parse_module(_mask_kernel("sge", True, combine))
    finalize_ttgir(module, None, {}, None)
    llir, _ = lower_to_llvm(module, simt.HostSIMTTarget(4))
    assert "llvm.ssub.sat.i32" in llir, "the compare was lowered register by register"
    assert llir.count("call float @\"llvm.fma.f32\"") + llir.count("call float @llvm.fma.f32") == 2 * 64, \
        "the masked add is two fmas a register"


@pytest.mark.parametrize("rows_left", [True, False])
@pytest.mark.parametrize("pred", list(_OPS))
@pytest.mark.parametrize("a,s", [(0, 0), (5, -3), (2**31 - 70, 2**31 - 60), (-2**31, 2**31 - 100),
                                 (2**31 - 1, -2**31), (1000, 2**31 - 128)])
def test_mask_kernel_against_numpy(pred, rows_left, a, s):
    rng = np.random.default_rng(abs(a) % 97 + abs(s) % 89)
    out = np.full((M, N), -7, dtype=np.int32)                  # poisoned: unwritten elements show
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = np.full((M, N), np.nan, dtype=np.float32)
    failed = simt.run_ttgir(parse_module(_mask_kernel(pred, rows_left)), [out, x, y, a, s])
    assert failed == 0
    rows = _wrap32(np.int64(a) + np.arange(M))[:, None]
    cols = _wrap32(np.int64(s) + np.arange(N))[None, :]
    ref = _OPS[pred](rows, cols) if rows_left else _OPS[pred](cols, rows)
    np.testing.assert_array_equal(out, ref.astype(np.int32))
    expect = np.where(ref, x.astype(np.float64) * 0.5, x.astype(np.float64) * 0.5 - 1.0e6)
    np.testing.assert_allclose(y, expect, rtol=1e-6)


@pytest.mark.parametrize("combine", ["add", "radd", "sub"])
def test_masked_fma_forms(combine):
    rng = np.random.default_rng(5)
    a, s = 2**31 - 70, 2**31 - 60
    out = np.full((M, N), -7, dtype=np.int32)
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = np.full((M, N), np.nan, dtype=np.float32)
    assert simt.run_ttgir(parse_module(_mask_kernel("sge", True, combine)), [out, x, y, a, s]) == 0
    ref = _wrap32(np.int64(a) + np.arange(M))[:, None] >= _wrap32(np.int64(s) + np.arange(N))[None, :]
    bias = np.where(ref, 0.0, -1.0e6)
    expect = x.astype(np.float64) * 0.5 + (-bias if combine == "sub" else bias)
    np.testing.assert_allclose(y, expect, rtol=1e-6)
