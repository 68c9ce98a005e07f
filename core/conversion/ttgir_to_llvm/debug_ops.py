"""``tt.print`` (device printf, one line per element as Triton prints), ``tt.assert`` and
``llvm.intr.assume``."""
from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects.builtin import TensorType

from ..target_info import intrinsic
from .lowering import FunctionLowering, lowers
from .types import F64, I32, I64, bits_of, const, is_float


def _printable(b: ir.IRBuilder, v: ir.Value, signed: bool, hex_: bool) -> tuple[str, ir.Value]:
    ty = v.type
    if is_float(ty):
        return ("%a" if hex_ else "%f"), (v if ty == F64 else b.fpext(v, F64))
    if isinstance(ty, ir.PointerType):
        return "%p", v
    bits = bits_of(ty)
    if hex_:
        return ("0x%llx" if bits > 32 else "0x%x"), (b.zext(v, I64 if bits > 32 else I32) if bits not in (32, 64) else v)
    if bits > 32:
        return ("%lli" if signed else "%llu"), v
    wide = v if bits == 32 else (b.sext(v, I32) if signed and bits > 1 else b.zext(v, I32))
    return ("%i" if signed else "%u"), wide


@lowers("tt.print")
def _print(fl: FunctionLowering, op) -> None:
    b = fl.builder
    prefix = op.prefix.data
    hex_ = bool(op.hex.value.data)
    signed = list(op.isSigned.get_values()) if op.isSigned is not None else []
    pids = [fl.target.program_id(b, a) for a in range(3)]
    if not op.args:
        fl.target.printf(b, f"pid ({'%u, %u, %u'}) {prefix}\n", pids)
        return
    for i, v in enumerate(op.args):
        vals = fl.get(v)
        is_t = isinstance(v.type, TensorType)
        regs = vals if is_t else [vals]
        coords = fl.coords(v.type) if is_t else [[]]
        sgn = bool(signed[i]) if i < len(signed) else True
        for r, x in enumerate(regs):
            spec, arg = _printable(b, x, sgn, hex_)
            idx = coords[r]
            idx_fmt = ", ".join("%u" for _ in idx)
            fmt = f"pid (%u, %u, %u) idx ({idx_fmt}){prefix}{spec}\n"
            fl.target.printf(b, fmt, pids + list(idx) + [arg])


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
