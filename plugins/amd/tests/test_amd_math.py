"""The fp32 math written in plain LLVM IR for AMD (``tritium_amd.lowering.math_lib``), run on the host CPU
through llvmlite's JIT: the same IR builders, only the target differs, so the formulas are checked
against numpy/math here although no AMD GPU is."""
import ctypes
import math

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np
import pytest

from tritium_amd.lowering import math_lib

F32 = ir.FloatType()


@pytest.fixture(scope="module")
def jit():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    engines = []

    def build(name, arity):
        module = ir.Module(name="m")
        module.triple = llvm.get_default_triple()
        fn = ir.Function(module, ir.FunctionType(F32, [F32] * arity), "f")
        b = ir.IRBuilder(fn.append_basic_block())
        b.ret(math_lib.FP32[name](b, *fn.args))
        mod = llvm.parse_assembly(str(module))
        mod.verify()
        # each engine owns its target machine
        engine = llvm.create_mcjit_compiler(mod, llvm.Target.from_default_triple().create_target_machine())
        engine.finalize_object()
        engines.append(engine)
        proto = ctypes.CFUNCTYPE(ctypes.c_float, *([ctypes.c_float] * arity))
        return proto(engine.get_function_address("f"))
    return build


X = np.concatenate([np.linspace(-6, 6, 241), [-1e-4, -1e-7, 0.0, 1e-7, 1e-4, 0.3, 0.49, 0.51]]).astype(np.float32)
UNARY = {"math.tan": np.tan, "math.tanh": np.tanh, "math.atan": np.arctan, "math.erf": np.vectorize(math.erf),
         "math.log10": np.log10, "math.log1p": np.log1p, "math.expm1": np.expm1}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(jit, name):
    f = jit(name, 1)
    xs = X
    if name in ("math.log10",):
        xs = np.abs(X[X != 0])
    if name == "math.log1p":
        xs = X[X > -1]
    if name == "math.tan":
        xs = X[np.abs(np.cos(X.astype(np.float64))) > 0.05]
    got = np.array([f(float(x)) for x in xs], dtype=np.float64)
    want = UNARY[name](xs.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-7, err_msg=name)


def test_atan2_quadrants(jit):
    f = jit("math.atan2", 2)
    for y in (-2.0, -0.5, 0.0, 0.5, 2.0):
        for x in (-3.0, -1.0, -0.0, 0.0, 1.0, 3.0):
            assert f(y, x) == pytest.approx(math.atan2(y, x), rel=2e-6, abs=2e-7), (y, x)


def test_pow_sign_rules(jit):
    f = jit("math.powf", 2)
    for x, y in [(2.0, 10.0), (2.0, -1.5), (-2.0, 3.0), (-2.0, 2.0), (0.5, 0.25), (0.0, 2.0), (0.0, -1.0), (3.0, 0.0),
                 (float("nan"), 0.0)]:
        want = math.pow(x, y) if x or y >= 0 else math.inf
        assert f(x, y) == pytest.approx(want, rel=2e-6), (x, y)
    assert math.isnan(f(-2.0, 0.5))


def test_bf16_widening_is_exact_for_every_bit_pattern():
    """``AMDTargetInfo.bf16_to_f32`` (the shift the kernels use instead of ``fpext bfloat``), JIT-run
    on the host over all 65,536 bf16 values against numpy's reading of the same bits."""
    from tritium.conversion.ttgir_to_llvm.types import BF16
    from tritium_amd.lowering.target_info import AMDTargetInfo
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = ir.Module(name="m")
    module.triple = llvm.get_default_triple()
    i16 = ir.IntType(16)
    i32 = ir.IntType(32)
    # bits in, bits out (the host ABI passes no bfloat)
    fn = ir.Function(module, ir.FunctionType(i32, [i16]), "widen")
    b = ir.IRBuilder(fn.append_basic_block())
    wide = AMDTargetInfo("gfx942").bf16_to_f32(b, b.bitcast(fn.args[0], BF16))
    assert wide.type == F32
    b.ret(b.bitcast(wide, i32))
    text = str(module)
    mod = llvm.parse_assembly(text)
    mod.verify()
    engine = llvm.create_mcjit_compiler(mod, llvm.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    widen = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint16)(engine.get_function_address("widen"))
    bits = np.arange(1 << 16, dtype=np.uint32)
    got = np.array([widen(int(x)) for x in bits], dtype=np.uint32)
    # the f32 whose high half is the bf16's bits: NaN payloads and signed zeros included
    np.testing.assert_array_equal(got, bits << 16)
    assert "fpext" not in text
