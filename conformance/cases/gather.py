"""``tl.gather`` (one ``tt.gather`` op) on the shapes of Triton's ``test_gather`` -- 1-D, a small
2-D tile, and the two 128x64 sources whose results have 32768 elements along either axis -- and a
3-D tensor gathered along its middle axis, with random in-range indices of 32 and 64 bits, against
``numpy.take_along_axis``.  Outputs start poisoned, so an element the kernel did not write shows."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Gen, Out, Rand


@triton.jit
def gather_1d_kernel(src_ptr, idx_ptr, out_ptr, S: tl.constexpr, I: tl.constexpr):
    src = tl.load(src_ptr + tl.arange(0, S))
    offs = tl.arange(0, I)
    tl.store(out_ptr + offs, tl.gather(src, tl.load(idx_ptr + offs), 0))


@triton.jit
def gather_2d_kernel(src_ptr, idx_ptr, out_ptr, AXIS: tl.constexpr, S0: tl.constexpr, S1: tl.constexpr,
                     I0: tl.constexpr, I1: tl.constexpr):
    src = tl.load(src_ptr + tl.arange(0, S0)[:, None] * S1 + tl.arange(0, S1)[None, :])
    offs = tl.arange(0, I0)[:, None] * I1 + tl.arange(0, I1)[None, :]
    tl.store(out_ptr + offs, tl.gather(src, tl.load(idx_ptr + offs), AXIS))


@triton.jit
def gather_3d_kernel(src_ptr, idx_ptr, out_ptr, AXIS: tl.constexpr, S0: tl.constexpr, S1: tl.constexpr,
                     S2: tl.constexpr, I0: tl.constexpr, I1: tl.constexpr, I2: tl.constexpr):
    src = tl.load(src_ptr + tl.arange(0, S0)[:, None, None] * (S1 * S2) + tl.arange(0, S1)[None, :, None] * S2
                  + tl.arange(0, S2)[None, None, :])
    offs = (tl.arange(0, I0)[:, None, None] * (I1 * I2) + tl.arange(0, I1)[None, :, None] * I2
            + tl.arange(0, I2)[None, None, :])
    tl.store(out_ptr + offs, tl.gather(src, tl.load(idx_ptr + offs), AXIS))


def _indices(extent: int):
    return lambda rng, shape: rng.integers(0, extent, shape)


def _reference(axis: int):
    return lambda src_ptr, idx_ptr: np.take_along_axis(src_ptr, idx_ptr.astype(np.int64), axis)


def _dims(prefix: str, shape) -> dict:
    return {f"{prefix}{d}": n for d, n in enumerate(shape)}


CASES = []
# (source shape, indices shape, axis): Triton's test_gather, then a 3-D one
SHAPES = (([32], [64], 0), ([4, 4], [8, 4], 0), ([128, 64], [256, 64], 0), ([128, 64], [128, 128], 1),
          ([4, 16, 8], [4, 32, 8], 1))
for src_shape, idx_shape, axis in SHAPES:
    rank = len(src_shape)
    for dtype, itype in (("fp32", "int32"), ("int16", "int64")):
        if rank == 1:
            kernel, constexprs = gather_1d_kernel, {"S": src_shape[0], "I": idx_shape[0]}
        else:
            kernel = gather_2d_kernel if rank == 2 else gather_3d_kernel
            constexprs = {"AXIS": axis, **_dims("S", src_shape), **_dims("I", idx_shape)}
        name = "x".join(map(str, src_shape)) + "-" + "x".join(map(str, idx_shape))
        CASES.append(Case(
            id=f"gather/axis{axis}-{name}-{dtype}-{itype}-index", kernel=kernel, constexprs=constexprs,
            inputs={"src_ptr": Rand(dtype, tuple(src_shape)),
                    "idx_ptr": Gen(itype, tuple(idx_shape), _indices(src_shape[axis]))},
            outputs={"out_ptr": Out(dtype, tuple(idx_shape))}, reference=_reference(axis), rtol=0, atol=0))
