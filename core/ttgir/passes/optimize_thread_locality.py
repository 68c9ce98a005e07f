"""``optimize-thread-locality``: a reduction whose result is folded into a loop-carried accumulator
is split so that the loop only reduces within each thread, and the cross-thread part (shuffles,
shared memory) runs once after the loop (Triton's pass of the same name).

The loop it rewrites::

    %acc = scf.for ... iter_args(%a = %init) {
      %x = ...                                           (blocked, e > 1 elements per thread along axis)
      %r = "tt.reduce"(%x) <{axis = k}> ({ combine })    (one op: addf, maxnumf, addi, ...)
      %c = ttg.convert_layout %r                         (optional)
      %n = combine %a, %c                                (the same op as the region's)
      scf.yield %n
    }

becomes, with ``%x`` viewed as ``[..., K/e, e, ...]`` (``tt.reshape allow_reorder efficient_layout``:
each thread's registers renamed, no data moved; the elements along the axis may be reordered, which
an associative and commutative combine does not see)::

    %acc2 = scf.for ... iter_args(%p = neutral) {         (one partial per thread and row)
      %v = tt.reshape %x allow_reorder efficient_layout
      %t = "tt.reduce"(%v) <{axis = k + 1}>                (registers only)
      %q = combine %p, %t
      scf.yield %q
    }
    %s = "tt.reduce"(%acc2) <{axis = k}>                   (across threads, once)
    %acc = combine %init, convert(%s)

The new layout keeps the non-reduced dimensions where they were and the axis's registers in the new
dimension, in the source's register order (checked on the linear layouts: a register, lane or warp
basis moves the same non-reduced coordinates in both and moves along the axis in one iff in the
other), so the lowering of the reshape is a renaming of registers.

Rewritten: a ``tt.reduce`` of one blocked operand, directly in an ``scf.for`` body, whose single use
(through at most one conversion) is the same combine op with the iter arg, whose result is only
yielded as that iter arg, the iter arg having no other use.  Triton's pass also requires the
operand to come from a load, rank > 1, the last axis, a float combine and a constant init; the
checks above are what the rewrite needs, so any axis, rank 1 and integer combines are taken too.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerType, ModuleOp, TensorType, UnitAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from ...ttir.ops import ReshapeOp
from ...ttir.passes._fold import make_const
from ...ttir.passes.rewrite_tensor_pointer import drop_invariant_iter_args
from ...ttir.region_ops import ReduceOp
from ..encodings import BlockedEncodingAttr, SliceEncodingAttr
from ..layouts import elems_per_thread, linear_layout
from ..ops import ConvertLayoutOp
from ._util import encoding, set_type

_INF = math.inf


def _neutral(name: str, elt: Attribute):
    """The identity of the combine op ``name`` on ``elt``; None for ops this pass leaves alone."""
    if isinstance(elt, IntegerType):
        w = elt.width.data
        return {"arith.addi": 0, "arith.muli": 1, "arith.ori": 0, "arith.xori": 0, "arith.andi": -1,
                "arith.maxsi": -(1 << (w - 1)), "arith.minsi": (1 << (w - 1)) - 1,
                "arith.maxui": 0, "arith.minui": -1}.get(name)
    return {"arith.addf": 0.0, "arith.mulf": 1.0, "arith.maxnumf": -_INF, "arith.maximumf": -_INF,
            "arith.minnumf": _INF, "arith.minimumf": _INF}.get(name)


def _combine_op(reduce: Operation) -> Operation | None:
    """The single op of a one-operand combine region that combines its two arguments."""
    ops = list(reduce.combineOp.blocks.first.ops)
    block = reduce.combineOp.blocks.first
    if len(ops) != 2 or len(block.args) != 2:
        return None
    op, ret = ops
    if set(op.operands) != set(block.args) or list(ret.operands) != [op.results[0]]:
        return None
    return op


def _single_use(v: SSAValue) -> Operation | None:
    uses = list(v.uses)
    return uses[0].operation if len(uses) == 1 else None


def local_encoding(enc: BlockedEncodingAttr, axis: int) -> BlockedEncodingAttr:
    """``enc`` with the axis's per-thread elements moved to a new dimension ``axis + 1`` (same place
    in ``order``, so registers keep their order); the axis keeps the lanes and warps."""
    n = axis + 1
    spt = list(enc.size_per_thread)
    spt.insert(n, spt[axis])
    spt[axis] = 1
    tpw = list(enc.threads_per_warp)
    tpw.insert(n, 1)
    wpc = list(enc.warps_per_cta)
    wpc.insert(n, 1)
    order: list[int] = []
    for d in enc.order:
        if d == axis:
            order += [n, axis]
        else:
            order.append(d if d < axis else d + 1)
    return BlockedEncodingAttr(spt, tpw, wpc, order)


def renames_registers(src_ll, dst_ll, axis: int) -> bool:
    """Whether renaming registers in order takes ``src`` (reduced along ``axis``) to ``dst`` (its
    axis split into ``axis``, ``axis + 1``) without moving any element off its row, or along the
    axis in one and not the other (see the module docstring)."""
    n = axis + 1
    for kind in ("register", "lane", "warp"):
        sb, db = getattr(src_ll, kind), getattr(dst_ll, kind)
        if len(sb) != len(db):
            return False
        for s, d in zip(sb, db):
            if s[:axis] + s[axis + 1:] != d[:axis] + d[n + 1:]:
                return False
            if bool(s[axis]) != bool(d[axis] or d[n]):
                return False
            if s[axis] and any(s[:axis] + s[axis + 1:]):
                return False  # not separable: the reduction lowering would move it to blocked first
    return True


@dataclass
class _Match:
    """One rewritable reduction: its loop, the conversion and combine after it, the iter arg ``k``,
    and the per-thread view (``shape3``, ``enc3``) of its operand."""

    loop: scf.ForOp
    reduce: Operation
    cvt: Operation | None
    update: Operation
    k: int
    axis: int
    enc3: BlockedEncodingAttr
    shape3: list[int]


def _match(reduce: Operation) -> _Match | None:
    if len(reduce.operands) != 1 or len(reduce.results) != 1:
        return None
    loop = reduce.parent_op()
    if not isinstance(loop, scf.ForOp):
        return None
    t = reduce.operands[0].type
    enc = encoding(t)
    if not isinstance(enc, BlockedEncodingAttr):
        return None
    combine = _combine_op(reduce)
    if combine is None or _neutral(combine.name, t.element_type) is None:
        return None
    axis = reduce.axis.value.data
    shape = t.get_shape()
    e = elems_per_thread(enc, shape)[axis]
    if e == 1 or shape[axis] % e:
        return None
    # reduce -> [convert_layout] -> combine(iter arg, .) -> yield, nothing else
    user = _single_use(reduce.results[0])
    cvt = None
    if isinstance(user, ConvertLayoutOp):
        cvt, user = user, _single_use(user.result)
    if user is None or user.name != combine.name or len(user.operands) != 2 \
            or user.properties != combine.properties:
        return None
    reduced = (cvt or reduce).results[0]
    acc = user.operands[1] if user.operands[0] is reduced else user.operands[0]
    body = loop.body.block
    if acc is reduced or acc.owner is not body or acc.index == 0 or _single_use(acc) is not user:
        return None
    k = acc.index - 1
    y = _single_use(user.results[0])
    if y is not body.last_op or body.last_op.operands[k] is not user.results[0]:
        return None
    shape3 = list(shape)
    shape3[axis] //= e
    shape3.insert(axis + 1, e)
    enc3 = local_encoding(enc, axis)
    try:
        ok = renames_registers(linear_layout(enc, shape), linear_layout(enc3, shape3), axis)
    except (NotImplementedError, ValueError):
        ok = False
    return _Match(loop, reduce, cvt, user, k, axis, enc3, shape3) if ok else None


def _reduced_type(t: TensorType, axis: int) -> Attribute:
    shape = t.get_shape()
    if len(shape) == 1:
        return t.element_type
    return TensorType(t.element_type, shape[:axis] + shape[axis + 1:], SliceEncodingAttr(axis, t.encoding))


def _reduce_like(reduce: Operation, src: SSAValue, axis: int) -> ReduceOp:
    new = ReduceOp([src], axis, [_reduced_type(src.type, axis)], reduce.combineOp.clone())
    new.attributes.update(reduce.attributes)
    new.location = reduce.location
    return new


def _combine_like(update: Operation, a: SSAValue, b: SSAValue) -> Operation:
    new = update.clone()
    new.operands[0], new.operands[1] = a, b
    set_type(new.results[0], a.type if isinstance(a.type, TensorType) else b.type)
    return new


def _rewrite(m: _Match) -> None:
    loop, reduce, update, axis = m.loop, m.reduce, m.update, m.axis
    n = axis + 1
    x = reduce.operands[0]
    elt = x.type.element_type
    acc_t = TensorType(elt, m.shape3[:n] + m.shape3[n + 1:], SliceEncodingAttr(n, m.enc3))
    init = loop.iter_args[m.k]
    neutral = make_const(acc_t, _neutral(update.name, elt), like=reduce)
    Rewriter.insert_op(neutral, InsertPoint.before(loop))

    # the loop with the per-thread partials carried beside the old iter args
    old_body = loop.body.block
    new = scf.ForOp(loop.lb, loop.ub, loop.step, [*loop.iter_args, neutral.result],
                    _moved_body(old_body, acc_t))
    new.attributes.update(loop.attributes)
    new.location = loop.location
    Rewriter.insert_op(new, InsertPoint.before(loop))
    body = new.body.block
    partial = body.args[-1]

    view = ReshapeOp(x, TensorType(elt, m.shape3, m.enc3))
    view.properties["allow_reorder"] = UnitAttr()
    view.properties["efficient_layout"] = UnitAttr()
    view.location = reduce.location
    local = _reduce_like(reduce, view.results[0], n)
    step = _combine_like(update, partial, local.results[0])
    Rewriter.insert_op([view, local, step], InsertPoint.before(reduce))
    y = body.last_op
    operands = list(y.operands)
    operands[m.k] = body.args[1 + m.k]  # the old accumulator now passes through; dropped below
    Rewriter.replace_op(y, scf.YieldOp(*operands, step.results[0]))

    for old, nw in zip(loop.results, new.results):
        old.replace_all_uses_with(nw)
    # across threads once, then the init value folded in
    across = _reduce_like(reduce, new.results[-1], axis)
    after = [across]
    total = across.results[0]
    want = (m.cvt or reduce).results[0].type
    if total.type != want:
        back = ConvertLayoutOp(total, want)
        back.location = reduce.location
        after.append(back)
        total = back.result
    final = _combine_like(update, init, total)
    after.append(final)
    Rewriter.insert_op(after, InsertPoint.after(new))
    new.results[m.k].replace_all_uses_with(final.results[0])
    for op in (update, m.cvt, reduce):
        if op is not None:
            Rewriter.erase_op(op)
    Rewriter.erase_op(loop, safe_erase=False)
    drop_invariant_iter_args(new)


def _moved_body(old_body, acc_t):
    """A new block with ``old_body``'s arguments plus one of type ``acc_t``, holding its ops."""
    body = Block(arg_types=[a.type for a in old_body.args] + [acc_t])
    for a, b in zip(old_body.args, body.args):
        a.replace_all_uses_with(b)
    for op in list(old_body.ops):
        op.detach()
        body.add_op(op)
    return Region(body)


class OptimizeThreadLocality:
    name = "optimize-thread-locality"

    def run(self, module: ModuleOp) -> None:
        for op in list(module.walk()):
            if isinstance(op, ReduceOp) and op.parent is not None:
                m = _match(op)
                if m is not None:
                    _rewrite(m)


def optimize_thread_locality(module: ModuleOp) -> ModuleOp:
    OptimizeThreadLocality().run(module)
    return module
