"""Casts: integer / float widening and narrowing, int <-> float, bitcasts, pointers, and the float
conversions ``tt.fp_to_fp`` (fp8 by bit manipulation, portable to every target: :mod:`.fp8`; rtz
modes)."""
from __future__ import annotations

import llvmlite.ir as ir

from .elementwise import map_values
from .fp8 import f32_to_fp8, fp8_format as _fmt, fp8_to_f32
from .lowering import FunctionLowering, lowers
from .types import BF16, F32, I1, I16, bits_of, const, is_fp8, scalar_type
from ..target_info import intrinsic


def _rtz_narrow(b: ir.IRBuilder, x: ir.Value, dst: ir.Type) -> ir.Value:
    """f32 -> f16 / bf16 rounding toward zero: round to nearest, then step back toward zero when
    that went away from it."""
    r = b.fptrunc(x, dst)
    back = b.fpext(r, F32)
    away = b.fcmp_ordered(">", intrinsic(b, "llvm.fabs.f32", F32, [back]), intrinsic(b, "llvm.fabs.f32", F32, [x]))
    rb = b.bitcast(r, I16)
    stepped = b.bitcast(b.sub(rb, const(I16, 1)), dst)
    return b.select(away, stepped, r)


def convert_float(b: ir.IRBuilder, x: ir.Value, src_t, dst_t, src_ty: ir.Type, dst_ty: ir.Type,
                  rtz: bool = False, target=None) -> ir.Value:
    """``x`` of float type ``src_t`` as ``dst_t``; ``target`` (a ``TargetInfo``), when given, widens
    bf16 to f32 its way."""
    src_t, dst_t = scalar_type(src_t), scalar_type(dst_t)
    if src_t == dst_t:
        return x
    if target is not None and src_ty == BF16 and bits_of(dst_ty) >= 32 and not is_fp8(dst_t):
        x = target.bf16_to_f32(b, x)
        return x if dst_ty == F32 else b.fpext(x, dst_ty)
    if is_fp8(src_t):
        x = fp8_to_f32(b, x, _fmt(src_t))
        src_ty = F32
        if dst_ty == F32 and not is_fp8(dst_t):
            return x
    if is_fp8(dst_t):
        if src_ty != F32:
            x = b.fpext(x, F32) if bits_of(src_ty) < 32 else b.fptrunc(x, F32)
        return f32_to_fp8(b, x, _fmt(dst_t), rtz)
    sb, db = bits_of(src_ty), bits_of(dst_ty)
    if sb < db or (sb == db and src_ty != dst_ty):
        if sb == db:  # f16 <-> bf16 through f32
            x = b.fpext(x, F32)
            return _rtz_narrow(b, x, dst_ty) if rtz else b.fptrunc(x, dst_ty)
        return b.fpext(x, dst_ty)
    if rtz and db == 16:
        if sb == 64:
            x = b.fptrunc(x, F32)
        return _rtz_narrow(b, x, dst_ty)
    return b.fptrunc(x, dst_ty)


#: fp8 formats a target may convert natively (``TargetInfo.f32_to_fp8``)
_NATIVE_FP8 = {"f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}


def _native_fp8(fl: FunctionLowering, op, src_t, dst_t, sty, rtz: bool) -> list | None:
    """The target's native round-to-nearest conversion of an f32/f16/bf16 tensor to fp8e4nv or
    fp8e5, or None."""
    fmt = _NATIVE_FP8.get(str(scalar_type(dst_t)))
    if rtz or fmt is None or is_fp8(scalar_type(src_t)) or sty not in (F32, ir.HalfType(), BF16):
        return None
    b = fl.builder
    vals = fl.get(op.operands[0])
    tensor = isinstance(vals, list)
    wide = [x if sty == F32 else convert_float(b, x, src_t, F32, sty, F32, False, fl.target)
            for x in (vals if tensor else [vals])]
    out = fl.target.f32_to_fp8(b, wide, fmt)
    return out if out is None or tensor else out[0]


@lowers("arith.extf", "arith.truncf", "tt.fp_to_fp")
def _float_cast(fl: FunctionLowering, op) -> None:
    src_t, dst_t = op.operands[0].type, op.results[0].type
    rtz = op.name == "tt.fp_to_fp" and op.rounding is not None and op.rounding.value.data == 0
    sty, dty = fl.ty(src_t), fl.ty(dst_t)
    if is_fp8(scalar_type(dst_t)):
        native = _native_fp8(fl, op, src_t, dst_t, sty, rtz)
        if native is not None:
            fl.set(op.results[0], native)
            return
    map_values(fl, op, lambda a: convert_float(fl.builder, a, src_t, dst_t, sty, dty, rtz, fl.target))


@lowers("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.sitofp", "arith.uitofp",
        "arith.fptosi", "arith.fptoui")
def _int_cast(fl: FunctionLowering, op) -> None:
    b = fl.builder
    sty, dty = fl.ty(op.operands[0].type), fl.ty(op.results[0].type)
    kind = op.name.split(".")[1]
    dst_t = op.results[0].type
    src_t = op.operands[0].type

    def one(a):
        if kind == "extsi":
            return b.sext(a, dty)
        if kind == "extui":
            return b.zext(a, dty)
        if kind == "trunci":
            return b.trunc(a, dty)
        if kind == "index_cast":
            return a if sty == dty else (b.sext(a, dty) if sty.width < dty.width else b.trunc(a, dty))
        if kind in ("sitofp", "uitofp"):
            via = F32 if is_fp8(scalar_type(dst_t)) else dty
            r = (b.sitofp if kind == "sitofp" else b.uitofp)(a, via)
            return r if via == dty else f32_to_fp8(b, r, _fmt(dst_t))
        src = a
        if is_fp8(scalar_type(src_t)):
            src = fp8_to_f32(b, a, _fmt(src_t))
        return (b.fptosi if kind == "fptosi" else b.fptoui)(src, dty)
    map_values(fl, op, one)


@lowers("arith.bitcast", "tt.bitcast")
def _bitcast(fl: FunctionLowering, op) -> None:
    b = fl.builder
    sty, dty = fl.ty(op.operands[0].type), fl.ty(op.results[0].type)

    def one(a):
        if sty == dty:
            return a
        if isinstance(sty, ir.PointerType) and isinstance(dty, ir.PointerType):
            return b.addrspacecast(a, dty) if sty.addrspace != dty.addrspace else a
        if isinstance(sty, ir.PointerType):
            return b.bitcast(b.ptrtoint(a, ir.IntType(64)), dty)
        if isinstance(dty, ir.PointerType):
            return b.inttoptr(b.bitcast(a, ir.IntType(64)), dty)
        return b.bitcast(a, dty)
    map_values(fl, op, one)


@lowers("tt.int_to_ptr")
def _i2p(fl: FunctionLowering, op) -> None:
    dty = fl.ty(op.results[0].type)
    map_values(fl, op, lambda a: fl.builder.inttoptr(a, dty))


@lowers("tt.ptr_to_int")
def _p2i(fl: FunctionLowering, op) -> None:
    dty = fl.ty(op.results[0].type)
    map_values(fl, op, lambda a: fl.builder.ptrtoint(a, dty))


__all__ = ["convert_float", "fp8_to_f32", "f32_to_fp8", "I1"]
