"""Typing and IR emission for the language: promotion, broadcasting, casts, arithmetic.

Every function takes ``tensor``/Python values and the ``Builder`` and returns ``tensor``s.  The
rules are Triton's (see ``docs/language.md``): a Python scalar of an equal or lower kind
(bool < integer < float) adopts the tensor's type; otherwise the usual C-like
promotion applies, with ``/`` and ``%`` on 16-bit floats computed in fp32.
"""
from __future__ import annotations

import numbers
import warnings

from xdsl.dialects.builtin import IntegerAttr, i32

from ..language import dtypes as tl
from ..language.core import constexpr, tensor
from ..ttir import arith, ops as tt
from .builder import Builder, ir_type


class IncompatibleTypeErrorImpl(TypeError):
    """Operands no operator of the kind accepts together (Triton's wording, then why)."""

    def __init__(self, a, b, why: str = ""):
        super().__init__(f"invalid operands of type {a} and {b}" + (f": {why}" if why else ""))


def _unwrap(x):
    return x.value if isinstance(x, constexpr) else x


# --- scalars and tensors -----------------------------------------------------------------------

def scalar_type_of_python(x) -> tl.dtype:
    if isinstance(x, bool):
        return tl.int1
    if isinstance(x, numbers.Integral):
        x = int(x)
        if -2**31 <= x < 2**31:
            return tl.int32
        if 2**31 <= x < 2**32:
            return tl.uint32
        if -2**63 <= x < 2**63:
            return tl.int64
        if 2**63 <= x < 2**64:
            return tl.uint64
        raise ValueError(f"integer {x} does not fit in 64 bits")
    if isinstance(x, numbers.Real):
        a = abs(float(x))
        if a in (0.0, float("inf")) or a != a or 2.0**-126 <= a <= (2 - 2**-23) * 2**127:
            return tl.float32
        return tl.float64
    raise TypeError(f"cannot convert {x!r} of type {type(x).__name__} to a tensor")


def to_tensor(x, builder: Builder, dtype: tl.dtype | None = None) -> tensor:
    x = _unwrap(x)
    if isinstance(x, tensor):
        return x
    if x is None:
        raise TypeError("None is not a value here (an optional argument was not given?)")
    ty = dtype or scalar_type_of_python(x)
    return tensor(builder.constant(x, ty), ty)


def full(shape, value, dtype: tl.dtype, builder: Builder) -> tensor:
    value = _unwrap(value)
    shape = [_unwrap(s) for s in shape]
    check_dtype(dtype, builder)
    if isinstance(value, tensor):
        v = cast(value, dtype, builder)
        return splat(v, shape, builder) if shape else v
    if not shape:
        return tensor(builder.constant(value, dtype), dtype)
    ty = tl.block_type(dtype, shape)
    return tensor(builder.constant(value, ty), ty)


def splat(x: tensor, shape, builder: Builder) -> tensor:
    ty = tl.block_type(x.type.scalar, shape)
    return tensor(builder.create(tt.SplatOp(x.handle, ir_type(ty))), ty)


# --- promotion ---------------------------------------------------------------------------------

def integer_promote(a: tl.dtype, b: tl.dtype) -> tl.dtype:
    if a.int_signedness == b.int_signedness:
        return a if a.int_bitwidth >= b.int_bitwidth else b
    u, s = (a, b) if a.is_int_unsigned() else (b, a)
    return u if u.int_bitwidth >= s.int_bitwidth else s


def computation_type(a: tl.dtype, a_scalar: bool, b: tl.dtype, b_scalar: bool, div_or_mod: bool) -> tl.dtype:
    if a_scalar != b_scalar:
        sc, te = (a, b) if a_scalar else (b, a)
        if sc.kind() <= te.kind():
            if div_or_mod and te in (tl.float16, tl.bfloat16):
                return tl.float32
            return te
    if a.is_fp64() or b.is_fp64():
        return tl.float64
    if a.is_fp32() or b.is_fp32():
        return tl.float32
    if a.is_fp16() or b.is_fp16():
        return tl.float32 if div_or_mod else tl.float16
    if a.is_bf16() or b.is_bf16():
        if div_or_mod or not (a.is_bf16() and b.is_bf16()):
            return tl.float32
        return tl.bfloat16
    if a.is_fp8() and b.is_fp8():
        return a if a == b else tl.float16
    if a.is_fp8() or b.is_fp8():
        return b if a.is_fp8() else a
    if not a.is_int() or not b.is_int():
        raise IncompatibleTypeErrorImpl(a, b)
    if div_or_mod and a.int_signedness != b.int_signedness:
        raise TypeError(f"Cannot use /, // or % with {a} and {b} because they have different signedness; "
                        "cast them to the same signedness")
    return integer_promote(a, b)


def binary_operands(lhs, rhs, builder: Builder, allow_lhs_ptr=False, allow_rhs_ptr=False,
                    arithmetic_check=True, div_or_mod=False) -> tuple[tensor, tensor]:
    lhs, rhs = _unwrap(lhs), _unwrap(rhs)
    lhs_sc = not isinstance(lhs, tensor)
    rhs_sc = not isinstance(rhs, tensor)
    lty = scalar_type_of_python(lhs) if lhs_sc else lhs.type.scalar
    rty = scalar_type_of_python(rhs) if rhs_sc else rhs.type.scalar
    if lty.is_ptr() and not allow_lhs_ptr:
        raise IncompatibleTypeErrorImpl(lty, rty)
    if rty.is_ptr() and not allow_rhs_ptr:
        raise IncompatibleTypeErrorImpl(lty, rty)
    if arithmetic_check and not lty.is_ptr() and not rty.is_ptr():
        ret = computation_type(lty, lhs_sc, rty, rhs_sc, div_or_mod)
        for v, sc in ((lhs, lhs_sc), (rhs, rhs_sc)):
            if sc and ret.is_int():
                if isinstance(v, float):
                    raise TypeError(f"float scalar {v} cannot be combined with a {ret} tensor implicitly")
                if v < 0 and ret.is_int_unsigned():
                    raise ValueError(f"Cannot perform a binary operation between an unsigned tensor and a "
                                     f"negative scalar ({ret} with negative scalar {v}); cast one of them explicitly")
                if not ret.get_int_min_value() <= int(v) <= ret.get_int_max_value():
                    raise ValueError(f"Scalar {v} is out of range for type {ret} "
                                     f"([{ret.get_int_min_value()}, {ret.get_int_max_value()}])")
        lhs = to_tensor(lhs, builder, ret) if lhs_sc else cast(lhs, ret, builder)
        rhs = to_tensor(rhs, builder, ret) if rhs_sc else cast(rhs, ret, builder)
    else:
        lhs = to_tensor(lhs, builder) if lhs_sc else lhs
        rhs = to_tensor(rhs, builder) if rhs_sc else rhs
    return broadcast_values(lhs, rhs, builder)


# --- broadcasting ------------------------------------------------------------------------------

def broadcast_shapes(a, b) -> list[int]:
    """NumPy's rule: the shorter shape is read with size-1 dimensions prepended, then every
    dimension pair must be equal or contain a 1."""
    a, b = list(a), list(b)
    ra, rb = [1] * (len(b) - len(a)) + a, [1] * (len(a) - len(b)) + b
    out = []
    for i, (x, y) in enumerate(zip(ra, rb)):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ValueError(f"cannot broadcast shapes {a} and {b}: incompatible dimensions at index {i}: "
                             f"{x} and {y}")
    return out


def _prepend_unit_dims(x: tensor, rank: int, builder: Builder) -> tensor:
    while len(x.type.shape) < rank:
        ty = tl.block_type(x.type.scalar, [1] + list(x.type.shape))
        x = tensor(builder.create(tt.ExpandDimsOp(x.handle, ir_type(ty), axis=IntegerAttr(0, i32))), ty)
    return x


def broadcast_to_shape(x: tensor, shape, builder: Builder) -> tensor:
    """``x`` broadcast to ``shape`` of the same rank (``tl.broadcast_to``, load masks): no
    dimensions are added, as in Triton."""
    shape = [int(_unwrap(s)) for s in shape]
    if not x.type.is_block():
        return splat(x, shape, builder)
    if list(x.type.shape) == shape:
        return x
    src = list(x.type.shape)
    if len(src) != len(shape):
        raise ValueError(f"Cannot broadcast, rank mismatch: {src}, {shape} (broadcast_to does not add "
                         "dimensions; use expand_dims or x[None, :] first)")
    for i, (s, d) in enumerate(zip(src, shape)):
        if s != d and s != 1:
            raise ValueError(f"Cannot broadcast shape {src} to {shape}: the expanded size ({d}) must match "
                             f"the existing size ({s}) at non-singleton dimension {i}")
    ty = tl.block_type(x.type.scalar, shape)
    return tensor(builder.create(tt.BroadcastOp(x.handle, ir_type(ty))), ty)


def broadcast_values(a: tensor, b: tensor, builder: Builder) -> tuple[tensor, tensor]:
    """Two values brought to one shape by NumPy's rules: a scalar is splat; a tensor of lower rank
    gets size-1 leading dimensions; then size-1 dimensions are broadcast."""
    ab, bb = a.type.is_block(), b.type.is_block()
    if ab and bb:
        shape = broadcast_shapes(a.type.shape, b.type.shape)
        a, b = _prepend_unit_dims(a, len(shape), builder), _prepend_unit_dims(b, len(shape), builder)
        return broadcast_to_shape(a, shape, builder), broadcast_to_shape(b, shape, builder)
    if ab:
        return a, splat(b, a.type.shape, builder)
    if bb:
        return splat(a, b.type.shape, builder), b
    return a, b


# --- casts ---------------------------------------------------------------------------------------

def check_dtype(ty: tl.dtype, builder: Builder) -> None:
    """Reject dtypes the target cannot handle (fp8 variants differ between architectures)."""
    sc = ty.scalar
    while sc.is_ptr():
        sc = sc.element_ty.scalar
    if sc.is_fp8():
        allowed = getattr(builder.options, "supported_fp8_dtypes", None)
        if allowed is not None and sc.name not in allowed:
            raise ValueError(f"type {sc.name} not supported in this architecture ({builder.target}). "
                             f"The supported fp8 dtypes are {tuple(allowed)}")


def _same_shape(ty: tl.dtype, scalar: tl.dtype) -> tl.dtype:
    return tl.block_type(scalar, ty.shape) if ty.is_block() else scalar


def bitcast(x: tensor, dst: tl.dtype, builder: Builder) -> tensor:
    src = x.type.scalar
    if src == dst:
        return x
    if src.is_ptr() or dst.is_ptr():
        return cast(x, dst, builder)
    check_dtype(dst, builder)
    if src.primitive_bitwidth != dst.primitive_bitwidth:
        raise ValueError(f"cannot bitcast {src} ({src.primitive_bitwidth} bits) to {dst} "
                         f"({dst.primitive_bitwidth} bits): widths differ")
    ty = _same_shape(x.type, dst)
    return tensor(builder.create(tt.BitcastOp(x.handle, ir_type(ty))), ty)


def cast(x, dst: tl.dtype, builder: Builder, fp_downcast_rounding: str | None = None, bitcast_: bool = False) -> tensor:
    x = to_tensor(x, builder)
    dst = _unwrap(dst)
    if isinstance(dst, tl.block_type):
        dst = dst.scalar
    if not isinstance(dst, tl.dtype):
        raise TypeError(f"to() expects a dtype, got {dst!r}")
    check_dtype(dst, builder)
    if bitcast_:
        return bitcast(x, dst, builder)
    src = x.type.scalar
    if src == dst:
        return x
    ty = _same_shape(x.type, dst)
    irt = ir_type(ty)
    h = x.handle
    if fp_downcast_rounding not in (None, "rtne", "rtz"):
        raise ValueError(f"fp_downcast_rounding must be 'rtne' or 'rtz', got {fp_downcast_rounding!r}")

    def make(op_cls, *args):
        return tensor(builder.create(op_cls(h, irt, *args)), ty)

    # fp8 and explicit-rounding downcasts go through tt.fp_to_fp
    if (src.is_fp8() or dst.is_fp8()) and src.is_floating() and dst.is_floating():
        if src.is_fp8() and dst.is_fp8():
            return cast(cast(x, tl.float16, builder), dst, builder, fp_downcast_rounding)
        down = dst.primitive_bitwidth < src.primitive_bitwidth
        return make(tt.FpToFpOp, (fp_downcast_rounding or "rtne") if down else None)
    if src.is_floating() and dst.is_floating():
        if (src.is_fp16() and dst.is_bf16()) or (src.is_bf16() and dst.is_fp16()):
            return cast(cast(x, tl.float32, builder), dst, builder, fp_downcast_rounding)
        if dst.primitive_bitwidth > src.primitive_bitwidth:
            return make(arith.ExtFOp)
        if fp_downcast_rounding == "rtz":
            return make(tt.FpToFpOp, "rtz")
        return make(arith.TruncFOp)
    if src.is_int() and dst.is_int():
        if dst.is_bool():
            return not_equal(x, 0, builder)
        if src.int_bitwidth == dst.int_bitwidth:
            return tensor(h, ty)  # signedness only changes how later ops read the bits
        if dst.int_bitwidth < src.int_bitwidth:
            return make(arith.TruncIOp)
        return make(arith.ExtSIOp if src.is_int_signed() else arith.ExtUIOp)
    if src.is_floating() and dst.is_int():
        if dst.is_bool():
            return not_equal(x, 0.0, builder)
        if src.is_fp8():
            x = cast(x, tl.float32, builder)
            h = x.handle
        return make(arith.FPToSIOp if dst.is_int_signed() else arith.FPToUIOp)
    if src.is_int() and dst.is_floating():
        if dst.is_fp8():
            return cast(cast(x, tl.float32, builder), dst, builder, fp_downcast_rounding)
        return make(arith.SIToFPOp if src.is_int_signed() else arith.UIToFPOp)
    if src.is_ptr() and dst.is_int():
        if dst.int_bitwidth != 64:
            raise TypeError(f"a pointer can only be cast to a 64-bit integer, not {dst}")
        return make(tt.PtrToIntOp)
    if src.is_int() and dst.is_ptr():
        if src.int_bitwidth != 64:
            x = cast(x, tl.int64, builder)
            h = x.handle
        return make(tt.IntToPtrOp)
    if src.is_ptr() and dst.is_ptr():
        return make(tt.BitcastOp)
    raise TypeError(f"cannot cast {src} to {dst}")


# --- arithmetic --------------------------------------------------------------------------------

def _emit(builder: Builder, op, ty: tl.dtype) -> tensor:
    return tensor(builder.create(op), ty)


def add(a, b, builder: Builder) -> tensor:
    a, b = binary_operands(a, b, builder, True, True)
    if a.type.scalar.is_ptr() and b.type.scalar.is_ptr():
        raise TypeError("cannot add two pointers")
    if b.type.scalar.is_ptr():
        a, b = b, a
    if a.type.scalar.is_ptr():
        if not b.type.scalar.is_int():
            raise TypeError(f"a pointer offset must be an integer, got {b.type.scalar}")
        if b.type.scalar.is_int_unsigned() and b.type.scalar.int_bitwidth < 64:
            # tt.addptr reads its offset as signed: zero-extend an unsigned one to i64 first
            b = cast(b, tl.int64, builder)
        return _emit(builder, tt.AddPtrOp(a.handle, b.handle), a.type)
    sc = a.type.scalar
    return _emit(builder, (arith.AddFOp if sc.is_floating() else arith.AddIOp)(a.handle, b.handle), a.type)


def sub(a, b, builder: Builder) -> tensor:
    a, b = binary_operands(a, b, builder, True, False)
    if a.type.scalar.is_ptr():
        return add(a, minus(b, builder), builder)
    sc = a.type.scalar
    return _emit(builder, (arith.SubFOp if sc.is_floating() else arith.SubIOp)(a.handle, b.handle), a.type)


def mul(a, b, builder: Builder) -> tensor:
    a, b = binary_operands(a, b, builder)
    sc = a.type.scalar
    return _emit(builder, (arith.MulFOp if sc.is_floating() else arith.MulIOp)(a.handle, b.handle), a.type)


def truediv(a, b, builder: Builder) -> tensor:
    a, b = binary_operands(a, b, builder, arithmetic_check=True, div_or_mod=True)
    sc = a.type.scalar
    if sc.is_int():
        a, b = cast(a, tl.float32, builder), cast(b, tl.float32, builder)
    return _emit(builder, arith.DivFOp(a.handle, b.handle), a.type)


def floordiv(a, b, builder: Builder) -> tensor:
    a, b = binary_operands(a, b, builder, div_or_mod=True)
    sc = a.type.scalar
    if sc.is_floating():
        raise TypeError(f"// is only defined for integers here, got {sc}; use tl.floor(a / b)")
    return _emit(builder, (arith.DivSIOp if sc.is_int_signed() else arith.DivUIOp)(a.handle, b.handle), a.type)


def mod(a, b, builder: Builder) -> tensor:
    a, b = binary_operands(a, b, builder, div_or_mod=True)
    sc = a.type.scalar
    if sc.is_floating():
        return _emit(builder, arith.RemFOp(a.handle, b.handle), a.type)
    return _emit(builder, (arith.RemSIOp if sc.is_int_signed() else arith.RemUIOp)(a.handle, b.handle), a.type)


def fdiv(a, b, ieee_rounding: bool, builder: Builder) -> tensor:
    a, b = binary_operands(a, b, builder)
    if not a.type.scalar.is_floating():
        raise TypeError(f"fdiv expects floating-point operands, got {a.type.scalar}")
    op = tt.PreciseDivFOp(a.handle, b.handle) if ieee_rounding else arith.DivFOp(a.handle, b.handle)
    return _emit(builder, op, a.type)


def _bitwise_operands(a, b, builder):
    ta, tb = _operand_type(a), _operand_type(b)
    if not ta.is_int() or not tb.is_int():
        raise IncompatibleTypeErrorImpl(ta, tb, "bitwise operators and shifts need integer operands")
    return binary_operands(a, b, builder)


def _operand_type(x) -> tl.dtype:
    x = _unwrap(x)
    return x.type.scalar if isinstance(x, tensor) else scalar_type_of_python(x)


def and_(a, b, builder):
    a, b = _bitwise_operands(a, b, builder)
    return _emit(builder, arith.AndIOp(a.handle, b.handle), a.type)


def or_(a, b, builder):
    a, b = _bitwise_operands(a, b, builder)
    return _emit(builder, arith.OrIOp(a.handle, b.handle), a.type)


def xor_(a, b, builder):
    a, b = _bitwise_operands(a, b, builder)
    return _emit(builder, arith.XOrIOp(a.handle, b.handle), a.type)


def shl(a, b, builder):
    a, b = _bitwise_operands(a, b, builder)
    return _emit(builder, arith.ShLIOp(a.handle, b.handle), a.type)


def shr(a, b, builder):
    """``a >> b``: both operands are promoted as for any binary operator, but the shift is
    arithmetic when ``a`` itself is signed (``int32 >> uint32`` shifts in the sign bit), as in
    Triton; a Python scalar on the left takes the signedness of the tensor on the right."""
    left = _unwrap(a)
    signed = _operand_type(left if isinstance(left, tensor) else b).is_int_signed()
    a, b = _bitwise_operands(a, b, builder)
    cls = arith.ShRSIOp if signed else arith.ShRUIOp
    return _emit(builder, cls(a.handle, b.handle), a.type)


def logical_and(a, b, builder):
    a, b = to_tensor(a, builder), to_tensor(b, builder)
    return and_(cast(a, tl.int1, builder), cast(b, tl.int1, builder), builder)


def logical_or(a, b, builder):
    a, b = to_tensor(a, builder), to_tensor(b, builder)
    return or_(cast(a, tl.int1, builder), cast(b, tl.int1, builder), builder)


def not_(a, builder):
    a = cast(to_tensor(a, builder), tl.int1, builder)
    return xor_(a, full(a.type.shape if a.type.is_block() else [], True, tl.int1, builder), builder)


def invert(a, builder):
    a = to_tensor(a, builder)
    sc = a.type.scalar
    if not sc.is_int():
        raise TypeError(f"wrong type argument to unary invert ({sc}): ~ needs an integer operand")
    ones = full(a.type.shape if a.type.is_block() else [], -1 if sc.is_int_signed() else sc.get_int_max_value(), sc, builder)
    return xor_(a, ones, builder)


def minus(a, builder):
    a = to_tensor(a, builder)
    sc = a.type.scalar
    if sc.is_ptr():
        raise TypeError(f"wrong type argument to unary minus ({sc}): a pointer cannot be negated")
    if sc.is_floating():
        return _emit(builder, arith.NegFOp(a.handle), a.type)
    return sub(full(a.type.shape if a.type.is_block() else [], 0, sc, builder), a, builder)


def plus(a, builder):
    return to_tensor(a, builder)


_CMPF = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "eq": "oeq", "ne": "une"}


def _compare(a, b, builder, pred: str) -> tensor:
    a, b = binary_operands(a, b, builder, True, True)
    sc = a.type.scalar
    if sc.is_floating():
        op = arith.CmpFOp(a.handle, b.handle, _CMPF[pred])
    else:
        if pred in ("eq", "ne"):
            p = pred
        elif sc.is_int_signed():
            p = "s" + pred
        else:
            p = "u" + pred
        op = arith.CmpIOp(a.handle, b.handle, p)
    return _emit(builder, op, _same_shape(a.type, tl.int1))


def less_than(a, b, builder): return _compare(a, b, builder, "lt")
def less_equal(a, b, builder): return _compare(a, b, builder, "le")
def greater_than(a, b, builder): return _compare(a, b, builder, "gt")
def greater_equal(a, b, builder): return _compare(a, b, builder, "ge")
def equal(a, b, builder): return _compare(a, b, builder, "eq")
def not_equal(a, b, builder): return _compare(a, b, builder, "ne")


def warn_at_user_line(builder: Builder, message: str, category=UserWarning) -> None:
    """Warn at the kernel source line being compiled (the builder's current location)."""
    loc = builder.loc
    warnings.warn_explicit(message, category, loc.filename.data, loc.line.data or 1)


def where(cond, x, y, builder: Builder) -> tensor:
    cond = to_tensor(cond, builder)
    if cond.type.scalar != tl.int1:
        warn_at_user_line(builder, "tl.where with a non-boolean condition is deprecated and will error out in a "
                          f"future release. Got {cond.type.scalar}")
        cond = cast(cond, tl.int1, builder)
    x, y = binary_operands(x, y, builder, True, True)
    if cond.type.is_block():
        cond, x = broadcast_values(cond, x, builder)
        x, y = broadcast_values(x, y, builder)
        cond, x = broadcast_values(cond, x, builder)
    elif x.type.is_block():
        cond = splat(cond, x.type.shape, builder)
    return _emit(builder, arith.SelectOp(cond.handle, x.handle, y.handle), x.type)


def minimum(a, b, propagate_nan, builder):
    a, b = binary_operands(a, b, builder)
    sc = a.type.scalar
    if sc.is_floating():
        cls = arith.MinimumFOp if propagate_nan else arith.MinNumFOp
    else:
        cls = arith.MinSIOp if sc.is_int_signed() else arith.MinUIOp
    return _emit(builder, cls(a.handle, b.handle), a.type)


def maximum(a, b, propagate_nan, builder):
    a, b = binary_operands(a, b, builder)
    sc = a.type.scalar
    if sc.is_floating():
        cls = arith.MaximumFOp if propagate_nan else arith.MaxNumFOp
    else:
        cls = arith.MaxSIOp if sc.is_int_signed() else arith.MaxUIOp
    return _emit(builder, cls(a.handle, b.handle), a.type)


def clamp(x, lo, hi, propagate_nan, builder):
    x, lo = binary_operands(x, lo, builder)
    x, hi = binary_operands(x, hi, builder)
    lo, _ = broadcast_values(lo, x, builder)
    sc = x.type.scalar
    if sc.is_floating():
        return _emit(builder, tt.ClampFOp(x.handle, lo.handle, hi.handle, "all" if propagate_nan else "none"), x.type)
    return minimum(maximum(x, lo, False, builder), hi, False, builder)
