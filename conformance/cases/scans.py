"""Scans: cumsum, cumprod, associative_scan with a jitted combine function, reverse, 1-D and 2-D."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Out, Rand, tol

M, K = 8, 64


@triton.jit
def _running_max(a, b):
    return tl.maximum(a, b)


@triton.jit
def _affine_combine(a1, b1, a2, b2):
    # composition of x -> a*x + b maps: the first-order linear recurrence
    return a1 * a2, b1 * a2 + b2


@triton.jit
def scan_kernel(x_ptr, z_ptr, OP: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr,
                M: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rk = tl.arange(0, K)
    offs = rm[:, None] * K + rk[None, :]
    x = tl.load(x_ptr + offs)
    if OP == "cumsum":
        z = tl.cumsum(x, axis=AXIS, reverse=REVERSE)
    elif OP == "cumprod":
        z = tl.cumprod(x, axis=AXIS, reverse=REVERSE)
    else:
        z = tl.associative_scan(x, AXIS, _running_max, reverse=REVERSE)
    tl.store(z_ptr + offs, z)


@triton.jit
def scan_1d_kernel(x_ptr, z_ptr, K: tl.constexpr):
    r = tl.arange(0, K)
    tl.store(z_ptr + r, tl.cumsum(tl.load(x_ptr + r), axis=0))


@triton.jit
def linear_recurrence_kernel(a_ptr, b_ptr, z_ptr, K: tl.constexpr):
    r = tl.arange(0, K)
    _, h = tl.associative_scan((tl.load(a_ptr + r), tl.load(b_ptr + r)), 0, _affine_combine)
    tl.store(z_ptr + r, h)


def _np_scan(op, x, axis, reverse):
    if reverse:
        x = np.flip(x, axis)
    if op == "cumsum":
        r = np.cumsum(x, axis=axis, dtype=np.float64 if x.dtype.kind == "f" else x.dtype)
    elif op == "cumprod":
        r = np.cumprod(x, axis=axis, dtype=np.float64 if x.dtype.kind == "f" else x.dtype)
    else:
        r = np.maximum.accumulate(x, axis=axis)
    return np.flip(r, axis) if reverse else r


def _recurrence(a_ptr, b_ptr):
    h, out = 0.0, []
    for a, b in zip(a_ptr, b_ptr):
        h = a * h + b
        out.append(h)
    return np.array(out)


CASES = []
for _t in ("fp32", "int32", "fp16", "int64"):
    for _op in ("cumsum", "cumprod", "runmax"):
        for _axis, _rev in ((1, False), (0, False), (1, True)):
            if _op == "cumprod":
                _src = Rand(_t, (M * K,), 0.9, 1.1) if dtypes.is_float(_t) else Rand(_t, (M * K,), -3, 3)
            else:
                _src = Rand(_t, (M * K,)) if dtypes.is_int(_t) else Rand(_t, (M * K,), -2, 2)
            CASES.append(Case(
                id=f"scans/{_op}-{_t}-axis{_axis}" + ("-reverse" if _rev else ""), kernel=scan_kernel,
                constexprs={"OP": _op, "AXIS": _axis, "REVERSE": _rev, "M": M, "K": K},
                inputs={"x_ptr": _src}, outputs={"z_ptr": Out(_t, (M * K,))},
                reference=lambda x_ptr, op=_op, a=_axis, r=_rev: _np_scan(op, x_ptr.reshape(M, K), a, r).ravel(),
                **(tol(dtypes.ACCUM_TOLERANCE, _t) if dtypes.is_float(_t) else {})))
CASES += [
    Case(id="scans/cumsum-1d-fp32", kernel=scan_1d_kernel, constexprs={"K": 1024},
         inputs={"x_ptr": Rand("fp32", (1024,), -1, 1)}, outputs={"z_ptr": Out("fp32", (1024,))},
         reference=lambda x_ptr: np.cumsum(x_ptr), **tol(dtypes.ACCUM_TOLERANCE, "fp32")),
    Case(id="scans/linear-recurrence-tuple-fp32", kernel=linear_recurrence_kernel, constexprs={"K": 256},
         inputs={"a_ptr": Rand("fp32", (256,), 0.5, 0.99), "b_ptr": Rand("fp32", (256,), -1, 1)},
         outputs={"z_ptr": Out("fp32", (256,))}, reference=_recurrence, **tol(dtypes.ACCUM_TOLERANCE, "fp32")),
]
