"""``ttg.convert_layout`` and the shared-memory element access every cross-thread exchange uses.

When both layouts give each element to the same (lane, warp) the conversion only renames
registers; otherwise the tensor makes one round trip through the scratch buffer the allocation pass
reserved (``scratch_size``: the whole tensor), written row-major by each element's owner."""
from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects.builtin import TensorType

from .lowering import FunctionLowering, lowers
from .types import I1, I8, I32, I64, bits_of, const


def _mem(ty: ir.Type) -> ir.Type:
    if ty == I1:
        return I8
    if isinstance(ty, ir.PointerType):
        return I64
    return ty


def elem_bytes(ty: ir.Type) -> int:
    return max(bits_of(_mem(ty)) // 8, 1)


def shared_store(fl: FunctionLowering, base_ptr, index: ir.Value, value: ir.Value, pred=None) -> None:
    """``base[index] = value`` (element-sized slots) in shared memory, under ``pred`` if given."""
    b = fl.builder
    ty = value.type
    mty = _mem(ty)
    v = b.zext(value, I8) if ty == I1 else (b.ptrtoint(value, I64) if isinstance(ty, ir.PointerType) else value)
    p = b.gep(base_ptr, [index], source_etype=mty)
    if pred is None:
        b.store(v, p)
    else:
        with b.if_then(pred):
            b.store(v, p)


def shared_load(fl: FunctionLowering, base_ptr, index: ir.Value, ty: ir.Type) -> ir.Value:
    b = fl.builder
    mty = _mem(ty)
    v = b.load(b.gep(base_ptr, [index], source_etype=mty), typ=mty)
    if ty == I1:
        return b.icmp_unsigned("!=", v, const(I8, 0))
    if isinstance(ty, ir.PointerType):
        return b.inttoptr(v, ty)
    return v


def feeds_full_reductions_only(op) -> bool:
    """A conversion whose every user reduces the whole tensor to scalars: the result does not depend
    on where elements live, so the reduction reads the source directly (no shared-memory trip)."""
    uses = list(op.results[0].uses)
    return bool(uses) and all(u.operation.name == "tt.reduce" and
                              not isinstance(u.operation.results[0].type, TensorType) and
                              all(v.owner.name == "ttg.convert_layout" for v in u.operation.operands)
                              for u in uses)


@lowers("ttg.convert_layout")
def _convert(fl: FunctionLowering, op) -> None:
    if feeds_full_reductions_only(op):
        fl.set(op.results[0], None)  # the reductions read op's source (see reduce.py)
        return
    src_t, dst_t = op.operands[0].type, op.results[0].type
    regs = fl.get(op.operands[0])
    la, lb = fl.layout(src_t), fl.layout(dst_t)
    if la.ll == lb.ll:
        fl.set(op.results[0], list(regs))
        return
    if la.ll.lane == lb.ll.lane and la.ll.warp == lb.ll.warp:
        out = [regs[la.reg_index[tuple(int(x) for x in off)]] for off in lb.reg_offsets]
        fl.set(op.results[0], out)
        return
    from .shape_ops import linear_index, read_tensor, write_tensor
    shape = src_t.get_shape()
    base = fl.shared_ptr(fl.alloc_offset(op))
    write_tensor(fl, base, regs, src_t, lambda c: linear_index(fl, c, shape))
    fl.target.barrier(fl.builder)
    fl.set(op.results[0], read_tensor(fl, base, dst_t, lambda c: linear_index(fl, c, shape)))


__all__ = ["shared_store", "shared_load", "elem_bytes", "I32"]
