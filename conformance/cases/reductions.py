"""Reductions over a (M, K) tile: sum, max, min, argmax, argmin, xor_sum and tl.reduce with a
jitted combine function; axis 0, 1 and None; keep_dims; NaN."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Gen, Out, Rand, tol

M, K = 8, 64


@triton.jit
def _max_nan_combine(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _sum_of_squares_combine(a, b):
    return a + b


@triton.jit
def reduce_kernel(x_ptr, z_ptr, OP: tl.constexpr, AXIS: tl.constexpr, KEEP: tl.constexpr,
                  M: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rk = tl.arange(0, K)
    x = tl.load(x_ptr + rm[:, None] * K + rk[None, :])
    if OP == "sum":
        z = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "max":
        z = tl.max(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "min":
        z = tl.min(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "argmax":
        z = tl.argmax(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "argmin":
        z = tl.argmin(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "xor_sum":
        z = tl.xor_sum(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "max_nan":
        z = tl.reduce(x, AXIS, _max_nan_combine, keep_dims=KEEP)
    else:
        z = tl.reduce(x * x, AXIS, _sum_of_squares_combine, keep_dims=KEEP)
    if AXIS == 0:
        if KEEP:
            tl.store(z_ptr + rk[None, :], z)
        else:
            tl.store(z_ptr + rk, z)
    else:
        if KEEP:
            tl.store(z_ptr + rm[:, None], z)
        else:
            tl.store(z_ptr + rm, z)


@triton.jit
def reduce_all_kernel(x_ptr, z_ptr, OP: tl.constexpr, M: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rk = tl.arange(0, K)
    x = tl.load(x_ptr + rm[:, None] * K + rk[None, :])
    if OP == "sum":
        z = tl.sum(x)
    elif OP == "max":
        z = tl.max(x)
    elif OP == "min":
        z = tl.min(x)
    elif OP == "argmax":
        z = tl.argmax(tl.ravel(x), axis=0)
    elif OP == "argmin":
        z = tl.argmin(tl.ravel(x), axis=0)
    elif OP == "xor_sum":
        z = tl.xor_sum(tl.ravel(x), axis=0)
    else:
        z = tl.sum(x, axis=None, keep_dims=True)
        tl.static_assert(len(z.shape) == 2)
        z = tl.reshape(z, ())
    tl.store(z_ptr, z)


def _np_op(op):
    return {
        "sum": lambda x, a, k: np.sum(x, axis=a, keepdims=k, dtype=np.float64 if x.dtype.kind == "f" else x.dtype),
        "max": lambda x, a, k: np.max(x, axis=a, keepdims=k),
        "min": lambda x, a, k: np.min(x, axis=a, keepdims=k),
        # ties go to the lowest index, like numpy's
        "argmax": lambda x, a, k: np.argmax(x, axis=a, keepdims=k).astype(np.int32),
        "argmin": lambda x, a, k: np.argmin(x, axis=a, keepdims=k).astype(np.int32),
        "xor_sum": lambda x, a, k: np.bitwise_xor.reduce(x, axis=a, keepdims=k),
        "max_nan": lambda x, a, k: np.max(x, axis=a, keepdims=k),  # np.max propagates NaN
        "sumsq": lambda x, a, k: np.sum(x * x, axis=a, keepdims=k, dtype=np.float64 if x.dtype.kind == "f" else x.dtype),
        "sum_keep": lambda x, a, k: np.sum(x, dtype=np.float64 if x.dtype.kind == "f" else x.dtype),
    }[op]


def _few(tag):
    """Integer-valued data from a small set: ties for arg-reductions, exact float sums."""
    return Gen(tag, (M * K,), lambda rng, shape: rng.choice(np.array([-9, -4, -1, 1, 2, 5, 9]), size=shape))


def _nans(tag):
    def fn(rng, shape):
        v = rng.uniform(-4, 4, shape)
        v[rng.integers(0, M * K, 3)] = np.nan  # a few rows get a NaN
        return v
    return Gen(tag, (M * K,), fn)


def _out_shape(axis, keep):
    if axis == 0:
        return (1, K) if keep else (K,)
    return (M, 1) if keep else (M,)


def _case(op, tag, axis, keep, src, out_tag=None, **kw):
    out_tag = out_tag or ("int32" if op.startswith("arg") else tag)
    name = f"reductions/{op}-{tag}-axis{axis}" + ("-keepdims" if keep else "")
    return Case(id=name, kernel=reduce_kernel,
                constexprs={"OP": op, "AXIS": axis, "KEEP": keep, "M": M, "K": K},
                inputs={"x_ptr": src}, outputs={"z_ptr": Out(out_tag, _out_shape(axis, keep), poison="sentinel")},
                reference=lambda x_ptr: _np_op(op)(x_ptr.reshape(M, K), axis, keep), **kw)


CASES = []
for _t in ("fp32", "fp16", "int32", "int8", "uint16", "fp64"):
    _src = Rand(_t, (M * K,), -100, 100) if dtypes.is_int(_t) else Rand(_t, (M * K,))
    _sum_kw = tol(dtypes.ACCUM_TOLERANCE, _t) if dtypes.is_float(_t) else {}
    for _axis in (0, 1):
        CASES.append(_case("sum", _t, _axis, False, Rand(_t, (M * K,)) if dtypes.is_int(_t) else _src, **_sum_kw))
        CASES.append(_case("max", _t, _axis, False, _src))
        CASES.append(_case("min", _t, _axis, _axis == 1, _src))
        CASES.append(_case("argmax", _t, _axis, False, _few(_t)))
        CASES.append(_case("argmin", _t, _axis, _axis == 0, _few(_t)))
    if dtypes.is_int(_t):
        CASES.append(_case("xor_sum", _t, 1, False, Rand(_t, (M * K,))))
    CASES.append(_case("sum", _t, 0, True, _src, **_sum_kw))
# A sum of M*K values in [-100, 100] can land near zero, where a relative tolerance means nothing:
# the absolute error of a tree sum in fp32 is bounded by ceil(log2(n)) * eps * sum|x|.
_all_sum_tol = {"rtol": 1e-4, "atol": 9 * 2.0 ** -23 * M * K * 100}
for _t in ("fp32", "int32"):
    CASES.append(_case("sumsq", _t, 1, False, Rand(_t, (M * K,), -100, 100), **tol(dtypes.ACCUM_TOLERANCE, _t)))
    for _op in ("sum", "max", "min", "argmax", "argmin", "xor_sum", "sum_keep"):
        if _op == "xor_sum" and _t != "int32":
            continue
        _out = "int32" if _op.startswith("arg") else _t
        CASES.append(Case(
            id=f"reductions/{_op}-{_t}-all", kernel=reduce_all_kernel, constexprs={"OP": _op, "M": M, "K": K},
            inputs={"x_ptr": _few(_t) if _op.startswith("arg") else Rand(_t, (M * K,), -100, 100)},
            outputs={"z_ptr": Out(_out, (), poison="sentinel")},
            reference=lambda x_ptr, op=_op: _np_op(op)(x_ptr, None, False),
            **(_all_sum_tol if _t == "fp32" and _op.startswith("sum") else
               tol(dtypes.ACCUM_TOLERANCE, _t) if _t == "fp32" else {})))
# NaN: a sum with a NaN is NaN; a max whose combine function propagates NaN is NaN
for _axis in (0, 1):
    CASES.append(_case("sum", "fp32-nan", _axis, False, _nans("fp32"), out_tag="fp32",
                       **tol(dtypes.ACCUM_TOLERANCE, "fp32")))
    CASES.append(_case("max_nan", "fp32", _axis, False, _nans("fp32")))
