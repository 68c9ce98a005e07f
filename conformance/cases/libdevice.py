"""``tl.extra.libdevice`` (and the ``extra.cuda`` / ``extra.hip`` paths): the device math library
against float64 numpy / ``math`` references.  Each case calls one function by name; the
``errors``-style cases check the messages for a wrong dtype and an unknown symbol."""
import math

import numpy as np

import tritium as triton
import tritium.language as tl
from tritium.language.extra import libdevice
from tritium.language.extra.cuda import libdevice as cuda_libdevice
from tritium.language.extra.hip import libdevice as hip_libdevice

from .. import dtypes
from ..case import Case, Err, Gen, Out, Rand, tol

B = 256


@triton.jit
def unary_kernel(x_ptr, z_ptr, FN: tl.constexpr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(z_ptr + offs, getattr(libdevice, FN)(tl.load(x_ptr + offs)))


@triton.jit
def binary_kernel(x_ptr, y_ptr, z_ptr, FN: tl.constexpr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(z_ptr + offs, getattr(libdevice, FN)(tl.load(x_ptr + offs), tl.load(y_ptr + offs)))


@triton.jit
def ternary_kernel(x_ptr, y_ptr, w_ptr, z_ptr, FN: tl.constexpr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(z_ptr + offs, getattr(libdevice, FN)(tl.load(x_ptr + offs), tl.load(y_ptr + offs),
                                                  tl.load(w_ptr + offs)))


@triton.jit
def import_paths_kernel(x_ptr, z_ptr, B: tl.constexpr):
    # the paths Triton kernels import libdevice from, and a Python scalar argument
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    tl.store(z_ptr + offs, cuda_libdevice.tanh(x) + hip_libdevice.pow(x, 2.0) + libdevice.exp(x) * 0.5)


@triton.jit
def fp16_argument_kernel(x_ptr, z_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(z_ptr + offs, libdevice.tanh(tl.load(x_ptr + offs)))


@tl.core.extern
def no_such_function(arg0, _semantic=None):
    # a user-written device-library wrapper, as Triton kernels write them
    return tl.core.extern_elementwise("", "", [arg0], {(tl.core.dtype("fp32"),): ("__nv_no_such_function",
                                                                                  tl.core.dtype("fp32"))},
                                      is_pure=True, _semantic=_semantic)


@tl.core.extern
def user_tanh(arg0, _semantic=None):
    return tl.core.extern_elementwise("", "", [arg0], {(tl.core.dtype("fp32"),): ("__nv_tanhf", tl.core.dtype("fp32"))},
                                      is_pure=True, _semantic=_semantic)


@triton.jit
def unknown_symbol_kernel(x_ptr, z_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    tl.store(z_ptr + offs, no_such_function(x))


@triton.jit
def user_extern_kernel(x_ptr, z_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(z_ptr + offs, user_tanh(tl.load(x_ptr + offs)))


def _erfinv(y):
    x = 0.0
    for _ in range(60):
        x -= (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


_v = np.vectorize
_F64 = {
    "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: 10.0 ** x, "expm1": np.expm1,
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "cbrt": np.cbrt, "rcbrt": lambda x: 1 / np.cbrt(x),
    "erf": _v(math.erf), "erfc": _v(math.erfc), "erfinv": _v(_erfinv),
    "normcdf": _v(lambda x: 0.5 * math.erfc(-x / math.sqrt(2))), "lgamma": _v(math.lgamma),
    "tgamma": _v(math.gamma), "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint,
    "nearbyint": np.rint, "round": lambda x: np.trunc(x + np.copysign(0.5, x)), "sinpi": lambda x: np.sin(np.pi * x),
    "cospi": lambda x: np.cos(np.pi * x), "logb": lambda x: np.floor(np.log2(np.abs(x))),
    "abs": np.abs, "saturatef": lambda x: np.clip(x, 0, 1), "sqrt_rn": np.sqrt, "rcp_rn": lambda x: 1 / x,
    "rsqrt_rn": lambda x: 1 / np.sqrt(x), "fast_expf": np.exp, "fast_logf": np.log, "fast_sinf": np.sin,
    "fast_cosf": np.cos, "fast_log2f": np.log2, "fast_exp10f": lambda x: 10.0 ** x,
}
# (low, high) input range per function (default [-4, 4])
_DOMAIN = {"asin": (-1, 1), "acos": (-1, 1), "acosh": (1, 8), "atanh": (-0.95, 0.95), "log": (0.01, 100),
           "log2": (0.01, 100), "log10": (0.01, 100), "log1p": (-0.9, 50), "sqrt": (0, 100), "rsqrt": (0.01, 100),
           "rcbrt": (0.1, 8), "erfinv": (-0.99, 0.99), "lgamma": (0.1, 8), "tgamma": (0.2, 6), "sinh": (-6, 6),
           "cosh": (-6, 6), "exp": (-20, 20), "exp2": (-20, 20), "exp10": (-6, 6), "tan": (-1.4, 1.4),
           "logb": (0.01, 1000), "sqrt_rn": (0, 100), "rsqrt_rn": (0.01, 100), "fast_logf": (0.01, 100),
           "fast_log2f": (0.01, 100), "fast_sinf": (-3, 3), "fast_cosf": (-3, 3), "fast_expf": (-10, 10),
           "fast_exp10f": (-4, 4), "saturatef": (-2, 2), "tanh": (-6, 6)}
_LOOSE = {"fast_expf", "fast_logf", "fast_sinf", "fast_cosf", "fast_log2f", "fast_exp10f", "tgamma", "lgamma",
          "erfinv", "sinpi", "cospi"}
BIN = {
    "pow": (np.power, (0.1, 4), (-3, 3)), "atan2": (np.arctan2, None, None), "hypot": (np.hypot, None, None),
    "rhypot": (lambda a, b: 1 / np.hypot(a, b), None, None), "fmod": (np.fmod, None, (0.5, 3)),
    "remainder": (np.vectorize(math.remainder, otypes=[np.float64]), (0, 4), (0.5, 3)),  # IEEE, not numpy's "copysign": (np.copysign, None, None),
    "fdim": (lambda a, b: np.maximum(a - b, 0), None, None), "fmax": (np.fmax, None, None),
    "fmin": (np.fmin, None, None), "div_rn": (np.divide, None, None), "div_rz": (np.divide, None, None),
    "add_rd": (np.add, None, None), "mul_ru": (np.multiply, None, None), "sub_rn": (np.subtract, None, None),
    "fast_dividef": (np.divide, None, (0.5, 4)), "fast_powf": (np.power, (0.1, 4), (-3, 3)),
}

CASES = []
for _name, _ref in _F64.items():
    _lo, _hi = _DOMAIN.get(_name, (-4, 4))
    for _t in (("fp32", "fp64") if _name in ("tanh", "exp", "log", "erf", "sqrt", "sin", "log1p") else ("fp32",)):
        _tol = dict(zip(("rtol", "atol"), dtypes.FAST_MATH_TOLERANCE)) if _name in _LOOSE else tol(dtypes.MATH_TOLERANCE, _t)
        CASES.append(Case(
            id=f"libdevice/{_name}-{_t}", kernel=unary_kernel, constexprs={"FN": _name, "B": B},
            inputs={"x_ptr": Rand(_t, (B,), _lo, _hi)}, outputs={"z_ptr": Out(_t, (B,))},
            reference=lambda x_ptr, f=_ref: f(x_ptr), **_tol))
for _name, (_ref, _dx, _dy) in BIN.items():
    for _t in (("fp32", "fp64") if _name in ("pow", "atan2", "div_rn") else ("fp32",)):
        _tol = dict(zip(("rtol", "atol"), dtypes.FAST_MATH_TOLERANCE)) if _name.startswith("fast") else tol(dtypes.MATH_TOLERANCE, _t)
        CASES.append(Case(
            id=f"libdevice/{_name}-{_t}", kernel=binary_kernel, constexprs={"FN": _name, "B": B},
            inputs={"x_ptr": Rand(_t, (B,), *(_dx or (-4, 4))), "y_ptr": Rand(_t, (B,), *(_dy or (-4, 4)))},
            outputs={"z_ptr": Out(_t, (B,))}, reference=lambda x_ptr, y_ptr, f=_ref: f(x_ptr, y_ptr), **_tol))
CASES.append(Case(
    id="libdevice/pow-fp32-int32", kernel=binary_kernel, constexprs={"FN": "pow", "B": B},
    inputs={"x_ptr": Rand("fp32", (B,), -3, 3), "y_ptr": Rand("int32", (B,), -4, 6)}, outputs={"z_ptr": Out("fp32", (B,))},
    reference=lambda x_ptr, y_ptr: np.power(x_ptr, y_ptr.astype(np.float64)), **tol(dtypes.MATH_TOLERANCE, "fp32")))
CASES.append(Case(
    id="libdevice/ldexp-fp32", kernel=binary_kernel, constexprs={"FN": "ldexp", "B": B},
    inputs={"x_ptr": Rand("fp32", (B,)), "y_ptr": Rand("int32", (B,), -20, 20)}, outputs={"z_ptr": Out("fp32", (B,))},
    reference=lambda x_ptr, y_ptr: np.ldexp(x_ptr, y_ptr)))
for _t in ("fp32", "fp64"):
    CASES.append(Case(
        id=f"libdevice/fma-{_t}", kernel=ternary_kernel, constexprs={"FN": "fma", "B": B},
        inputs={"x_ptr": Rand(_t, (B,)), "y_ptr": Rand(_t, (B,)), "w_ptr": Rand(_t, (B,))},
        outputs={"z_ptr": Out(_t, (B,))}, reference=lambda x_ptr, y_ptr, w_ptr: x_ptr * y_ptr + w_ptr,
        **tol(dtypes.MATH_TOLERANCE, _t)))


def _specials(rng, shape):
    v = rng.uniform(-4, 4, shape)
    v[::5], v[1::5], v[2::5] = np.nan, np.inf, -np.inf
    v[3::10] = -0.0
    return v


for _name, _ref in (("isnan", np.isnan), ("isinf", np.isinf), ("signbit", np.signbit)):
    for _t in ("fp32", "fp64"):
        CASES.append(Case(
            id=f"libdevice/{_name}-{_t}", kernel=unary_kernel, constexprs={"FN": _name, "B": B},
            inputs={"x_ptr": Gen(_t, (B,), _specials)}, outputs={"z_ptr": Out("int32", (B,), poison="sentinel")},
            check=lambda out, inp, f=_ref: None if np.array_equal(out["z_ptr"] != 0, f(inp["x_ptr"]))
            else "wrong truth values"))
CASES.append(Case(
    id="libdevice/finitef-fp32", kernel=unary_kernel, constexprs={"FN": "finitef", "B": B},
    inputs={"x_ptr": Gen("fp32", (B,), _specials)}, outputs={"z_ptr": Out("int32", (B,), poison="sentinel")},
    check=lambda out, inp: None if np.array_equal(out["z_ptr"] != 0, np.isfinite(inp["x_ptr"])) else "wrong truth values"))
for _name, _ref in (("float2int_rn", np.rint), ("float2int_rz", np.trunc), ("float2int_rd", np.floor),
                    ("float2int_ru", np.ceil)):
    CASES.append(Case(
        id=f"libdevice/{_name}", kernel=unary_kernel, constexprs={"FN": _name, "B": B},
        inputs={"x_ptr": Rand("fp32", (B,), -1000, 1000)}, outputs={"z_ptr": Out("int32", (B,), poison="sentinel")},
        reference=lambda x_ptr, f=_ref: f(x_ptr).astype(np.int32)))
CASES.append(Case(
    id="libdevice/int2float_rn", kernel=unary_kernel, constexprs={"FN": "int2float_rn", "B": B},
    inputs={"x_ptr": Rand("int32", (B,))}, outputs={"z_ptr": Out("fp32", (B,))},
    reference=lambda x_ptr: x_ptr.astype(np.float64)))
CASES.append(Case(
    id="libdevice/float_as_int", kernel=unary_kernel, constexprs={"FN": "float_as_int", "B": B},
    inputs={"x_ptr": Rand("fp32", (B,))}, outputs={"z_ptr": Out("int32", (B,), poison="sentinel")},
    reference=lambda x_ptr: x_ptr.astype(np.float32).view(np.int32)))
CASES.append(Case(
    id="libdevice/llrint-fp32", kernel=unary_kernel, constexprs={"FN": "llrint", "B": B},
    inputs={"x_ptr": Rand("fp32", (B,), -1e6, 1e6)}, outputs={"z_ptr": Out("int64", (B,), poison="sentinel")},
    reference=lambda x_ptr: np.rint(x_ptr).astype(np.int64)))


def _bits(fn, width=32):
    return lambda x_ptr: np.array([fn(int(v) & ((1 << width) - 1)) for v in x_ptr], np.int64).astype(np.int32)


for _name, _ref in (("clz", _bits(lambda u: 32 - u.bit_length())), ("popc", _bits(lambda u: bin(u).count("1"))),
                    ("ffs", _bits(lambda u: (u & -u).bit_length())),
                    ("brev", _bits(lambda u: int(format(u, "032b")[::-1], 2) - (1 << 32) * (u & 1)))):
    CASES.append(Case(
        id=f"libdevice/{_name}-int32", kernel=unary_kernel, constexprs={"FN": _name, "B": B},
        inputs={"x_ptr": Rand("int32", (B,))}, outputs={"z_ptr": Out("int32", (B,), poison="sentinel")},
        reference=_ref))
CASES.append(Case(
    id="libdevice/mulhi-int32", kernel=binary_kernel, constexprs={"FN": "mulhi", "B": B},
    inputs={"x_ptr": Rand("int32", (B,)), "y_ptr": Rand("int32", (B,))},
    outputs={"z_ptr": Out("int32", (B,), poison="sentinel")},
    reference=lambda x_ptr, y_ptr: ((x_ptr.astype(np.int64) * y_ptr.astype(np.int64)) >> 32).astype(np.int32)))
CASES.append(Case(
    id="libdevice/import-paths", kernel=import_paths_kernel, constexprs={"B": B},
    inputs={"x_ptr": Rand("fp32", (B,), -3, 3)}, outputs={"z_ptr": Out("fp32", (B,))},
    reference=lambda x_ptr: np.tanh(x_ptr) + x_ptr ** 2 + np.exp(x_ptr) * 0.5, **tol(dtypes.MATH_TOLERANCE, "fp32")))
CASES.append(Case(
    id="libdevice/error-fp16-argument", kernel=fp16_argument_kernel, constexprs={"B": B},
    inputs={"x_ptr": Rand("fp16", (B,))}, outputs={"z_ptr": Out("fp16", (B,))},
    expect_error=Err("libdevice.tanh", "fp16", "fp32", line="libdevice.tanh(tl.load(x_ptr + offs))")))
CASES.append(Case(
    id="libdevice/error-unknown-symbol", kernel=unknown_symbol_kernel, constexprs={"B": B},
    inputs={"x_ptr": Rand("fp32", (B,))}, outputs={"z_ptr": Out("fp32", (B,))},
    expect_error=Err("__nv_no_such_function", "backend", line="no_such_function(x)")))
CASES.append(Case(
    id="libdevice/user-extern-wrapper", kernel=user_extern_kernel, constexprs={"B": B},
    inputs={"x_ptr": Rand("fp32", (B,))}, outputs={"z_ptr": Out("fp32", (B,))},
    reference=lambda x_ptr: np.tanh(x_ptr), **tol(dtypes.MATH_TOLERANCE, "fp32")))
