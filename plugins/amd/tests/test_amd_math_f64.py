"""The fp64 device-library fallback written in plain LLVM IR (``tritium_amd.lowering.math_f64``), JIT-run on
the host CPU: the same IR builders the AMD kernels use, so each function's error is bounded here
against numpy / ``math`` in float64 although no AMD GPU is.  Bounds: 4e-15 relative (1e-300
absolute) unless the table says otherwise; the conformance suite asks 1e-9."""
import ctypes
import math

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np
import pytest

from tritium_amd.lowering import math_f64

F64 = ir.DoubleType()


@pytest.fixture(scope="module")
def jit():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    engines = []

    def build(fn_builder, arity):
        module = ir.Module(name="m")
        module.triple = llvm.get_default_triple()
        fn = ir.Function(module, ir.FunctionType(F64, [F64] * arity), "f")
        b = ir.IRBuilder(fn.append_basic_block())
        b.ret(fn_builder(b, *fn.args))
        mod = llvm.parse_assembly(str(module))
        mod.verify()
        engine = llvm.create_mcjit_compiler(mod, llvm.Target.from_default_triple().create_target_machine())
        engine.finalize_object()
        engines.append(engine)
        proto = ctypes.CFUNCTYPE(ctypes.c_double, *([ctypes.c_double] * arity))
        return proto(engine.get_function_address("f"))
    return build


_erf, _erfc = np.vectorize(math.erf), np.vectorize(math.erfc)


def _erfinv(y):
    # bisection on math.erf: exact to the last bits of the double
    if abs(y) < 1e-8:   # below the bisection's resolution: the series' first term is exact
        return y * math.sqrt(math.pi) / 2
    lo, hi = -7.0, 7.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    return (lo + hi) / 2
# name: (reference, (low, high), relative bound)
UNARY = {
    "exp": (np.exp, (-700, 700), 4e-15), "exp2": (np.exp2, (-1000, 1000), 4e-15),
    "exp10": (lambda x: 10.0 ** x, (-300, 300), 2e-13), "expm1": (np.expm1, (-30, 30), 4e-15),
    "log": (np.log, (1e-300, 1e300), 4e-15), "log2": (np.log2, (1e-300, 1e300), 4e-15),
    "log10": (np.log10, (1e-300, 1e300), 4e-15), "log1p": (np.log1p, (-0.999, 1e10), 4e-15),
    "sin": (np.sin, (-1e4, 1e4), 4e-15), "cos": (np.cos, (-1e4, 1e4), 4e-15), "tan": (np.tan, (-1e3, 1e3), 1e-14),
    # references reduced exactly first (x - 2 round(x/2)); zeros of sinpi/cospi are exact here, not in numpy
    "sinpi": (lambda x: np.sin(np.pi * (x - 2 * np.round(x / 2))), (-40, 40), 1e-14),
    "cospi": (lambda x: np.cos(np.pi * (x - 2 * np.round(x / 2))), (-40, 40), 1e-14),
    "asin": (np.arcsin, (-1, 1), 4e-15), "acos": (np.arccos, (-1, 1), 4e-15), "atan": (np.arctan, (-1e6, 1e6), 4e-15),
    "sinh": (np.sinh, (-700, 700), 4e-15), "cosh": (np.cosh, (-700, 700), 4e-15), "tanh": (np.tanh, (-30, 30), 4e-15),
    "asinh": (np.arcsinh, (-1e6, 1e6), 4e-15), "acosh": (np.arccosh, (1, 1e6), 4e-15),
    "atanh": (np.arctanh, (-0.999, 0.999), 4e-15), "erf": (_erf, (-7, 7), 4e-15), 
    # erfc below 2.5 is 1 - erf: the cancellation costs up to 1e-12 relative where erfc is 4e-4
    "erfc": (_erfc, (-5, 26), 1e-12), "normcdf": (np.vectorize(lambda x: 0.5 * math.erfc(-x / math.sqrt(2))), (-30, 8), 1e-12),
    "cbrt": (np.cbrt, (-1e10, 1e10), 4e-15), "rcbrt": (lambda x: 1 / np.cbrt(x), (0.01, 1e10), 4e-15),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (1e-10, 1e10), 4e-15),
    "logb": (lambda x: np.floor(np.log2(np.abs(x))), (-1e10, 1e10), 0.0),
    # erfinv near +-1 amplifies its argument's rounding by sqrt(pi)/2 exp(x^2) (500x at 0.9996)
    "erfinv": (np.vectorize(lambda y: _erfinv(y)), (-0.9996, 0.9996), 1e-13),
    # exp of a log-gamma up to 706: its rounding is 700 ulp of the result
    "tgamma": (np.vectorize(math.gamma), (-5.5, 170), 5e-13),
    "lgamma": (np.vectorize(math.lgamma), (1e-3, 1e5), 1e-14),
}


def _inputs(lo, hi):
    rng = np.random.default_rng(0)
    if lo > 0 and hi / lo > 1e6:
        x = np.exp(rng.uniform(math.log(lo), math.log(hi), 2000))
    else:
        x = rng.uniform(lo, hi, 2000)
    small = np.array([0.0, 1e-300, 1e-20, 1e-8, 0.1, 0.25, 0.5, 1.0, 2.0, 2.49, 2.5, 2.51, 5.9, 6.0, 20.0])
    edge = np.concatenate([small, -small])
    return np.concatenate([x, edge[(edge >= lo) & (edge <= hi)]])


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(jit, name):
    ref, (lo, hi), rtol = UNARY[name]
    f = jit(math_f64.UNARY[name], 1)
    xs = _inputs(lo, hi)
    if name == "log1p":
        xs = xs[xs > -1]
    if name == "logb":
        xs = xs[xs != 0]
    if name == "tgamma":
        xs = xs[(xs > 0) | (np.abs(xs - np.round(xs)) > 1e-3)]   # not at the poles
    got = np.array([f(float(x)) for x in xs])
    with np.errstate(all="ignore"):
        want = ref(xs)
    # sinpi/cospi and lgamma have zeros where only an absolute bound makes sense
    atol = 1e-15 if name in ("sinpi", "cospi") else 1e-14 if name == "lgamma" else 1e-300
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)


BINARY = {"atan2": (np.arctan2, (-100, 100), (-100, 100), 4e-15),
          "pow": (np.power, (1e-3, 100), (-100, 100), 2e-13),
          "hypot": (np.hypot, (-1e100, 1e100), (-1e100, 1e100), 4e-15),
          "rhypot": (lambda a, b: 1 / np.hypot(a, b), (-1e3, 1e3), (-1e3, 1e3), 4e-15),
          "fmod": (np.fmod, (-1e3, 1e3), (0.5, 30), 0.0),
          "remainder": (np.vectorize(math.remainder), (-1e3, 1e3), (0.5, 30), 0.0)}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(jit, name):
    ref, dx, dy, rtol = BINARY[name]
    f = jit(math_f64.BINARY[name], 2)
    rng = np.random.default_rng(1)
    xs, ys = rng.uniform(*dx, 2000), rng.uniform(*dy, 2000)
    got = np.array([f(float(x), float(y)) for x, y in zip(xs, ys)])
    np.testing.assert_allclose(got, ref(xs, ys), rtol=rtol, atol=1e-300 if rtol else 1e-12, err_msg=name)


def test_specials(jit):
    exp, log, sin, erf = (jit(math_f64.UNARY[n], 1) for n in ("exp", "log", "sin", "erf"))
    assert exp(1000.0) == math.inf and exp(-1000.0) == 0.0 and math.isnan(exp(math.nan))
    assert exp(-math.inf) == 0.0 and exp(math.inf) == math.inf
    assert log(0.0) == -math.inf and log(math.inf) == math.inf and math.isnan(log(-1.0)) and math.isnan(log(math.nan))
    assert math.isnan(sin(math.inf)) and sin(-0.0) == 0.0
    assert erf(math.inf) == 1.0 and erf(-math.inf) == -1.0 and math.isnan(erf(math.nan))
    pw = jit(math_f64.BINARY["pow"], 2)
    for x, y in [(2.0, 10.0), (-2.0, 3.0), (-2.0, 2.0), (0.0, 2.0), (0.0, -1.0), (3.0, 0.0), (math.nan, 0.0),
                 (1.0, math.nan)]:
        assert pw(x, y) == pytest.approx(math.pow(x, y) if x or y >= 0 else math.inf, rel=4e-15), (x, y)
    assert math.isnan(pw(-2.0, 0.5))
    at2 = jit(math_f64.BINARY["atan2"], 2)
    for y in (-2.0, -0.0, 0.0, 2.0):
        for x in (-3.0, -0.0, 0.0, 3.0):
            assert at2(y, x) == pytest.approx(math.atan2(y, x), rel=4e-15) and \
                math.copysign(1, at2(y, x)) == math.copysign(1, math.atan2(y, x)), (y, x)
