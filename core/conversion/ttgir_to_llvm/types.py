"""TTGIR types -> ``llvmlite.ir`` types, and constants of those types."""
from __future__ import annotations

import struct

import llvmlite.ir as ir
from xdsl.dialects.builtin import (BFloat16Type, Float16Type, Float32Type, Float64Type, IndexType, IntegerType,
                                   TensorType)
from xdsl.ir import Attribute

from ...ttgir.types import AsyncTokenType
from ...ttir.types import PointerType


class BFloat16(ir.Type):
    """llvmlite.ir has no ``bfloat``; constants print as ``0xR`` followed by the 16 bits."""

    null = "0.0"
    intrinsic_name = "bf16"

    def _to_string(self) -> str:
        return "bfloat"

    def __eq__(self, other) -> bool:
        return isinstance(other, BFloat16)

    def __hash__(self) -> int:
        return hash("bfloat")

    def format_constant(self, value) -> str:
        bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
        if value != value:
            bits = 0x7FC0
        return f"0xR{bits & 0xFFFF:04X}"


BF16 = BFloat16()
I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
_FP8 = ("f8E4M3FN", "f8E5M2", "f8E4M3B11FNUZ", "f8E4M3FNUZ", "f8E5M2FNUZ")


def is_fp8(t: Attribute) -> bool:
    return type(t).__name__.startswith("Float8")


def scalar_type(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, TensorType) else t


def llvm_type(t: Attribute, global_as: int = 1) -> ir.Type:
    """The LLVM type of one element of ``t`` (fp8 values live in ``i8``)."""
    t = scalar_type(t)
    if isinstance(t, IntegerType):
        return ir.IntType(t.width.data)
    if isinstance(t, Float32Type):
        return F32
    if isinstance(t, Float16Type):
        return F16
    if isinstance(t, Float64Type):
        return F64
    if isinstance(t, BFloat16Type):
        return BF16
    if is_fp8(t):
        return I8
    if isinstance(t, PointerType):
        space = t.address_space.data
        return ir.PointerType(addrspace=global_as if space == 1 else space)
    if isinstance(t, IndexType):
        return I64
    if isinstance(t, AsyncTokenType):  # an ordering token carries no value: a placeholder
        return I32
    raise NotImplementedError(f"no LLVM type for {t}")


def is_float(ty: ir.Type) -> bool:
    return isinstance(ty, (ir.HalfType, ir.FloatType, ir.DoubleType, BFloat16))


def bits_of(ty: ir.Type) -> int:
    if isinstance(ty, ir.IntType):
        return ty.width
    if isinstance(ty, (ir.HalfType, BFloat16)):
        return 16
    if isinstance(ty, ir.FloatType):
        return 32
    if isinstance(ty, ir.DoubleType):
        return 64
    if isinstance(ty, ir.PointerType):
        return 64
    raise TypeError(f"no bit width for {ty}")


def const(ty: ir.Type, value) -> ir.Constant:
    if isinstance(ty, ir.IntType):
        v = int(value)
        if ty.width == 1:
            return ir.Constant(ty, 1 if v else 0)
        v &= (1 << ty.width) - 1
        return ir.Constant(ty, v)
    if isinstance(ty, ir.PointerType):
        return ir.Constant(ty, None) if not value else ir.Constant(I64, int(value)).inttoptr(ty)
    return ir.Constant(ty, float(value))


def int_of_bits(bits: int) -> ir.IntType:
    return ir.IntType(bits)


# --- elements as they live in memory (i1 as a byte, pointers as i64) ---------------------------
def mem_type(ty: ir.Type) -> ir.Type:
    """How an element lives in memory: booleans as bytes, pointers as 64-bit integers."""
    if ty == I1:
        return I8
    if isinstance(ty, ir.PointerType):
        return I64
    return ty


def to_mem(b: ir.IRBuilder, v: ir.Value, ty: ir.Type) -> ir.Value:
    """``v`` (of type ``ty``) as :func:`mem_type` stores it."""
    if ty == I1:
        return b.zext(v, I8)
    if isinstance(ty, ir.PointerType):
        return b.ptrtoint(v, I64)
    return v


def from_mem(b: ir.IRBuilder, v: ir.Value, ty: ir.Type) -> ir.Value:
    """A value of type ``ty`` back from its :func:`mem_type` form."""
    if ty == I1:
        return b.icmp_unsigned("!=", v, const(I8, 0))
    if isinstance(ty, ir.PointerType):
        return b.inttoptr(v, ty)
    return v


def elem_bytes(ty: ir.Type) -> int:
    return max(bits_of(mem_type(ty)) // 8, 1)


def shared_store(fl, base_ptr, index: ir.Value, value: ir.Value, pred=None) -> None:
    """``base[index] = value`` (element-sized slots) in shared memory, under ``pred`` if given
    (``fl``: the function being lowered)."""
    b = fl.builder
    ty = value.type
    v = to_mem(b, value, ty)
    p = b.gep(base_ptr, [index], source_etype=mem_type(ty))
    if pred is None:
        b.store(v, p)
    else:
        with b.if_then(pred):
            b.store(v, p)


def shared_load(fl, base_ptr, index: ir.Value, ty: ir.Type) -> ir.Value:
    b = fl.builder
    mty = mem_type(ty)
    return from_mem(b, b.load(b.gep(base_ptr, [index], source_etype=mty), typ=mty), ty)
