"""Masked loads and stores, ``other``, ragged sizes, 2-D masks."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Out, Rand, Scalar

B = 128


@triton.jit
def ragged_kernel(x_ptr, z_ptr, n, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    m = offs < n
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=m) * 3, mask=m)


@triton.jit
def other_kernel(x_ptr, z_ptr, n, B: tl.constexpr):
    # masked-off lanes read `other`; every lane is stored
    offs = tl.arange(0, B)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=-7))


@triton.jit
def no_other_kernel(x_ptr, z_ptr, n, B: tl.constexpr):
    # masked-off lanes of a load without `other` read zero (as in Triton); every lane is stored
    offs = tl.arange(0, B)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=offs < n))


@triton.jit
def data_mask_kernel(x_ptr, z_ptr, B: tl.constexpr):
    # a mask computed from the data: only positive values are stored
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    tl.store(z_ptr + offs, x, mask=x > 0)


@triton.jit
def mask_2d_kernel(x_ptr, z_ptr, rows, cols, BR: tl.constexpr, BC: tl.constexpr):
    rr = tl.arange(0, BR)[:, None]
    rc = tl.arange(0, BC)[None, :]
    m = (rr < rows) & (rc < cols)
    x = tl.load(x_ptr + rr * cols + rc, mask=m, other=0.0)
    tl.store(z_ptr + rr * cols + rc, x + tl.sum(x, axis=1)[:, None], mask=m)


CASES = []
for _t in ("fp32", "int8", "fp16", "int64"):
    CASES.append(Case(
        id=f"masks/ragged-{_t}", kernel=ragged_kernel, grid=(3,), constexprs={"B": B},
        inputs={"x_ptr": Rand(_t, (3 * B,), -40, 40), "n": 300},
        outputs={"z_ptr": Out(_t, (3 * B,), init=Rand(_t, (3 * B,)))},
        reference=lambda x_ptr, z_ptr: np.concatenate([x_ptr[:300] * x_ptr.dtype.type(3), z_ptr[300:]])))
for _t in ("fp32", "int32"):
    CASES.append(Case(
        id=f"masks/other-{_t}", kernel=other_kernel, constexprs={"B": B},
        inputs={"x_ptr": Rand(_t, (B,)), "n": Scalar("int32", 1, B - 1)}, outputs={"z_ptr": Out(_t, (B,))},
        reference=lambda x_ptr, n: np.where(np.arange(B) < n, x_ptr, -7).astype(x_ptr.dtype)))
    CASES.append(Case(
        id=f"masks/no-other-reads-zero-{_t}", kernel=no_other_kernel, constexprs={"B": B},
        inputs={"x_ptr": Rand(_t, (B,)), "n": Scalar("int32", 1, B - 1)}, outputs={"z_ptr": Out(_t, (B,))},
        reference=lambda x_ptr, n: np.where(np.arange(B) < n, x_ptr, 0).astype(x_ptr.dtype)))
    CASES.append(Case(
        id=f"masks/data-dependent-{_t}", kernel=data_mask_kernel, constexprs={"B": B},
        inputs={"x_ptr": Rand(_t, (B,), -100, 100)}, outputs={"z_ptr": Out(_t, (B,), init=Rand(_t, (B,)))},
        reference=lambda x_ptr, z_ptr: np.where(x_ptr > 0, x_ptr, z_ptr)))
CASES.append(Case(
    id="masks/2d-fp32", kernel=mask_2d_kernel, constexprs={"BR": 16, "BC": 32},
    inputs={"x_ptr": Rand("fp32", (13 * 21,)), "rows": 13, "cols": 21},
    outputs={"z_ptr": Out("fp32", (13 * 21 + 32,), init=Rand("fp32", (13 * 21 + 32,)))},
    reference=lambda x_ptr, z_ptr: np.concatenate([
        (x_ptr.reshape(13, 21) + x_ptr.reshape(13, 21).sum(1, keepdims=True)).ravel(), z_ptr[13 * 21:]]),
    rtol=1e-5, atol=1e-5))
