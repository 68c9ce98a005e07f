"""Device functions: jitted helpers, helpers calling helpers, tuple returns, constexpr
parameters, ``noinline=True``."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Out, Rand

B = 256


@triton.jit
def _square_plus(x, c):
    return x * x + c


@triton.jit
def _poly(x):
    return _square_plus(x, 1.0) * 2 - x


@triton.jit
def _sum_and_diff(a, b):
    return a + b, a - b


@triton.jit(noinline=True)
def _scale_block_noinline(src_ptr, dst_ptr, s, pid, B: tl.constexpr):
    # a non-inlined function takes scalars and pointers; it works on memory itself
    offs = pid * B + tl.arange(0, B)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs) * s)


@triton.jit(noinline=True)
def _minmax_noinline(a, b):
    return tl.minimum(a, b), tl.maximum(a, b)


@triton.jit
def _times_const(x, K: tl.constexpr):
    return x * K


@triton.jit
def _store_twice(ptr, offs, v):
    # a helper with side effects and no return value
    tl.store(ptr + offs, v)
    tl.store(ptr + offs + 256, v + 1)


@triton.jit
def helpers_kernel(x_ptr, y_ptr, z_ptr, w_ptr, WHICH: tl.constexpr, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if WHICH == "nested":
        z, w = _poly(x), _square_plus(y, 2.0)
    elif WHICH == "tuple":
        z, w = _sum_and_diff(x, y)
    else:
        z, w = _times_const(x, 4), _times_const(y, 8)
    tl.store(z_ptr + offs, z)
    tl.store(w_ptr + offs, w)


@triton.jit
def noinline_kernel(x_ptr, y_ptr, z_ptr, w_ptr, B: tl.constexpr):
    pid = tl.program_id(0)
    _scale_block_noinline(x_ptr, z_ptr, 3.0, pid, B)
    _scale_block_noinline(y_ptr, w_ptr, -0.5, pid, B)


@triton.jit
def noinline_scalar_kernel(x_ptr, y_ptr, z_ptr, w_ptr):
    pid = tl.program_id(0)
    lo, hi = _minmax_noinline(tl.load(x_ptr + pid), tl.load(y_ptr + pid))
    tl.store(z_ptr + pid, lo)
    tl.store(w_ptr + pid, hi)


@triton.jit
def side_effect_kernel(x_ptr, z_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    _store_twice(z_ptr, offs, tl.load(x_ptr + offs))


@triton.jit
def _double_if_positive(x, flag):
    # no return on the other path: that path falls off the end and returns poison (Triton 3.6)
    if flag > 0:
        return x * 2


@triton.jit
def fallthrough_kernel(x_ptr, z_ptr, flag, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(z_ptr + offs, _double_if_positive(tl.load(x_ptr + offs), flag))


@triton.jit
def _one():
    return 1


@triton.jit
def returned_number_kernel(x_ptr, z_ptr, B: tl.constexpr):
    # a number a function returns is an int32 scalar tensor, so int8 + _one() is computed in int32
    # (127 + 1 = 128); a compile-time 1 would keep int8 and wrap
    offs = tl.arange(0, B)
    y = tl.load(x_ptr + offs) + _one()
    tl.static_assert(y.dtype == tl.int32)
    tl.store(z_ptr + offs, y)


REFS = {
    "nested": lambda x, y: ((x * x + 1) * 2 - x, y * y + 2),
    "tuple": lambda x, y: (x + y, x - y),
    "constexpr-arg": lambda x, y: (x * 4, y * 8),
}

CASES = [
    Case(id=f"functions/{which}-fp32", kernel=helpers_kernel, grid=(2,), constexprs={"WHICH": which, "B": B},
         inputs={"x_ptr": Rand("fp32", (2 * B,)), "y_ptr": Rand("fp32", (2 * B,))},
         outputs={"z_ptr": Out("fp32", (2 * B,)), "w_ptr": Out("fp32", (2 * B,))},
         reference=lambda x_ptr, y_ptr, f=ref: f(x_ptr, y_ptr))
    for which, ref in REFS.items()
]
CASES += [
    Case(id="functions/tuple-int32", kernel=helpers_kernel, grid=(2,), constexprs={"WHICH": "tuple", "B": B},
         inputs={"x_ptr": Rand("int32", (2 * B,)), "y_ptr": Rand("int32", (2 * B,))},
         outputs={"z_ptr": Out("int32", (2 * B,)), "w_ptr": Out("int32", (2 * B,))},
         reference=lambda x_ptr, y_ptr: (x_ptr + y_ptr, x_ptr - y_ptr)),
    Case(id="functions/noinline-pointers-fp32", kernel=noinline_kernel, grid=(2,), constexprs={"B": B},
         inputs={"x_ptr": Rand("fp32", (2 * B,)), "y_ptr": Rand("fp32", (2 * B,))},
         outputs={"z_ptr": Out("fp32", (2 * B,)), "w_ptr": Out("fp32", (2 * B,))},
         reference=lambda x_ptr, y_ptr: (x_ptr * 3, y_ptr * -0.5)),
] + [
    Case(id=f"functions/noinline-tuple-{t}", kernel=noinline_scalar_kernel, grid=(16,),
         inputs={"x_ptr": Rand(t, (16,)), "y_ptr": Rand(t, (16,))},
         outputs={"z_ptr": Out(t, (16,)), "w_ptr": Out(t, (16,))},
         reference=lambda x_ptr, y_ptr: (np.minimum(x_ptr, y_ptr), np.maximum(x_ptr, y_ptr)))
    for t in ("fp32", "int64")
] + [
    Case(id="functions/side-effects", kernel=side_effect_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("int32", (B,), -1000, 1000)}, outputs={"z_ptr": Out("int32", (2 * B,))},
         reference=lambda x_ptr: np.concatenate([x_ptr, x_ptr + 1])),
]

CASES += [
    Case(id="functions/fallthrough-return-fp32", kernel=fallthrough_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("fp32", (B,)), "flag": 5}, outputs={"z_ptr": Out("fp32", (B,))},
         reference=lambda x_ptr, flag: x_ptr * 2),
    Case(id="functions/returned-number-is-int32", kernel=returned_number_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("int8", (B,), 100, 127)}, outputs={"z_ptr": Out("int32", (B,))},
         reference=lambda x_ptr: x_ptr.astype(np.int32) + 1),
]
