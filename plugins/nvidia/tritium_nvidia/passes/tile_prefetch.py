"""``nvidia-tile-prefetch``: a persistent kernel's next tile starts loading during this tile's epilogue.

A persistent kernel loops over output tiles and runs a pipelined K loop for each.  The pipeline
pass gives that K loop its own start inside the tile loop: slot buffers and their barriers
allocated and initialised, the first ``P`` iterations' copies issued (the *prologue*; ``P`` is
``S - 1`` for ``S`` slots, ``S - 2`` with a spare slot), the K loop, the barriers invalidated, then
the epilogue (the accumulator converted and stored).  So each tile begins by
waiting a whole load latency for its first slot, with the tensor cores idle, and that wait comes
right after the previous tile's epilogue, which kept them idle too.

Here the ring of slots runs across tiles instead:

* the slot buffers and barriers are allocated and initialised once, before the tile loop, and
  invalidated after it;
* the tile loop carries the K loop's slot, refill slot and phase counters from one tile to the
  next, so every barrier's phases keep counting (a tile's K loop starts where the previous one
  stopped, not at slot 0);
* the prologue of tile ``t + step`` is issued at the end of tile ``t``'s K loop, once its last
  ``wgmma`` has retired and a block barrier has seen every warp done with the slots, before the
  epilogue: the copies land while the epilogue runs.  The first tile's prologue is issued before
  the loop.  Each prologue sits in an ``scf.if`` on its tile existing, so its address arithmetic
  (divisions by values derived from the tile index) never runs for a tile past the end.

Iteration ``j`` of the prologue copies into slot ``(s + j) mod S`` where ``s`` is the slot the next
K loop starts at; its copies are exactly the ones the previous K loop's last refills skipped
(their iterations were past its end), so each barrier completes one phase per copy, as the
consumers' parities expect.

A tile loop is taken only in the shape the pipeline makes: one K loop whose waits and refills use
one slot counter each and one phase, started from the constants ``0``, ``P`` and ``0``; a prologue
of descriptor copies into slots ``0 .. P - 1`` whose addresses are arithmetic of the tile index
(divisions included: it runs only for a tile that exists); the buffers and barriers allocated in
the tile loop's body; the K loop's accumulator retired by a ``warp_group_dot_wait`` of no pendings
after it; and an epilogue whose shared memory (a TMA store's tile) has bytes of its own across
the tile loop already (``tma.OwnStoreTiles``), since the rings now stay live through it.  Anything
else is left as it is, with the reason in ``tritium.prefetch_reason`` on the tile loop.
"""
from __future__ import annotations

from typing import NamedTuple

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i32
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from tritium.ttgir.ops import (AsyncCopyDescriptorToLocalOp, BarrierOp, InitBarriersOp, InvalBarriersOp, LocalAllocOp,
                               MemDescIndexOp, WaitBarrierOp)
from tritium.ttgir.passes._util import iter_arg_index, with_extra_iter_args
from tritium.ttgir.passes.allocate_shared_memory import SCRATCH_ACROSS_LOOPS
from tritium.ttgir.scratch import scratch_size
from tritium.ttir import arith
from tritium.ttir.passes._fold import const_value

from .dialect import WarpGroupDotWaitOp
from .tma import SCRATCH_SIZES

#: on a tile loop left as it is: why
REASON = "tritium.prefetch_reason"


class _Plan(NamedTuple):
    inner: scf.ForOp
    nslots: int
    ahead: int  # iterations the prologue issues (the refill slot's start)
    counters: tuple  # the K loop's iter-arg positions of (slot, refill slot, phase)
    prologue: list  # the descriptor copies before the K loop, in order
    slots: list  # each prologue copy's constant slot
    hoisted: list  # allocations and barrier initialisations to move before the tile loop
    invals: list  # barrier invalidations to move after it
    slice_ops: list  # what the prologue's copies compute from the tile index, in body order
    retire: Operation  # the wait that retires the K loop's last wgmma


class TilePrefetch:
    """Run after the pipeline, the dot waits and the TMA passes, before warp specialization."""

    name = "nvidia-tile-prefetch"

    def run(self, module: ModuleOp) -> None:
        for loop in [op for op in module.walk() if isinstance(op, scf.ForOp)]:
            plan = _plan(loop)
            if isinstance(plan, str):
                loop.attributes[REASON] = StringAttr(plan)
            elif plan is not None:
                _rewrite(loop, plan)


def _plan(outer: scf.ForOp) -> _Plan | str | None:
    """The tile loop's plan; why not (a string) for a loop holding a K loop of barrier waits; None otherwise."""
    body = outer.body.block
    inners = [op for op in body.ops if isinstance(op, scf.ForOp)]
    if not any(isinstance(o, WaitBarrierOp) for loop in inners for o in loop.body.block.ops):
        return None  # no K loop of the pipeline's copies: nothing to say
    if len(inners) != 1:
        return "the tile loop holds more than one loop"
    inner = inners[0]
    iops = list(inner.body.block.ops)
    waits = [op for op in iops if isinstance(op, WaitBarrierOp)]
    refills = [op for op in iops if isinstance(op, AsyncCopyDescriptorToLocalOp)]
    if not waits or not refills:
        return None
    slot = iter_arg_index(inner, waits[0].index)
    phase = iter_arg_index(inner, waits[0].phase)
    nxt = iter_arg_index(inner, refills[0].index)
    if None in (slot, phase, nxt) or len({slot, phase, nxt}) != 3:
        return "the K loop's waits and refills do not use iteration arguments as their slot and phase"
    if any(w.index is not waits[0].index or w.phase is not waits[0].phase for w in waits) \
            or any(c.index is not refills[0].index for c in refills):
        return "the K loop's waits or refills use more than one slot counter"
    bars = {id(w.bars): w.bars for w in waits}
    if set(bars) != {id(c.bars) for c in refills}:
        return "the K loop's waits and refills use different barriers"
    nslots = {b.type.get_shape()[0] for b in bars.values()}
    if len(nslots) != 1:
        return "the K loop's rings have different slot counts"
    nslots = nslots.pop()
    ahead = const_value(inner.iter_args[nxt])  # iterations the prologue issues (a spare slot: one fewer than slots)
    if [const_value(inner.iter_args[k]) for k in (slot, phase)] != [0, 0] or not isinstance(ahead, int) \
            or not 0 < ahead < nslots:
        return "the K loop's counters do not start at the pipeline's constants"
    # the prologue: descriptor copies before the K loop into constant slots 0 .. ahead-1
    before = []
    for op in body.ops:
        if op is inner:
            break
        before.append(op)
    prologue = [op for op in before if isinstance(op, AsyncCopyDescriptorToLocalOp)]
    if not prologue:
        return "no prologue copies before the K loop"
    slots = []
    buffers = {}
    for c in prologue:
        s = const_value(c.index)
        view = c.result.owner
        if not isinstance(s, int) or not 0 <= s < ahead or id(c.bars) not in bars \
                or not isinstance(view, MemDescIndexOp) or const_value(view.index) != s \
                or len(list(view.result.uses)) != 1:
            return "a prologue copy is not into a constant slot of a ring the K loop waits on"
        slots.append(s)
        buffers[id(view.src)] = view.src
    if sorted(set(slots)) != list(range(ahead)):
        return "the prologue does not fill the slots the K loop's refills start after"
    # buffers and barriers made in the tile loop's body, initialised there, invalidated after the K loop
    hoisted = []
    for v in list(buffers.values()) + list(bars.values()):
        if not isinstance(v.owner, LocalAllocOp) or v.owner.parent_block() is not body or v.owner.operands:
            return "the rings or barriers are not allocated in the tile loop's body"
        hoisted.append(v.owner)
    for op in before:
        if isinstance(op, InitBarriersOp) and id(op.operands[0]) in bars:
            hoisted.append(op)
    after = list(body.ops)[list(body.ops).index(inner) + 1:]
    invals = [op for op in after if isinstance(op, InvalBarriersOp) and id(op.operands[0]) in bars]
    if len(invals) != len(bars) or sum(isinstance(op, InitBarriersOp) for op in hoisted) != len(bars):
        return "the barriers are not initialised and invalidated around the K loop"
    for v in list(buffers.values()) + list(bars.values()):
        if any(not outer.is_ancestor(u.operation) for u in v.uses):
            return "a ring is used outside the tile loop"
    for op in after:
        for o in op.walk():
            own = scratch_size(o, SCRATCH_SIZES) and SCRATCH_ACROSS_LOOPS not in o.attributes
            if isinstance(o, LocalAllocOp) or own:
                # bytes that could share the rings' while they were dead after the K loop
                return "the epilogue takes shared memory of its own"
    retire = next((op for op in after if isinstance(op, WarpGroupDotWaitOp) and op.pendings.value.data == 0
                   and any(o.owner is inner for o in op.operands)), None)
    if retire is None:
        return "no warp_group_dot_wait retires the K loop's last wgmma after it"
    # the copies' other operands: pure arithmetic of the tile index and of values from outside
    slice_ops: set = set()
    views = {id(c.result.owner) for c in prologue}
    work = [v for c in prologue for v in (c.desc, *c.indices, c.pred)]
    while work:
        v = work.pop()
        if isinstance(v, BlockArgument) and v.block is body and v.index > 0:
            return "the prologue's addresses read a value the tile loop carries"
        op = v.owner
        if not isinstance(op, Operation) or op.parent_block() is not body or op in slice_ops:
            continue
        if not is_side_effect_free(op) or op.regions or id(op) in views:
            return "the prologue's addresses need more than pure arithmetic of the tile index"
        slice_ops.add(op)
        work.extend(op.operands)
    ordered = [op for op in before if op in slice_ops]
    return _Plan(inner, nslots, ahead, (slot, nxt, phase), prologue, slots, hoisted, invals, ordered, retire)


def _rewrite(outer: scf.ForOp, plan: _Plan) -> None:
    inner, nslots = plan.inner, plan.nslots
    slot_k, next_k, phase_k = plan.counters
    # 1. buffers and barriers once, around the tile loop
    for op in plan.hoisted:
        op.detach()
        Rewriter.insert_op(op, InsertPoint.before(outer))
    Rewriter.insert_op(BarrierOp(), InsertPoint.before(outer))  # every thread sees them initialised
    for op in plan.invals:
        op.detach()
        Rewriter.insert_op(op, InsertPoint.after(outer))

    # 2. the tile loop carries the K loop's counters
    inits = [arith.ConstantOp(IntegerAttr(v, i32)) for v in (0, plan.ahead, 0)]
    Rewriter.insert_op(inits, InsertPoint.before(outer))
    new, body = with_extra_iter_args(outer, [c.result for c in inits])
    carried = list(body.args[-3:])
    for k, arg in zip((slot_k, next_k, phase_k), carried):
        inner.operands[3 + k] = arg  # scf.for operands: lb, ub, step, then the iter args
    yield_op = body.last_op
    yield_op.operands = [*yield_op.operands, *(inner.results[k] for k in (slot_k, next_k, phase_k))]
    new_results = list(new.results)
    for old, nw in zip(outer.results, new_results):
        old.replace_all_uses_with(nw)
    outer.detach()
    outer.erase()
    iv = body.args[0]

    # 3. the prologue of the first tile before the loop, of the next one at the end of this one
    zero_slot = inits[0].result
    first = _prologue_if(new.lb, new.ub, iv, new.lb, zero_slot, nslots, plan)
    Rewriter.insert_op(first, InsertPoint.before(new))
    nxt_iv = arith.AddIOp(iv, new.step)
    barrier = BarrierOp()  # every warp has retired its wgmma reading the slots
    Rewriter.insert_op([nxt_iv, barrier], InsertPoint.after(plan.retire))
    later = _prologue_if(nxt_iv.result, new.ub, iv, nxt_iv.result, inner.results[slot_k], nslots, plan)
    Rewriter.insert_op(later, InsertPoint.after(barrier))

    # 4. the original prologue goes (its arithmetic, if unused now, goes to DCE)
    for c in plan.prologue:
        view = c.result.owner
        c.detach()
        c.erase()
        view.detach()
        view.erase()


def _prologue_if(tile: SSAValue, ub: SSAValue, iv: SSAValue, value: SSAValue, start: SSAValue, nslots: int,
                 plan: _Plan) -> list[Operation]:
    """``[cond, scf.if cond { prologue of tile ``value`` into slots start, start + 1, ... } ]``:
    the slice re-evaluated with the tile index ``iv`` taken as ``value``."""
    cond = arith.CmpIOp(tile, ub, "slt")
    block = Block()
    env: dict = {iv: value}
    for op in plan.slice_ops:
        new = op.clone(value_mapper=env)
        block.add_op(new)
        for old, nw in zip(op.results, new.results):
            env[old] = nw
    slot_of: dict[int, SSAValue] = {}
    for c, s in zip(plan.prologue, plan.slots):
        if s not in slot_of:
            if s == 0:
                slot_of[s] = start
            else:
                k = arith.ConstantOp(IntegerAttr(s, i32))
                wrap = arith.ConstantOp(IntegerAttr(s - nslots, i32))
                limit = arith.ConstantOp(IntegerAttr(nslots - s, i32))
                plain, wrapped = arith.AddIOp(start, k.result), arith.AddIOp(start, wrap.result)
                past = arith.CmpIOp(start, limit.result, "sge")
                sel = arith.SelectOp(past.result, wrapped.result, plain.result)
                for op in (k, wrap, limit, plain, wrapped, past, sel):
                    block.add_op(op)
                slot_of[s] = sel.result
        view = c.result.owner
        nv = MemDescIndexOp(view.src, slot_of[s])
        block.add_op(nv)
        copy = AsyncCopyDescriptorToLocalOp(env.get(c.desc, c.desc), [env.get(i, i) for i in c.indices], nv.result,
                                            c.bars, slot_of[s], env.get(c.pred, c.pred))
        copy.attributes.update(c.attributes)
        block.add_op(copy)
    block.add_op(scf.YieldOp())
    return [cond, scf.IfOp(cond.result, [], Region(block))]
