"""Float arithmetic per dtype, fmod-style ``%``, type promotion between mixed operands, scalars."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Out, Rand, Scalar
from ._common import BLOCK, GRID, N
from .elementwise_int import add_kernel, mod_kernel, mul_kernel, neg_kernel, sub_kernel, truediv_kernel


@triton.jit
def promote_kernel(x_ptr, y_ptr, z_ptr, OUT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    z = tl.load(x_ptr + offs) * tl.load(y_ptr + offs)
    tl.static_assert(z.dtype == OUT)
    tl.store(z_ptr + offs, z)


@triton.jit
def float_scalar_kernel(x_ptr, z_ptr, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    z = x * s + 0.5
    tl.static_assert(z.dtype == tl.float32)
    tl.store(z_ptr + offs, z)


@triton.jit
def literal_keeps_type_kernel(x_ptr, z_ptr, BLOCK: tl.constexpr):
    # a Python float literal does not widen a half/bfloat tensor; an int tensor becomes fp32
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    z = x * 1.5 - 2.25
    tl.store(z_ptr + offs, z)


def _case(op, kernel, tag, ref, y=None, **kw):
    return Case(
        id=f"elementwise/{op}-{tag}", kernel=kernel, grid=GRID, constexprs={"BLOCK": BLOCK},
        inputs={"x_ptr": Rand(tag, (N,)), "y_ptr": y or Rand(tag, (N,))},
        outputs={"z_ptr": Out(tag, (N,))}, reference=ref, **kw)


CASES = []
for _t in dtypes.FLOAT_DTYPES:
    CASES += [
        _case("add", add_kernel, _t, lambda x_ptr, y_ptr: x_ptr + y_ptr),
        _case("sub", sub_kernel, _t, lambda x_ptr, y_ptr: x_ptr - y_ptr),
        _case("mul", mul_kernel, _t, lambda x_ptr, y_ptr: x_ptr * y_ptr),
        _case("truediv", truediv_kernel, _t, lambda x_ptr, y_ptr: x_ptr / y_ptr,
              y=Rand(_t, (N,), 0.25, 4.0) if _t != "fp64" else None),
        Case(id=f"elementwise/neg-{_t}", kernel=neg_kernel, grid=GRID, constexprs={"BLOCK": BLOCK},
             inputs={"x_ptr": Rand(_t, (N,))}, outputs={"z_ptr": Out(_t, (N,))},
             reference=lambda x_ptr: -x_ptr),
        Case(id=f"elementwise/literal-{_t}", kernel=literal_keeps_type_kernel, grid=GRID,
             constexprs={"BLOCK": BLOCK}, inputs={"x_ptr": Rand(_t, (N,))}, outputs={"z_ptr": Out(_t, (N,))},
             reference=lambda x_ptr: x_ptr * 1.5 - 2.25),
    ]
for _t in ("fp32", "fp64"):
    # float % follows C's fmod: the result has the sign of the dividend
    CASES.append(_case("mod", mod_kernel, _t, lambda x_ptr, y_ptr: np.fmod(x_ptr, y_ptr),
                       y=Rand(_t, (N,), -3.0, 3.0, min_abs=0.25)))

# (x dtype, y dtype, result dtype) by Triton's promotion rules
PROMOTIONS = [
    ("int8", "int32", "int32"), ("int16", "int64", "int64"), ("uint8", "int8", "uint8"),
    ("int32", "uint32", "uint32"), ("uint16", "int32", "int32"), ("int16", "fp16", "fp16"),
    ("int32", "fp32", "fp32"), ("fp16", "fp32", "fp32"), ("fp16", "bf16", "fp16"),
    ("bf16", "fp32", "fp32"), ("fp32", "fp64", "fp64"), ("int64", "bf16", "fp32"), ("bf16", "bf16", "bf16"),
]
for _x, _y, _z in PROMOTIONS:
    _small = {"fp16": (-20, 20), "bf16": (-20, 20)}
    _lo, _hi = _small.get(_y, (None, None)) if dtypes.is_int(_x) else (None, None)
    CASES.append(Case(
        id=f"elementwise/promote-{_x}-{_y}" if _x != _y else f"elementwise/promote-{_x}-same", kernel=promote_kernel, grid=GRID,
        constexprs={"BLOCK": BLOCK, "OUT": getattr(tl, dtypes.LANG_NAME[_z])},
        inputs={"x_ptr": Rand(_x, (N,), _lo, _hi), "y_ptr": Rand(_y, (N,))},
        outputs={"z_ptr": Out(_z, (N,))},
        # integers are converted to the result type before multiplying (and wrap there)
        reference=(lambda x_ptr, y_ptr, z=_z: x_ptr.astype(dtypes.STORAGE[z]) * y_ptr.astype(dtypes.STORAGE[z]))
        if dtypes.is_int(_z) else (lambda x_ptr, y_ptr: x_ptr.astype(np.float64) * y_ptr)))

for _t in ("int32", "fp16", "fp32"):
    CASES.append(Case(
        id=f"elementwise/float-scalar-{_t}", kernel=float_scalar_kernel, grid=GRID, constexprs={"BLOCK": BLOCK},
        inputs={"x_ptr": Rand(_t, (N,), -1000, 1000), "s": Scalar("fp32", -2.0, 2.0)},
        outputs={"z_ptr": Out("fp32", (N,))},
        reference=lambda x_ptr, s: x_ptr.astype(np.float64) * float(np.float32(s)) + 0.5))
CASES.append(Case(
    id="elementwise/literal-int32", kernel=literal_keeps_type_kernel, grid=GRID, constexprs={"BLOCK": BLOCK},
    inputs={"x_ptr": Rand("int32", (N,), -1000, 1000)}, outputs={"z_ptr": Out("fp32", (N,))},
    reference=lambda x_ptr: x_ptr * 1.5 - 2.25))
