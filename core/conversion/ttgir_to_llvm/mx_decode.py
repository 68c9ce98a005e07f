"""Lowering of the microscaling decode ops (``ttg.e2m1_to_fp``, ``ttg.e8m0_to_fp``), register by
register, with integer arithmetic on the destination float's bits (no tables, no target
intrinsics): every GPU backend shares it.  The scalar builders are public so tests can run them."""
from __future__ import annotations

import llvmlite.ir as ir

from .elementwise import map_values
from .lowering import FunctionLowering, lowers
from .types import BF16, F16, F32, I8, I32, const

#: float type -> (integer type of its bits, mantissa bits, exponent bias)
_LAYOUT = {BF16: (ir.IntType(16), 7, 127), F16: (ir.IntType(16), 10, 15), F32: (I32, 23, 127)}


def e2m1_to_float(b: ir.IRBuilder, byte: ir.Value, high: bool, dst: ir.Type) -> ir.Value:
    """The e2m1 value in one nibble of ``byte`` (``i8``) as ``dst`` (bf16, f16 or f32), exactly.

    A code ``s.ee.m`` with ``ee > 0`` is ``2^(ee-1) * (1 + m/2)``: its bits are the code's three low
    bits shifted to the top of the mantissa plus ``bias - 1`` in the exponent field; ``0.01`` (the
    one subnormal) is 0.5 and ``0.00`` is zero."""
    ity, man, bias = _LAYOUT[dst]
    width = ity.width
    v = b.zext(byte, ity)
    if high:
        v = b.lshr(v, const(ity, 4))
    mag = b.and_(v, const(ity, 7))
    half = (bias - 1) << man  # the bits of 0.5
    normal = b.add(b.shl(mag, const(ity, man - 1)), const(ity, half))
    small = b.mul(mag, const(ity, half))  # 0 -> 0.0, 1 -> 0.5
    bits = b.select(b.icmp_unsigned("<", mag, const(ity, 2)), small, normal)
    sign = b.shl(b.and_(v, const(ity, 8)), const(ity, width - 4))
    return b.bitcast(b.or_(bits, sign), dst)


def e8m0_to_float(b: ir.IRBuilder, code: ir.Value, dst: ir.Type, fast_math: bool = False) -> ir.Value:
    """``2^(code - 127)`` as ``dst``.  bf16 and f32 share f32's exponent field, so the code is
    shifted into it: code 0 is then the subnormal 2^-127 and 0xFF NaN (with ``fast_math``: zero and
    inf, the plain bits).  f16 rounds the f32 value (inf above 2^15, zero below 2^-25)."""
    ity, man, _ = _LAYOUT[BF16 if dst == BF16 else F32]
    v = b.zext(code, ity)
    bits = b.shl(v, const(ity, man))
    if not fast_math:
        bits = b.select(b.icmp_unsigned("==", v, const(ity, 0)), const(ity, 1 << (man - 1)), bits)
        bits = b.select(b.icmp_unsigned("==", v, const(ity, 0xFF)), const(ity, 0x1FF << (man - 1)), bits)
    if dst == BF16:
        return b.bitcast(bits, BF16)
    f = b.bitcast(bits, F32)
    return f if dst == F32 else b.fptrunc(f, dst)


@lowers("ttg.e2m1_to_fp")
def _e2m1(fl: FunctionLowering, op) -> None:
    dst, high = fl.ty(op.result.type), op.is_high
    map_values(fl, op, lambda x: e2m1_to_float(fl.builder, x, high, dst))


@lowers("ttg.e8m0_to_fp")
def _e8m0(fl: FunctionLowering, op) -> None:
    dst, fast = fl.ty(op.result.type), op.fast_math
    map_values(fl, op, lambda x: e8m0_to_float(fl.builder, x, dst, fast))


__all__ = ["e2m1_to_float", "e8m0_to_float", "I8"]
