"""``tt.print`` (device printf, one line per element as Triton prints), ``tt.assert`` and
``llvm.intr.assume``."""
from __future__ import annotations

import math

import llvmlite.ir as ir
from xdsl.dialects.builtin import TensorType

from ..target_info import intrinsic
from .lowering import FunctionLowering, lowers
from .types import F64, I32, I64, bits_of, const, is_float


def _printable(b: ir.IRBuilder, v: ir.Value, signed: bool, hex_: bool) -> tuple[str, ir.Value]:
    """The C conversion for one element and the value vprintf/printf receives (floats as double,
    integers narrower than 32 bits widened to i32), as ``tt.print`` formats them everywhere:
    ``%f``, ``%i``/``%u`` (``%lli``/``%llu`` for 64 bits), ``%p``, and with ``hex`` the value's own
    bits zero-padded to its width (``0x%08x``; a float's bits, not its value)."""
    ty = v.type
    if isinstance(ty, ir.PointerType):
        return "%p", v
    if hex_:
        bits = bits_of(ty)
        if is_float(ty):
            v = b.bitcast(v, ir.IntType(bits))
        wide = I64 if bits > 32 else I32
        digits = max(bits // 4, 1)
        return (f"0x%0{digits}llx" if bits > 32 else f"0x%0{digits}x"), (v if bits in (32, 64) else b.zext(v, wide))
    if is_float(ty):
        return "%f", (v if ty == F64 else b.fpext(v, F64))
    bits = bits_of(ty)
    if bits > 32:
        return ("%lli" if signed else "%llu"), v
    wide = v if bits == 32 else (b.sext(v, I32) if signed and bits > 1 else b.zext(v, I32))
    return ("%i" if signed else "%u"), wide


def index_width(dim: int) -> int:
    """Digits an index into a dimension of ``dim`` elements is padded to: ceil(log10(dim))."""
    return math.ceil(math.log10(dim)) if dim > 0 else 0


@lowers("tt.print")
def _print(fl: FunctionLowering, op) -> None:
    # one line per element this thread holds:
    #   pid (<x>, <y>, <z>) idx (<i0>, <i1>, ...)<prefix>[(operand <k>) ]<value>
    # (the frontend shapes the prefix as " x: "); with no operand, ``pid (<x>, <y>, <z>)<prefix>``
    b = fl.builder
    prefix = op.prefix.data
    hex_ = bool(op.hex.value.data)
    signed = list(op.isSigned.get_values()) if op.isSigned is not None else []
    pids = [fl.target.program_id(b, a) for a in range(3)]
    if not op.args:
        fl.target.printf(b, f"pid (%u, %u, %u){prefix}\n", pids)
        return
    many = len(op.args) > 1
    for i, v in enumerate(op.args):
        vals = fl.get(v)
        is_t = isinstance(v.type, TensorType)
        regs = vals if is_t else [vals]
        coords = fl.coords(v.type) if is_t else [[]]
        widths = [index_width(d) for d in v.type.get_shape()] if is_t else []
        idx_fmt = ", ".join(f"%{w}u" if w else "%u" for w in widths)
        tag = f"(operand {i}) " if many else ""
        sgn = bool(signed[i]) if i < len(signed) else True
        for r, x in enumerate(regs):
            spec, arg = _printable(b, x, sgn, hex_)
            fmt = f"pid (%u, %u, %u) idx ({idx_fmt}){prefix}{tag}{spec}\n"
            fl.target.printf(b, fmt, pids + list(coords[r]) + [arg])


@lowers("tt.assert")
def _assert(fl: FunctionLowering, op) -> None:
    b = fl.builder
    cond = fl.get(op.condition)
    conds = cond if isinstance(cond, list) else [cond]
    ok = conds[0]
    for c in conds[1:]:
        ok = b.and_(ok, c)
    if ok.type != ir.IntType(1):
        ok = b.icmp_unsigned("!=", ok, const(ok.type, 0))
    loc = getattr(op, "location", None)
    file, line, func = "<unknown>", 0, fl.op.sym_name.data
    text = str(loc) if loc is not None else ""
    import re
    m = re.search(r'"([^"]*)":(\d+)', text)
    if m:
        file, line = m.group(1), int(m.group(2))
    with b.if_then(b.not_(ok), likely=False):
        fl.target.assert_fail(b, op.message.data, file, func, line)


@lowers("llvm.intr.assume")
def _assume(fl: FunctionLowering, op) -> None:
    intrinsic(fl.builder, "llvm.assume", ir.VoidType(), [fl.get(op.cond)])
