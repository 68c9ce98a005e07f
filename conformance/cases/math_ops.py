"""tl math functions against numpy in float64 (tolerances: ``dtypes.MATH_TOLERANCE``)."""
import math

import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Gen, Out, Rand, tol
from ._common import BLOCK, GRID, N, no_min


@triton.jit
def unary_math_kernel(x_ptr, z_ptr, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if FN == "exp":
        z = tl.exp(x)
    elif FN == "exp2":
        z = tl.exp2(x)
    elif FN == "log":
        z = tl.log(x)
    elif FN == "log2":
        z = tl.log2(x)
    elif FN == "sqrt":
        z = tl.sqrt(x)
    elif FN == "rsqrt":
        z = tl.rsqrt(x)
    elif FN == "sin":
        z = tl.sin(x)
    elif FN == "cos":
        z = tl.cos(x)
    elif FN == "erf":
        z = tl.erf(x)
    elif FN == "floor":
        z = tl.floor(x)
    elif FN == "ceil":
        z = tl.ceil(x)
    elif FN == "sigmoid":
        z = tl.sigmoid(x)
    else:
        z = tl.abs(x)
    tl.store(z_ptr + offs, z)


@triton.jit
def binary_math_kernel(x_ptr, y_ptr, z_ptr, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if FN == "minimum":
        z = tl.minimum(x, y)
    elif FN == "maximum":
        z = tl.maximum(x, y)
    elif FN == "minimum_nan":
        z = tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif FN == "maximum_nan":
        z = tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif FN == "fdiv":
        z = tl.fdiv(x, y)
    elif FN == "div_rn":
        z = tl.div_rn(x, y)
    elif FN == "umulhi":
        z = tl.umulhi(x, y)
    elif FN == "where":
        z = tl.where(x > y, x, y * 2)
    else:
        z = tl.cdiv(x, y)
    tl.store(z_ptr + offs, z)


@triton.jit
def fma_clamp_kernel(x_ptr, y_ptr, w_ptr, z_ptr, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    w = tl.load(w_ptr + offs)
    if FN == "fma":
        z = tl.fma(x, y, w)
    else:
        z = tl.clamp(x, tl.minimum(y, w), tl.maximum(y, w))
    tl.store(z_ptr + offs, z)


_erf = np.vectorize(math.erf)
UNARY = {  # name: (reference, input range)
    "exp": (np.exp, (-10, 10)), "exp2": (np.exp2, (-10, 10)), "log": (np.log, (0.01, 100)),
    "log2": (np.log2, (0.01, 100)), "sqrt": (np.sqrt, (0.01, 100)), "rsqrt": (lambda x: 1 / np.sqrt(x), (0.01, 100)),
    "sin": (np.sin, (-10, 10)), "cos": (np.cos, (-10, 10)), "erf": (_erf, (-3, 3)),
    "floor": (np.floor, (-100, 100)), "ceil": (np.ceil, (-100, 100)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-10, 10)),
}


def _unary(fn, tag, ref, src):
    return Case(id=f"math/{fn}-{tag}", kernel=unary_math_kernel, grid=GRID,
                constexprs={"FN": fn, "BLOCK": BLOCK}, inputs={"x_ptr": src}, outputs={"z_ptr": Out(tag, (N,))},
                reference=lambda x_ptr: ref(x_ptr), **tol(dtypes.MATH_TOLERANCE, tag))


def _binary(fn, tag, ref, x=None, y=None, out=None, **kw):
    return Case(id=f"math/{fn}-{tag}", kernel=binary_math_kernel, grid=GRID,
                constexprs={"FN": fn, "BLOCK": BLOCK},
                inputs={"x_ptr": x or Rand(tag, (N,)), "y_ptr": y or Rand(tag, (N,))},
                outputs={"z_ptr": Out(out or tag, (N,), poison="sentinel")},
                reference=lambda x_ptr, y_ptr: ref(x_ptr, y_ptr), **kw)


def _with_nans(rng, shape):
    v = rng.uniform(-4, 4, shape)
    v[rng.random(shape) < 0.25] = np.nan
    return v


def _umulhi(a, b):
    bits = 8 * a.dtype.itemsize
    ua, ub = (a.astype(np.int64) & 0xFFFFFFFF), (b.astype(np.int64) & 0xFFFFFFFF)
    hi = [(int(p) * int(q)) >> bits for p, q in zip(ua, ub)]
    return np.array(hi, dtype=np.uint64).astype(np.uint32).view(a.dtype) if a.dtype != np.uint32 \
        else np.array(hi, dtype=np.uint64).astype(np.uint32)


CASES = []
for _t in ("fp32", "fp64"):
    for _fn, (_ref, (_lo, _hi)) in UNARY.items():
        CASES.append(_unary(_fn, _t, _ref, Rand(_t, (N,), _lo, _hi)))
    CASES.append(_binary("fdiv", _t, np.divide, y=Rand(_t, (N,), 0.5, 8), **tol(dtypes.MATH_TOLERANCE, _t)))
    if _t == "fp32":  # div_rn: correctly rounded fp32 division
        CASES.append(_binary("div_rn", _t, np.divide, y=Rand(_t, (N,), 0.5, 8)))
    for _fn in ("fma", "clamp"):
        CASES.append(Case(
            id=f"math/{_fn}-{_t}", kernel=fma_clamp_kernel, grid=GRID, constexprs={"FN": _fn, "BLOCK": BLOCK},
            inputs={"x_ptr": Rand(_t, (N,), 0.5, 4), "y_ptr": Rand(_t, (N,), 0.5, 4), "w_ptr": Rand(_t, (N,), 0.5, 4)},
            outputs={"z_ptr": Out(_t, (N,))},
            reference=(lambda x_ptr, y_ptr, w_ptr: x_ptr * y_ptr + w_ptr) if _fn == "fma" else
            (lambda x_ptr, y_ptr, w_ptr: np.clip(x_ptr, np.minimum(y_ptr, w_ptr), np.maximum(y_ptr, w_ptr)))))
    for _fn, _np in (("minimum_nan", np.minimum), ("maximum_nan", np.maximum)):
        CASES.append(_binary(_fn, _t, _np, x=Gen(_t, (N,), _with_nans), y=Gen(_t, (N,), _with_nans)))
for _t in dtypes.ALL_DTYPES:
    _src = no_min(_t) if dtypes.is_int(_t) else Rand(_t, (N,))
    CASES.append(_unary("abs", _t, np.abs, _src))
    CASES.append(_binary("minimum", _t, np.minimum))
    CASES.append(_binary("maximum", _t, np.maximum))
for _t in ("fp16", "bf16", "fp32", "int32"):
    _src = Rand(_t, (N,), -1000, 1000) if _t == "int32" else None
    CASES.append(_binary("where", _t, lambda a, b: np.where(a > b, a, b * 2), x=_src, y=_src))
for _t in ("uint32", "int32"):  # the high half of the unsigned product, whatever the signedness
    CASES.append(_binary("umulhi", _t, _umulhi))
for _t in ("int32", "int64", "uint32"):
    CASES.append(_binary("cdiv", _t, lambda a, b: (a + b - a.dtype.type(1)) // b,
                         x=Rand(_t, (N,), 1, 1 << 20), y=Rand(_t, (N,), 1, 1000)))
