"""Language rules new in Triton 3.6: `if` on a one-element tensor (taken as its element), and a
scalar parameter's dtype annotation fixing the type the argument is passed as."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Out, Rand


@triton.jit
def unsplat_if_kernel(x_ptr, z_ptr, threshold, B: tl.constexpr):
    pid = tl.program_id(0)
    first = tl.load(x_ptr + pid * B + tl.arange(0, 1))  # shape [1]
    r = pid * B + tl.arange(0, B)
    x = tl.load(x_ptr + r)
    if first > threshold:  # a one-element tensor as the condition
        y = x * 2
    else:
        y = -x
    tl.store(z_ptr + r, y)


def _unsplat_ref(x_ptr, threshold):
    rows = x_ptr.reshape(8, -1)
    return np.where(rows[:, :1] > threshold, rows * 2, -rows).reshape(-1)


@triton.jit
def annotated_scalars_kernel(z_ptr, h: tl.float16, b: tl.bfloat16, u: tl.uint8, B: tl.constexpr):
    tl.static_assert(h.dtype == tl.float16)
    tl.static_assert(b.dtype == tl.bfloat16)
    tl.static_assert(u.dtype == tl.uint8)
    r = tl.arange(0, B)
    tl.store(z_ptr + r, tl.where(r == 0, h.to(tl.float32), tl.where(r == 1, b.to(tl.float32), u.to(tl.float32))))


def _bf16(v: float) -> np.float32:
    bits = int(np.array([v], np.float32).view(np.uint32)[0])
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return np.array([bits], np.uint32).view(np.float32)[0]


def _annotated_ref(h, b, u):
    out = np.full(16, np.float32(u % 256), np.float32)
    out[0], out[1] = np.float32(np.float16(h)), _bf16(b)
    return out


CASES = [
    Case(id="lang36/if-one-element-tensor", kernel=unsplat_if_kernel, grid=(8,), constexprs={"B": 64},
         inputs={"x_ptr": Rand("fp32", (8 * 64,), -1, 1), "threshold": 0.0},
         outputs={"z_ptr": Out("fp32", (8 * 64,))}, reference=_unsplat_ref),
    Case(id="lang36/annotated-scalar-dtypes", kernel=annotated_scalars_kernel, grid=(1,), constexprs={"B": 16},
         inputs={"h": 1.0 / 3.0, "b": 2.0 / 7.0, "u": 3},
         outputs={"z_ptr": Out("fp32", (16,))}, reference=lambda h, b, u: _annotated_ref(h, b, u)),
]
