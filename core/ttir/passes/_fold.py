"""Constant helpers shared by the folding passes: read the value of a scalar or splat constant,
build constants of a given type, and evaluate integer and float arithmetic at a bit width."""
from __future__ import annotations

import math
import struct

from xdsl.dialects.builtin import (DenseIntOrFPElementsAttr, Float16Type, Float32Type, Float64Type,
                                   FloatAttr, IntegerAttr, IntegerType, TensorType)
from xdsl.ir import Attribute, Operation, SSAValue

from ..arith import ConstantOp
from ..ops import SplatOp
from ..types import element_type

_FLOAT_FMT = {Float16Type: "e", Float32Type: "f", Float64Type: "d"}


def splat_value(attr: Attribute):
    """The single value of a scalar or splat dense attribute, else None."""
    if isinstance(attr, IntegerAttr | FloatAttr):
        return attr.value.data
    if isinstance(attr, DenseIntOrFPElementsAttr):
        data = attr.data.data
        n = len(attr)
        if n == 0 or len(data) % n:
            return None
        w = len(data) // n
        if data != data[:w] * n:  # a byte comparison: cheap even for big tensors
            return None
        return next(iter(attr.iter_values()))
    return None


def const_value(v: SSAValue):
    """The value every element of ``v`` takes when it is a constant (scalar, splat dense, or
    ``tt.splat`` of a constant), else None.  Integers come back as Python ints, i1 as 0 or 1
    (xDSL stores a signless ``true`` as -1)."""
    op = v.owner
    if isinstance(op, ConstantOp):
        c = splat_value(op.value)
    elif isinstance(op, SplatOp):
        c = const_value(op.src)
    else:
        return None
    if c is not None and int_width(v.type) == 1:
        return 1 if c else 0
    return c


def is_const(v: SSAValue, value) -> bool:
    c = const_value(v)
    return c is not None and c == value and not (isinstance(c, float) and math.isnan(c))


def int_width(t: Attribute) -> int | None:
    e = element_type(t)
    return e.width.data if isinstance(e, IntegerType) else None


def wrap(value: int, width: int) -> int:
    """Two's-complement wrap to a signed ``width``-bit value (i1 is 0 or 1)."""
    if width == 1:
        return value & 1
    m = 1 << width
    value %= m
    return value - m if value >= m // 2 else value


def unsigned(value: int, width: int) -> int:
    return value % (1 << width)


def round_float(value: float, t: Attribute) -> float | None:
    """``value`` rounded to the float type ``t``; None for types folded nowhere (bf16, fp8)."""
    fmt = _FLOAT_FMT.get(type(element_type(t)))
    if fmt is None:
        return None
    try:
        return struct.unpack(fmt, struct.pack(fmt, value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def const_attr(t: Attribute, value) -> Attribute:
    e = element_type(t)
    if isinstance(e, IntegerType):
        value = wrap(int(value), e.width.data)
    if isinstance(t, TensorType):
        return DenseIntOrFPElementsAttr.from_list(t, [value])
    if isinstance(e, IntegerType):
        return IntegerAttr(value, e)
    return FloatAttr(float(value), e)


def make_const(t: Attribute, value, like: Operation | None = None) -> ConstantOp:
    op = ConstantOp(const_attr(t, value), t)
    if like is not None:
        op.location = like.location
    return op


_CMPI = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "slt": lambda a, b: a < b,
         "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b}


def cmpi_eval(pred: str, a: int, b: int, w: int) -> bool:
    if pred[0] == "u":
        a, b, pred = unsigned(a, w), unsigned(b, w), "s" + pred[1:]
    return _CMPI[pred](a, b)
