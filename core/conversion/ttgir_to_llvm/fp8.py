"""fp8 <-> f32 conversions in LLVM IR by integer arithmetic: portable to every target, exact for
every format of :mod:`tritium.ttir.float_formats` (whose docstring gives the rounding, saturation
and NaN rules these follow).  A value of an fp8 type lives in an ``i8``."""
from __future__ import annotations

import llvmlite.ir as ir

from ...ttir.float_formats import FloatFormat, format_of
from ..target_info import intrinsic
from .types import F32, I8, I32, const, scalar_type


def fp8_format(t) -> FloatFormat:
    """The format of an fp8 TTIR type (or of a tensor type's elements)."""
    fmt = format_of(scalar_type(t))
    if fmt is None:
        raise NotImplementedError(f"{t} is not an fp8 type")
    return fmt


def fp8_to_f32(b: ir.IRBuilder, x: ir.Value, fmt: FloatFormat) -> ir.Value:
    """Exact decode of an fp8 byte."""
    m_bits, bias = fmt.man_bits, fmt.bias
    v = b.zext(x, I32)
    sign = b.shl(b.and_(v, const(I32, fmt.sign_bit)), const(I32, 32 - fmt.bits))
    mag = b.and_(v, const(I32, fmt.sign_bit - 1))
    exp = b.lshr(mag, const(I32, m_bits))
    man = b.and_(mag, const(I32, (1 << m_bits) - 1))
    normal = b.or_(b.shl(b.add(exp, const(I32, 127 - bias)), const(I32, 23)), b.shl(man, const(I32, 23 - m_bits)))
    sub = b.bitcast(b.fmul(b.uitofp(man, F32), const(F32, 2.0 ** (fmt.min_normal_exp - m_bits))), I32)
    bits = b.or_(b.select(b.icmp_unsigned("==", exp, const(I32, 0)), sub, normal), sign)
    nan = const(I32, 0x7FC00000)
    if fmt.nan == "max":  # S.1..1.1..1 is NaN; no infinities
        bits = b.select(b.icmp_unsigned("==", mag, const(I32, fmt.sign_bit - 1)), nan, bits)
    elif fmt.nan == "ieee":  # all-ones exponent: inf (mantissa 0) or NaN
        is_max = b.icmp_unsigned("==", exp, const(I32, (1 << fmt.exp_bits) - 1))
        inf = b.or_(const(I32, 0x7F800000), sign)
        bits = b.select(is_max, b.select(b.icmp_unsigned("==", man, const(I32, 0)), inf, nan), bits)
    elif fmt.nan == "neg_zero":  # the sign bit alone is the NaN
        bits = b.select(b.icmp_unsigned("==", v, const(I32, fmt.sign_bit)), nan, bits)
    return b.bitcast(bits, F32)


def f32_to_fp8(b: ir.IRBuilder, x: ir.Value, fmt: FloatFormat, rtz: bool = False) -> ir.Value:
    """Round an f32 to ``fmt`` (nearest even, or toward zero), saturating to the largest finite
    value; NaN becomes the format's NaN (±max where it has none); no -0 where the format lacks it."""
    m_bits, bias, max_code = fmt.man_bits, fmt.bias, fmt.max_code
    bits = b.bitcast(x, I32)
    negative = b.icmp_unsigned("!=", b.lshr(bits, const(I32, 31)), const(I32, 0))
    absb = b.and_(bits, const(I32, 0x7FFFFFFF))
    shift = 23 - m_bits
    if rtz:
        rounded = absb
    else:
        half = b.add(const(I32, (1 << (shift - 1)) - 1), b.and_(b.lshr(absb, const(I32, shift)), const(I32, 1)))
        rounded = b.add(absb, half)
    normal = b.sub(b.lshr(rounded, const(I32, shift)), const(I32, (127 - bias) << m_bits))
    # below the smallest normal: scale so the code is the rounded integer
    scaled = b.fmul(b.bitcast(absb, F32), const(F32, 2.0 ** (m_bits - fmt.min_normal_exp)))
    sub = b.fptoui(intrinsic(b, "llvm.trunc.f32" if rtz else "llvm.roundeven.f32", F32, [scaled]), I32)
    is_sub = b.icmp_unsigned("<", absb, const(I32, (127 + fmt.min_normal_exp) << 23))
    code = b.select(is_sub, sub, normal)
    code = b.select(b.icmp_unsigned(">", code, const(I32, max_code)), const(I32, max_code), code)
    is_nan = b.icmp_unsigned(">", absb, const(I32, 0x7F800000))
    if fmt.nan == "none":  # ±max, the NaN's sign kept
        code = b.select(is_nan, const(I32, max_code), code)
    sign_ok = negative if fmt.has_neg_zero else b.and_(negative, b.icmp_unsigned("!=", code, const(I32, 0)))
    code = b.or_(code, b.select(sign_ok, const(I32, fmt.sign_bit), const(I32, 0)))
    if fmt.nan_code is not None:  # the format's one canonical NaN, unsigned
        code = b.select(is_nan, const(I32, fmt.nan_code), code)
    return b.trunc(code, I8)


__all__ = ["fp8_format", "fp8_to_f32", "f32_to_fp8"]
