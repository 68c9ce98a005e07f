"""Integer arithmetic with wrap-around; ``//`` and ``%`` truncate toward zero like C; ``/`` of
two integers gives fp32."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Out, Rand, Scalar
from ._common import BLOCK, GRID, N, no_min, nonzero_small, trunc_div, trunc_mod


@triton.jit
def add_kernel(x_ptr, y_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


@triton.jit
def sub_kernel(x_ptr, y_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs) - tl.load(y_ptr + offs))


@triton.jit
def mul_kernel(x_ptr, y_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs) * tl.load(y_ptr + offs))


@triton.jit
def truediv_kernel(x_ptr, y_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs) / tl.load(y_ptr + offs))


@triton.jit
def floordiv_kernel(x_ptr, y_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs) // tl.load(y_ptr + offs))


@triton.jit
def mod_kernel(x_ptr, y_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs) % tl.load(y_ptr + offs))


@triton.jit
def neg_kernel(x_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, -tl.load(x_ptr + offs))


@triton.jit
def scalar_ops_kernel(x_ptr, z_ptr, s, BLOCK: tl.constexpr):
    # a runtime scalar and Python literals keep the tensor's integer type
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(z_ptr + offs, (x * 3 - s) + 7)


def _binary(op, kernel, tag, ref, x=None, y=None, out=None):
    return Case(
        id=f"elementwise/{op}-{tag}", kernel=kernel, grid=GRID, constexprs={"BLOCK": BLOCK},
        inputs={"x_ptr": x or Rand(tag, (N,)), "y_ptr": y or Rand(tag, (N,))},
        outputs={"z_ptr": Out(out or tag, (N,))},
        reference=lambda x_ptr, y_ptr: ref(x_ptr, y_ptr),
    )


def _f32_div(a, b):
    return (a.astype(np.float32) / b.astype(np.float32)).astype(np.float64)


CASES = []
for _t in dtypes.INTEGER_DTYPES:
    CASES += [
        _binary("add", add_kernel, _t, lambda a, b: a + b),
        _binary("sub", sub_kernel, _t, lambda a, b: a - b),
        _binary("mul", mul_kernel, _t, lambda a, b: a * b),
        _binary("truediv", truediv_kernel, _t, _f32_div, y=nonzero_small(_t), out="fp32"),
        _binary("floordiv", floordiv_kernel, _t, trunc_div, x=no_min(_t), y=nonzero_small(_t)),
        _binary("mod", mod_kernel, _t, trunc_mod, x=no_min(_t), y=nonzero_small(_t)),
    ]
    CASES.append(Case(
        id=f"elementwise/neg-{_t}", kernel=neg_kernel, grid=GRID, constexprs={"BLOCK": BLOCK},
        inputs={"x_ptr": Rand(_t, (N,))}, outputs={"z_ptr": Out(_t, (N,))},
        reference=lambda x_ptr: (np.zeros_like(x_ptr) - x_ptr)))

for _t in ("int32", "int64", "uint32"):
    CASES.append(Case(
        id=f"elementwise/scalar-ops-{_t}", kernel=scalar_ops_kernel, grid=GRID, constexprs={"BLOCK": BLOCK},
        inputs={"x_ptr": Rand(_t, (N,)), "s": Scalar("int32", 1, 1000)},
        outputs={"z_ptr": Out(_t, (N,))},
        reference=lambda x_ptr, s: (x_ptr * x_ptr.dtype.type(3) - x_ptr.dtype.type(s)) + x_ptr.dtype.type(7)))
