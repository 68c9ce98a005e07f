"""Typing of ``tl.dot_scaled``: microscaled (OCP MX) operands, their e8m0 scales, the result.

Operands are given per ``format``: ``e2m1`` as ``uint8`` holding two values along K (the first
in the low nibble, bits 0-3; ``lhs_k_pack``/``rhs_k_pack`` false: along M / N instead); ``e4m3``/``e5m2`` as ``uint8`` bits or
``float8e4nv``/``float8e5``; ``bf16``/``fp16`` as their float type or ``uint16`` bits.  A scale is a ``uint8`` tensor of e8m0 exponents, one per 32
elements along K: ``[M, K // 32]`` for the lhs, ``[N, K // 32]`` for the rhs (rows of its
operand's non-K dimension first, as Triton takes it); ``None`` leaves that operand unscaled.
"""
from __future__ import annotations

from ..language import dtypes as tl
from ..language.core import tensor
from ..ttir.dot_scaled import FORMATS, MX_BLOCK, DotScaledOp, unpacked_shape
from .builder import Builder
from .semantic import _unwrap, bitcast, full, to_tensor

#: format -> (the float dtype its bits are read as, the unsigned dtype that may carry those bits)
_FLOAT_OF = {"e4m3": (tl.float8e4nv, tl.uint8), "e5m2": (tl.float8e5, tl.uint8),
             "bf16": (tl.bfloat16, tl.uint16), "fp16": (tl.float16, tl.uint16)}


def _format(fmt, which: str) -> str:
    fmt = _unwrap(fmt)
    if not isinstance(fmt, str):
        raise TypeError(f"dot_scaled: {which}_format must be a constexpr string, got {fmt!r}")
    if fmt not in FORMATS:
        raise ValueError(f"Invalid float format: {fmt}. dot_scaled's formats are {', '.join(FORMATS)}")
    return fmt


def _operand(x, fmt: str, which: str, builder: Builder) -> tensor:
    """The operand as the op takes it: ``uint8`` for e2m1, else bitcast to the format's float type."""
    x = _unwrap(x)
    if not isinstance(x, tensor) or not x.type.is_block():
        raise TypeError(f"dot_scaled: {which} must be a tensor, got {x!r}")
    dt = x.type.scalar
    if fmt == "e2m1":
        if dt != tl.uint8:
            raise TypeError(f"dot_scaled: e2m1 format must be packed as uint8 (two values a byte). Got {dt}")
        return x
    flt, bits = _FLOAT_OF[fmt]
    if dt == flt:
        return x
    if dt != bits:
        raise TypeError(f"dot_scaled: Unexpected dtype for {fmt}. Got {dt}; expected {flt} or its bits as {bits}")
    return bitcast(x, flt, builder)


def _scale(s, which: str, want: list[int]) -> tensor | None:
    s = _unwrap(s)
    if s is None:
        return None
    if not isinstance(s, tensor) or not s.type.is_block():
        raise TypeError(f"dot_scaled: {which}_scale must be a uint8 tensor of e8m0 exponents or None, got {s!r}")
    if s.type.scalar not in (tl.uint8, tl.int8):
        raise TypeError(f"dot_scaled: {which}_scale must hold uint8 e8m0 exponents, got {s.type.scalar}")
    if list(s.type.shape) != want:
        # the wording (the found shape's sizes quoted) is the one Triton 3.6's own tests match exactly
        raise ValueError(f"{which}_scale must be a tensor of shape {want}. Got {[str(d) for d in s.type.shape]}")
    return s


def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc, fast_math, lhs_k_pack, rhs_k_pack,
               out_dtype, builder: Builder) -> tensor:
    lf, rf = _format(lhs_format, "lhs"), _format(rhs_format, "rhs")
    a, b = _operand(lhs, lf, "lhs", builder), _operand(rhs, rf, "rhs", builder)
    sa, sb = list(a.type.shape), list(b.type.shape)
    if len(sa) != len(sb) or len(sa) not in (2, 3):
        raise ValueError(f"dot_scaled: Both inputs must be either 2D or 3D; (lhs: {sa} vs rhs: {sb})")
    lk, rk = bool(_unwrap(lhs_k_pack)), bool(_unwrap(rhs_k_pack))
    for fmt, pack, which in ((lf, lk, "lhs"), (rf, rk, "rhs")):
        if not pack and fmt != "e2m1":
            raise ValueError(f"dot_scaled: only mxfp4 inputs can be packed along a dimension different than K "
                             f"({which}_k_pack=False with {which}_format={fmt!r}; only 'e2m1' can be)")
    rank = len(sa)
    *batch, m, k = unpacked_shape(sa, lf, lk, rank - 1)
    *batch_b, k2, n = unpacked_shape(sb, rf, rk, rank - 2)
    if k != k2:
        raise ValueError(f"dot_scaled: Reduction dimension should pack the same number of elements; "
                         f"(lhs: {sa} as {lf} holds K={k} vs rhs: {sb} as {rf} holds K={k2})")
    if batch != batch_b:
        raise ValueError(f"dot_scaled: batch dimensions differ: {batch} vs {batch_b}")
    if m < 16 or n < 16 or k < MX_BLOCK or k % MX_BLOCK:
        raise ValueError(f"dot_scaled needs M and N of at least 16 and K a multiple of {MX_BLOCK}, "
                         f"got M={m}, N={n}, K={k}")
    scale_a = _scale(lhs_scale, "lhs", [*batch, m, k // MX_BLOCK])
    scale_b = _scale(rhs_scale, "rhs", [*batch, n, k // MX_BLOCK])
    out_dtype = _unwrap(out_dtype)
    if out_dtype is None:
        out_dtype = tl.float32
    if out_dtype != tl.float32:
        raise ValueError(f"dot_scaled: Only float32 is supported for out_dtype at the moment, got {out_dtype}")
    shape = [*batch, m, n]
    ret = tl.block_type(tl.float32, shape)
    acc = _unwrap(acc)
    if acc is None:
        acc = full(shape, 0.0, tl.float32, builder)
    else:
        acc = to_tensor(acc, builder)
        if not acc.type.is_block() or list(acc.type.shape) != shape or acc.type.scalar != tl.float32:
            got = f"{acc.type.scalar} {list(acc.type.shape)}" if acc.type.is_block() else str(acc.type)
            raise TypeError(f"dot_scaled: the accumulator must be float32 of shape {shape}, got {got}")
    fm = _unwrap(fast_math)
    if not isinstance(fm, (bool, int)):
        raise TypeError(f"dot_scaled: fast_math must be a constexpr bool, got {fm!r}")
    fm = bool(fm)
    op = DotScaledOp(a.handle, scale_a.handle if scale_a is not None else None, lf,
                     b.handle, scale_b.handle if scale_b is not None else None, rf, acc.handle, fm, lk, rk)
    return tensor(builder.create(op), ret)
