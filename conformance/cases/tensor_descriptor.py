"""Tensor descriptors: ``tl.make_tensor_descriptor`` in a kernel, ``desc.load`` / ``desc.store``
on ragged shapes (outside lanes read zero or NaN, outside stores are dropped), a matmul through
descriptors, and host ``TensorDescriptor`` objects passed as kernel arguments."""
import numpy as np

import tritium as triton
import tritium.language as tl
from tritium.tools.tensor_descriptor import TensorDescriptor

from .. import dtypes
from ..case import Case, Out, Rand, tol

M, N = 50, 70  # not multiples of the 16x32 blocks


@triton.jit
def desc_copy_kernel(x_ptr, z_ptr, M, N, PAD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # every block of the (padded) grid, read through a descriptor and written densely
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN], padding_option=PAD)
    pm, pn = tl.program_id(0), tl.program_id(1)
    v = src.load([pm * BM, pn * BN])
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    tl.store(z_ptr + rm[:, None] * (tl.num_programs(1) * BN) + rn[None, :], v)


@triton.jit
def desc_store_kernel(x_ptr, z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    dst = tl.make_tensor_descriptor(z_ptr, [M, N], [N, 1], [BM, BN])
    off = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    dst.store(off, src.load(off) * 2 + 1)


@triton.jit
def desc_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    pm, pn = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(a_desc.load([pm, k]), b_desc.load([k, pn]))
    c_desc.store([pm, pn], acc)


@triton.jit
def host_desc_kernel(x_desc, z_desc, scale, BM: tl.constexpr, BN: tl.constexpr):
    # x_desc and z_desc are host TensorDescriptors
    off = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    z_desc.store(off, tl.load_tensor_descriptor(x_desc, off) * scale)


class _HostDescriptors:
    """Launches ``kernel`` with the named array arguments wrapped in host TensorDescriptors
    (``blocks``: name -> block shape, or ``(block shape, padding)``)."""

    def __init__(self, kernel, blocks: dict):
        self.fn, self.blocks = kernel, blocks
        self.__name__ = kernel.__name__

    def _desc(self, name, a):
        spec = self.blocks[name]
        block, padding = spec if isinstance(spec, tuple) else (spec, "zero")
        return TensorDescriptor.from_tensor(a, block, padding)

    def _wrap(self, args, kwargs):
        names = list(self.fn.arg_names)
        args = [self._desc(n, a) if n in self.blocks else a for n, a in zip(names, args)]
        kwargs = {k: (self._desc(k, v) if k in self.blocks else v) for k, v in kwargs.items()}
        return args, kwargs

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            a, k = self._wrap(args, kwargs)
            return self.fn[grid](*a, **k)
        return launch

    def warmup(self, *args, **kwargs):
        a, k = self._wrap(args, kwargs)
        return self.fn.warmup(*a, **k)


def _padded(x, fill, rows, cols):
    out = np.full((rows, cols), fill, dtype=x.dtype if x.dtype.kind in 'iu' else np.float64)
    out[:M, :N] = x
    return out


CASES = []
for _t in ("fp32", "fp16", "int32"):
    for _pad in (("zero", "nan") if _t != "int32" else ("zero",)):
        CASES.append(Case(
            id=f"tensor_descriptor/load-pad-{_pad}-{_t}", kernel=desc_copy_kernel, grid=(4, 3),
            constexprs={"PAD": _pad, "BM": 16, "BN": 32},
            inputs={"x_ptr": Rand(_t, (M, N)), "M": M, "N": N},
            outputs={"z_ptr": Out(_t, (64, 96), poison="sentinel")},
            reference=lambda x_ptr, f=(np.nan if _pad == "nan" else 0): _padded(x_ptr, f, 64, 96)))
for _t in ("fp32", "fp16"):
    CASES.append(Case(
        id=f"tensor_descriptor/store-ragged-{_t}", kernel=desc_store_kernel, grid=(4, 3), constexprs={"BM": 16, "BN": 32},
        inputs={"x_ptr": Rand(_t, (M, N)), "M": M, "N": N},
        outputs={"z_ptr": Out(_t, (M * N + 64,), init=Rand(_t, (M * N + 64,)))},
        reference=lambda x_ptr, z_ptr: np.concatenate([(x_ptr * 2 + 1).ravel(), z_ptr[M * N:]])))
for _t in ("fp16", "bf16"):
    CASES.append(Case(
        id=f"tensor_descriptor/matmul-ragged-{_t}", kernel=desc_matmul_kernel, grid=(4, 3),
        constexprs={"BM": 64, "BN": 64, "BK": 32},
        inputs={"a_ptr": Rand(_t, (200, 300), -1, 1), "b_ptr": Rand(_t, (300, 130), -1, 1), "M": 200, "N": 130, "K": 300},
        outputs={"c_ptr": Out("fp32", (200, 130), poison="sentinel")},
        reference=lambda a_ptr, b_ptr: a_ptr @ b_ptr, **tol(dtypes.ACCUM_TOLERANCE, "fp32")))
for _t in ("fp32", "fp16"):
    CASES.append(Case(
        id=f"tensor_descriptor/host-descriptor-{_t}",
        kernel=_HostDescriptors(host_desc_kernel, {"x_desc": [16, 32], "z_desc": [16, 32]}), grid=(4, 3),
        constexprs={"BM": 16, "BN": 32}, inputs={"x_desc": Rand(_t, (M, N)), "scale": 3.0},
        outputs={"z_desc": Out(_t, (M, N), poison="sentinel")},
        reference=lambda x_desc: x_desc * 3.0))
