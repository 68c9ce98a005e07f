"""Tensor methods real kernels call (``x.cast(tl.float32)``, ``x.item()``, ``p.atomic_add(v)``,
``bp.advance(...)``, ``x.sqrt_rn()``): Triton's ``@_tensor_member_fn`` surface."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Out, Rand, tol


@triton.jit
def cast_method_kernel(x_ptr, z_ptr, OUT: tl.constexpr, BITCAST: tl.constexpr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    tl.store(z_ptr + offs, x.cast(OUT, bitcast=BITCAST))


@triton.jit
def item_kernel(x_ptr, z_ptr, B: tl.constexpr):
    # a one-element reduction result read as a scalar and broadcast back
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    s = tl.sum(x.reshape(1, B), axis=1).item()
    tl.store(z_ptr + offs, x - s)


@triton.jit
def atomic_method_kernel(x_ptr, z_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    (z_ptr + offs % 4).atomic_add(tl.load(x_ptr + offs))
    (z_ptr + 4 + offs % 4).atomic_max(tl.load(x_ptr + offs))


@triton.jit
def advance_method_kernel(x_ptr, z_ptr, N, B: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, (N,), (1,), (0,), (B,), (0,))
    acc = tl.zeros((B,), tl.float32)
    for _ in range(0, tl.cdiv(N, B)):
        acc += tl.load(p, boundary_check=(0,), padding_option="zero").cast(tl.float32)
        p = p.advance((B,))
    tl.store(z_ptr + tl.arange(0, B), acc)


@triton.jit
def sqrt_rn_method_kernel(x_ptr, z_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs).sqrt_rn())


B = 128
CASES = []
for _src, _dst in (("fp16", "fp32"), ("fp32", "bf16"), ("int32", "fp32"), ("fp32", "int32"), ("int8", "int32"),
                   ("uint8", "fp16")):
    _lo, _hi = (-100, 100) if not _src.startswith("uint") else (0, 200)
    CASES.append(Case(
        id=f"compat/cast-method-{_src}-to-{_dst}", kernel=cast_method_kernel,
        constexprs={"OUT": getattr(tl, dtypes.LANG_NAME[_dst]), "BITCAST": False, "B": B},
        inputs={"x_ptr": Rand(_src, (B,), _lo, _hi)}, outputs={"z_ptr": Out(_dst, (B,), poison="sentinel")},
        reference=lambda x_ptr, d=_dst: (np.trunc(x_ptr).astype(dtypes.STORAGE[d]) if dtypes.is_int(d) else x_ptr)))
CASES.append(Case(
    id="compat/cast-method-bitcast-fp32-to-int32", kernel=cast_method_kernel,
    constexprs={"OUT": tl.int32, "BITCAST": True, "B": B},
    inputs={"x_ptr": Rand("fp32", (B,))}, outputs={"z_ptr": Out("int32", (B,), poison="sentinel")},
    reference=lambda x_ptr: x_ptr.astype(np.float32).view(np.int32)))
CASES.append(Case(
    id="compat/item-fp32", kernel=item_kernel, constexprs={"B": B},
    inputs={"x_ptr": Rand("fp32", (B,))}, outputs={"z_ptr": Out("fp32", (B,))},
    reference=lambda x_ptr: x_ptr - x_ptr.sum(), **tol(dtypes.ACCUM_TOLERANCE, "fp32")))
CASES.append(Case(
    id="compat/atomic-methods-int32", kernel=atomic_method_kernel, constexprs={"B": B},
    inputs={"x_ptr": Rand("int32", (B,), -1000, 1000)},
    outputs={"z_ptr": Out("int32", (8,), init=Rand("int32", (8,), -1000, 1000))},
    reference=lambda x_ptr, z_ptr: np.concatenate([
        z_ptr[:4] + x_ptr.reshape(-1, 4).sum(0).astype(np.int32),
        np.maximum(z_ptr[4:], x_ptr.reshape(-1, 4).max(0))])))
CASES.append(Case(
    id="compat/advance-method-fp16", kernel=advance_method_kernel, constexprs={"B": 64},
    inputs={"x_ptr": Rand("fp16", (300,)), "N": 300}, outputs={"z_ptr": Out("fp32", (64,))},
    reference=lambda x_ptr: np.pad(x_ptr, (0, 320 - 300)).reshape(5, 64).sum(0),
    **tol(dtypes.ACCUM_TOLERANCE, "fp32")))
CASES.append(Case(
    id="compat/sqrt-rn-method-fp32", kernel=sqrt_rn_method_kernel, constexprs={"B": B},
    inputs={"x_ptr": Rand("fp32", (B,), 0.01, 100)}, outputs={"z_ptr": Out("fp32", (B,))},
    reference=lambda x_ptr: np.sqrt(x_ptr)))
