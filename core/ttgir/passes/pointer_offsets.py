"""``pointer-offsets``: a loop-carried tensor of pointers that every iteration advances by one
loop-invariant scalar (``ptrs += BLOCK_K * stride``) becomes its start before the loop plus a
loop-carried scalar offset::

    scf.for ... iter_args(%p = %p0) {                scf.for ... iter_args(%o = 0 : i64) {
      ... use %p ...                          ->       %p = tt.addptr %p0, splat(%o)
      %n = tt.addptr %p, splat(%s)                     ... use %p ...
      scf.yield %n                                     scf.yield %o + sext(%s)
    }                                                }
                                                     %p_after = tt.addptr %p0, splat(%o_final)

Each thread then keeps its elements' start addresses and one scalar instead of advancing every
element's address: each iteration's addresses are fresh sums of a loop-invariant address and the
offset, which ``ptxas`` places in registers of their own next to the copies that read them (the
form Triton's matmul loops reach), instead of carrying each 64-bit address across iterations in two
unpaired halves that are copied into one reused pair before every ``cp.async``.  The offset is
64-bit: the running sum of the steps never wraps where the pointers would not.
"""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, IntegerType, ModuleOp, TensorType
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from ...ttir import arith
from ...ttir.ops import AddPtrOp, SplatOp
from ...ttir.types import PointerType
from ._util import defined_in, with_extra_iter_args
from ...ttir.passes.rewrite_tensor_pointer import drop_invariant_iter_args

_I64 = IntegerType(64)


def _invariant(loop: scf.ForOp, v: SSAValue) -> bool:
    return not defined_in(v, loop)


def _uniform_step(loop: scf.ForOp, j: int) -> SSAValue | None:
    """The scalar iter arg ``j`` advances by, when it is a pointer tensor the body yields as
    ``tt.addptr(itself, splat(invariant scalar))``."""
    body = loop.body.block
    arg = body.args[1 + j]
    t = arg.type
    if not isinstance(t, TensorType) or not isinstance(t.element_type, PointerType):
        return None
    add = body.last_op.operands[j].owner
    if not isinstance(add, AddPtrOp) or add.ptr is not arg or add.parent_block() is not body:
        return None
    step = add.offset.owner
    if isinstance(step, arith.ConstantOp) and isinstance(step.value, DenseIntOrFPElementsAttr):
        values = set(step.value.get_values())
        if len(values) != 1:
            return None
        c = arith.ConstantOp(IntegerAttr(values.pop(), _I64))  # a uniform constant step
        Rewriter.insert_op(c, InsertPoint.before(loop))
        return c.result
    if not isinstance(step, SplatOp) or not isinstance(step.src.type, IntegerType):
        return None
    return step.src if _invariant(loop, step.src) else None


def _offsets_type(t: TensorType) -> TensorType:
    return TensorType(_I64, t.get_shape(), t.encoding)


def _to_i64(v: SSAValue, at: InsertPoint) -> SSAValue:
    if v.type == _I64:
        return v
    ext = arith.ExtSIOp(v, _I64)
    Rewriter.insert_op(ext, at)
    return ext.result


def rewrite_loop(loop: scf.ForOp) -> scf.ForOp:
    """Apply the rewrite to every eligible iter arg of ``loop``; the loop that results."""
    steps = {j: s for j in range(len(loop.iter_args)) if (s := _uniform_step(loop, j)) is not None}
    if not steps:
        return loop
    before = InsertPoint.before(loop)
    zero = arith.ConstantOp(IntegerAttr(0, _I64))
    Rewriter.insert_op(zero, before)
    n_old = len(loop.iter_args)
    order = sorted(steps)
    new, new_body = with_extra_iter_args(loop, [zero.result] * len(order))
    for old, nw in zip(loop.results, new.results[:n_old]):
        old.replace_all_uses_with(nw)
    y = new_body.last_op
    at_start = InsertPoint.at_start(new_body)
    at_end = InsertPoint.before(y)
    yielded = list(y.operands)
    offsets, advanced = [], []
    after = InsertPoint.after(new)
    for k, j in enumerate(order):
        arg, off = new_body.args[1 + j], new_body.args[1 + n_old + k]
        start = loop.iter_args[j]
        t = arg.type
        splat = SplatOp(off, _offsets_type(t))
        cur = AddPtrOp(start, splat.result)
        Rewriter.insert_op([splat, cur], at_start)
        arg.replace_all_uses_with(cur.result)
        advanced.append(yielded[j].owner)  # tt.addptr(cur, splat(step)): only the yield reads it
        yielded[j] = arg                   # the old iter arg: invariant now, dropped below
        nxt = arith.AddIOp(off, _to_i64(steps[j], at_end))
        Rewriter.insert_op(nxt, at_end)
        offsets.append(nxt.result)
        res = new.results[j]  # after the loop: the start plus the final offset
        if list(res.uses):
            splat_after = SplatOp(new.results[n_old + k], _offsets_type(t))
            final = AddPtrOp(start, splat_after.result)
            Rewriter.insert_op([splat_after, final], after)
            after = InsertPoint.after(final)
            res.replace_all_uses_with(final.result)
    Rewriter.replace_op(y, scf.YieldOp(*(yielded + offsets)))
    for op in advanced:
        if isinstance(op, AddPtrOp) and not list(op.result.uses):
            spl = op.offset.owner
            Rewriter.erase_op(op)
            if isinstance(spl, (SplatOp, arith.ConstantOp)) and spl.parent_block() is new_body \
                    and not list(spl.results[0].uses):
                Rewriter.erase_op(spl)
    Rewriter.erase_op(loop, safe_erase=False)
    drop_invariant_iter_args(new)
    return new


class PointerOffsets:
    name = "pointer-offsets"

    def run(self, module: ModuleOp) -> None:
        for loop in [op for op in module.walk() if isinstance(op, scf.ForOp)]:
            rewrite_loop(loop)


__all__ = ["PointerOffsets", "rewrite_loop"]
