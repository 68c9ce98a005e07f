"""Comparison operators per dtype (results stored as int8), mixed signedness, NaN."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Gen, Out
from ._common import BLOCK, GRID, N


@triton.jit
def compare_kernel(x_ptr, y_ptr, z_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "eq":
        c = x == y
    elif OP == "ne":
        c = x != y
    elif OP == "lt":
        c = x < y
    elif OP == "le":
        c = x <= y
    elif OP == "gt":
        c = x > y
    else:
        c = x >= y
    tl.static_assert(c.dtype == tl.int1)
    tl.store(z_ptr + offs, c.to(tl.int8))


OPS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
       "gt": np.greater, "ge": np.greater_equal}


def _few_values(tag):
    """Values drawn from a small set, so that equal pairs are common; both signs, never zero."""
    if dtypes.is_float(tag):
        pool = np.array([-3.5, -1.0, -0.25, 0.5, 1.0, 2.75, 100.0])
    elif dtypes.is_signed(tag):
        lo, hi = dtypes.int_range(tag)
        pool = np.array([lo, -7, -1, 1, 2, 7, hi], dtype=np.int64)
    else:
        pool = np.array([1, 2, 7, 127, 128, 200, dtypes.int_range(tag)[1]], dtype=np.uint64)
    return Gen(tag, (N,), lambda rng, shape: rng.choice(pool, size=shape))


def _with_nan(tag):
    def fn(rng, shape):
        v = rng.choice(np.array([-1.5, 1.0, 2.0, np.inf, -np.inf]), size=shape)
        v[rng.random(shape) < 0.3] = np.nan
        return v
    return Gen(tag, (N,), fn)


def _case(name, op, x, y):
    return Case(id=f"compare/{name}", kernel=compare_kernel, grid=GRID, constexprs={"OP": op, "BLOCK": BLOCK},
                inputs={"x_ptr": x, "y_ptr": y}, outputs={"z_ptr": Out("int8", (N,))},
                reference=lambda x_ptr, y_ptr: OPS[op](x_ptr, y_ptr).astype(np.int8))


CASES = []
for _t in ("int8", "int16", "int64", "uint8", "uint32", "fp16", "bf16", "fp32", "fp64"):
    for _op in OPS:
        CASES.append(_case(f"{_op}-{_t}", _op, _few_values(_t), _few_values(_t)))
for _op in OPS:
    CASES.append(_case(f"{_op}-nan-fp32", _op, _with_nan("fp32"), _with_nan("fp32")))


def _mixed(op):
    # int32 against uint32 compares as uint32: -1 is the largest value
    def ref(x_ptr, y_ptr):
        return OPS[op](x_ptr.view(np.uint32), y_ptr).astype(np.int8)
    return Case(id=f"compare/{op}-int32-uint32", kernel=compare_kernel, grid=GRID,
                constexprs={"OP": op, "BLOCK": BLOCK},
                inputs={"x_ptr": _few_values("int32"), "y_ptr": _few_values("uint32")},
                outputs={"z_ptr": Out("int8", (N,))}, reference=ref)


CASES += [_mixed(op) for op in ("lt", "ge")]
