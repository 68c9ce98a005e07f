"""``cluster_pairs`` (option ``cluster_pairs``, sm_90, experimental, off): two programs next to
each other along the grid's x axis share the tiles their pipelined loops copy alike, each tile
read from L2 once and written into both CTAs' shared memory by one TMA multicast.

Programs keep their meaning: program ``i`` is CTA ``i`` (``program_id`` reads the CTA's id).  The
kernel is launched in clusters of two CTAs along x where the grid's x size is even (the driver's
``cluster_pairs`` launch, ``metadata["cluster_pairs"]``), without clusters otherwise, and what
the pair shares is decided at run time, so any grid and any arguments stay correct:

* A copy is a candidate where its tensor map cannot differ between the two programs (nothing it
  is built from, a host descriptor's map being a kernel argument and a
  ``tl.make_tensor_descriptor`` reading its base, shape and strides, depends on ``program_id``)
  and its coordinates and predicate are computed in the loop from
  the induction variable, constants and values from before the loop (its *invariants*) by
  ``arith`` ops alone.
* Before the loop, ``ttng.pair_setup``: the two CTAs exchange the loop's bounds and every
  candidate's invariants through distributed shared memory (``mapa`` + ``ld.shared::cluster``
  between two cluster barriers), and initialise one *empty* barrier per slot (two arrivals a
  phase).  Paired where the bounds agree; a candidate is shared where its invariants agree too,
  so its coordinates agree at every iteration.
* In the loop, after the block barrier before the refills (every warp of this CTA has read the
  slot they overwrite), ``ttng.pair_refill``: thread 0 arrives on the slot's empty barrier in
  both CTAs; the CTA whose turn it is (by iteration, alternating) waits until both have, then
  issues the shared copy once with ``.multicast::cluster`` (``ttng.pair_copy`` mode 1); the other
  only expects its bytes on its own full barrier (mode 2).  Other copies go alone (mode 0).  No
  cluster-wide barrier in the loop.
* After the loop, ``ttng.pair_teardown``: paired, a cluster barrier, so that neither CTA exits
  while its peer may still copy into its slots or arrive on its barriers.

A warp-specialized loop (``nvidia-warp-specialize``) pairs through its own hand-off: where
paired, its empty barriers count both CTAs' consumer warps (``ttng.pair_setup`` initialises them
again), each consumer warp arrives in both CTAs (``ttng.pair_arrive``), and the producer, which
already waits on them before each refill, issues its copies by the modes of a ``ttng.pair_refill``
without hand-off; the producer warps pass the last cluster barrier before they exit.

Applied only where every CTA of the pair is sure to reach each of these points the same number
of times: the loop is a top-level statement of the kernel (not in an ``if`` or another loop), the
kernel has one ``return`` at its end and no ``num_ctas`` clusters.  ``tritium.pair_reason`` on a
loop says why one was left.

Status (H200, docs/performance.md): results right for every shape tried; 0.83-0.93x of the same
kernel without it (128x256x64 and 128x128x64 tiles, 4096^3 and 8192^3), 0.93-1.00x with a
warp-specialized loop: no gain from halving the shared operand's reads yet, so the option stays
off.
"""
from __future__ import annotations

from typing import NamedTuple

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, StringAttr, i32
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from tritium.ttgir.ops import AsyncCopyDescriptorToLocalOp, BarrierOp, LocalAllocOp, MemDescIndexOp
from tritium.ttir.ops import FuncOp, ReturnOp

from .dialect import (ArriveBarrierOp, BulkStoreWaitOp, PairArriveOp, PairCopyOp, PairRefillOp, PairSetupOp,
                      PairTeardownOp, ProducerPartitionOp, TensorMapCreateOp)
from ..toolchain.occupancy import LIMITS, blocks_per_sm

#: on the module: the kernel decides pairs at run time; launch it in clusters of two where it can
CLUSTER_PAIRS = "tritium.cluster_pairs"
REASON = "tritium.pair_reason"

_PID = "tt.get_program_id"


def _depends_on_program(value: SSAValue) -> bool:
    """Whether ``value`` may differ between two programs of one launch: it reads ``program_id``,
    or comes from a region's argument or an op with regions (not followed)."""
    seen, stack = set(), [value]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, BlockArgument):
            if isinstance(v.block.parent_op(), FuncOp):
                continue  # a kernel argument: the same for every program
            return True
        op = v.owner
        if op.name == _PID or op.regions:
            return True
        stack.extend(op.operands)
    return False


def _map_is_shared(desc: SSAValue) -> bool:
    """A copy's tensor map is the same in every program: the value naming it and, for a map the
    kernel builds (``ttng.tensormap_create`` into its scratch), everything it is built from."""
    if _depends_on_program(desc):
        return False
    for use in desc.uses:
        if isinstance(use.operation, TensorMapCreateOp):
            create = use.operation
            if any(_depends_on_program(v) for v in create.operands if v is not create.desc_ptr):
                return False
    return True


def _invariants(copy, loop: scf.ForOp) -> list | None:
    """The values from outside ``loop`` that ``copy``'s coordinates and predicate are computed
    from (through the induction variable, constants and pure ``arith`` ops in the body), in a
    fixed order; None where they depend on anything else (a loop-carried value, a load)."""
    body = loop.body.blocks[0]
    iv = body.args[0]
    out, seen, stack = [], set(), [*reversed(list(copy.indices)), copy.pred]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v is iv:
            continue
        arg = isinstance(v, BlockArgument)
        if not loop.is_ancestor(v.block if arg else v.owner):
            if not arg and v.owner.name == "arith.constant":
                continue  # the same in both programs
            if not (isinstance(v.type, IntegerType) and v.type.width.data in (1, 32)):
                return None
            out.append(v)
            continue
        if arg:
            return None  # a loop-carried value
        op = v.owner
        if op.regions or not op.name.startswith("arith."):
            return None
        stack.extend(reversed(list(op.operands)))
    return out


def _shareable(copies: list, loop: scf.ForOp) -> tuple[list, list]:
    """The copies of ``loop`` both programs may share, and each one's invariants."""
    shared, invariants = [], []
    for c in copies:
        inv = _invariants(c, loop) if _map_is_shared(c.desc) else None
        if inv is not None:
            shared.append(c)
            invariants.append(inv)
    return shared, invariants


_NOTHING_SHARED = "no copy whose tensor map and coordinates both programs may share"


def _decline(loop: Operation, why: str) -> None:
    loop.attributes[REASON] = StringAttr(why)


def _plan(loop: scf.ForOp):
    """(the barrier before the refills, the shareable copies, each one's invariants) of ``loop``,
    or a reason string."""
    body = loop.body.blocks[0]
    copies = [op for op in loop.walk() if isinstance(op, AsyncCopyDescriptorToLocalOp)]
    if not copies:
        return "no pipelined descriptor copies"
    if any(c.parent_block() is not body for c in copies):
        return "a copy under a condition or in an inner loop"
    if not all(isinstance(t, IntegerType) and t.width.data == 32
               for t in (loop.lb.type, loop.ub.type, loop.step.type)):
        return "bounds of other than 32 bits"
    shared, invariants = _shareable(copies, loop)
    if not shared:
        return _NOTHING_SHARED
    if any(c.index is not shared[0].index or c.bars.type.get_shape()[0] != shared[0].bars.type.get_shape()[0]
           for c in shared):
        return "refills into different slots in one iteration"
    barrier = copies[0].prev_op
    while barrier is not None and not isinstance(barrier, BarrierOp):
        if not (isinstance(barrier, (MemDescIndexOp, BulkStoreWaitOp)) or not barrier.regions
                and barrier.name.startswith("arith.")):
            return f"{barrier.name} between the refills' barrier and the first refill"
        barrier = barrier.prev_op
    if barrier is None:
        return "no block barrier before the refills"
    return barrier, shared, invariants


def _eligible_kernel(f: FuncOp) -> str | None:
    body = f.body.blocks[0] if f.body.blocks else None
    returns = [op for op in f.walk() if isinstance(op, ReturnOp)]
    if body is None or len(returns) != 1 or returns[0] is not body.last_op:
        return "a return before the kernel's end"
    return None


def _setup(at: Operation, loop: scf.ForOp, invariants: list, nslots: int, setup_offset: int, empty_offset: int,
           empty_count: int) -> PairSetupOp:
    """``ttng.pair_setup`` for ``loop``'s bounds and the copies' ``invariants``, before ``at``."""
    block = at.parent_block()
    values = []
    for inv in invariants:
        for v in inv:
            if v.type.width.data == 1:
                ext = arith.ExtUIOp(v, i32)
                block.insert_op_before(ext, at)
                v = ext.result
            values.append(v)
    setup = PairSetupOp(loop.lb, loop.ub, loop.step, values, [len(v) for v in invariants], nslots, empty_offset,
                        empty_count)
    setup.attributes["allocation.offset"] = IntegerAttr(setup_offset, i32)
    block.insert_op_before(setup, at)
    return setup


def _modes_and_copies(loop: scf.ForOp, anchor: Operation, setup: PairSetupOp, shared: list, nslots: int,
                      empty_offset: int, handoff: bool) -> None:
    """Before ``anchor`` in ``loop``'s body: the iteration's number and ``ttng.pair_refill``; each
    shared copy becomes a ``ttng.pair_copy`` of the mode it gives."""
    body = loop.body.blocks[0]
    sub = arith.SubiOp(body.args[0], loop.lb)  # the iteration's number from 0: (iv - lb) / step
    t = arith.DivSIOp(sub.result, loop.step)
    refill = PairRefillOp(setup.paired, t.result, shared[0].index, list(setup.shares), nslots, empty_offset, handoff)
    for op in (sub, t, refill):
        body.insert_op_before(op, anchor)
    for c, mode in zip(shared, refill.modes):
        copy = PairCopyOp(c.desc, list(c.indices), c.result, c.bars, c.index, c.pred, mode)
        copy.attributes.update(c.attributes)
        body.insert_op_before(copy, c)
        c.detach()
        c.erase()


def _teardown_after(op: Operation, paired: SSAValue) -> None:
    Rewriter.insert_op(PairTeardownOp(paired), InsertPoint.after(op))


def _rewrite(loop: scf.ForOp, barrier: BarrierOp, shared: list, invariants: list, setup_offset: int,
             empty_offset: int) -> None:
    nslots = shared[0].bars.type.get_shape()[0]
    setup = _setup(loop, loop, invariants, nslots, setup_offset, empty_offset, 2)
    _modes_and_copies(loop, barrier.next_op, setup, shared, nslots, empty_offset, True)
    _teardown_after(loop, setup.paired)


class _WarpSpecialized(NamedTuple):
    """A warp-specialized loop (``nvidia-warp-specialize``): its producer partition and loop, the
    consumers' loop, their empty barriers (allocation and initialisation) and hand-back."""
    part: Operation
    producer: scf.ForOp
    consumers: scf.ForOp
    empty: Operation
    arrive: Operation


def _find_ws(f: FuncOp) -> _WarpSpecialized | str:
    body = f.body.blocks[0]
    parts = [op for op in f.walk() if isinstance(op, ProducerPartitionOp)]
    if len(parts) != 1 or parts[0].parent_block() is not body:
        return "a producer partition not in the kernel's body"
    part = parts[0]
    producers = [op for op in part.body.blocks[0].ops if isinstance(op, scf.ForOp)]
    op = part.next_op
    while op is not None and not isinstance(op, scf.ForOp):
        op = op.next_op
    if len(producers) != 1 or op is None:
        return "not the producer and consumer loops of a warp-specialized loop"
    arrives = [a for a in op.walk() if isinstance(a, ArriveBarrierOp)]
    if len(arrives) != 1 or arrives[0].parent_block() is not op.body.blocks[0]:
        return "the consumers hand slots back other than once an iteration"
    empty = arrives[0].bars.owner
    if not isinstance(empty, LocalAllocOp) or "allocation.offset" not in empty.attributes:
        return "the consumers' empty barriers are not an allocation of their own"
    return _WarpSpecialized(part, producers[0], op, empty, arrives[0])


def _plan_ws(ws: _WarpSpecialized):
    copies = [op for op in ws.producer.walk() if isinstance(op, AsyncCopyDescriptorToLocalOp)]
    body = ws.producer.body.blocks[0]
    if not copies or any(c.parent_block() is not body for c in copies):
        return "the producer's copies are not all in its loop's body"
    shared, invariants = _shareable(copies, ws.producer)
    return (shared, invariants) if shared else _NOTHING_SHARED


def _rewrite_ws(ws: _WarpSpecialized, shared: list, invariants: list, setup_offset: int, consumer_warps: int) -> None:
    """The producer waits on the consumers' empty barriers as before; paired, they count both
    CTAs' consumer warps (each arrives here and in the peer), so the slot is free in both when
    the producer whose turn it is multicasts into it."""
    nslots = ws.empty.results[0].type.get_shape()[0]
    empty_offset = ws.empty.attributes["allocation.offset"].value.data
    setup = _setup(ws.part, ws.consumers, invariants, nslots, setup_offset, empty_offset, 2 * consumer_warps)
    _modes_and_copies(ws.producer, shared[0], setup, shared, nslots, empty_offset, False)
    a = ws.arrive
    a.parent_block().insert_op_before(PairArriveOp(a.bars, a.index, a.pred, setup.paired), a)
    a.detach()
    a.erase()
    # every thread of both CTAs passes the last cluster barrier: the producer's before it exits
    ws.part.body.blocks[0].add_op(PairTeardownOp(setup.paired))
    _teardown_after(ws.consumers, setup.paired)


def _shared_bytes(op: Operation) -> int:
    """The shared memory the allocator gave ``op`` (a function or the module), 0 if none."""
    return op.attributes["ttg.shared"].value.data if "ttg.shared" in op.attributes else 0


def _setup_offset(f: FuncOp) -> int:
    """Where the setup's words go: after the kernel's shared memory, 16-byte aligned."""
    return -(-_shared_bytes(f) // 16) * 16


def _costs_a_block(f: FuncOp, limits, warps: int, total: int) -> bool:
    """Whether growing ``f``'s shared memory to ``total`` bytes lowers the blocks an SM runs."""
    return limits is not None and \
        blocks_per_sm(limits, 1, warps, total) < blocks_per_sm(limits, 1, warps, _shared_bytes(f))


_NO_ROOM = "the exchange table would cost a block an SM"


def _grow_shared(module: ModuleOp, f: FuncOp, total: int) -> None:
    f.attributes["ttg.shared"] = IntegerAttr(total, i32)
    module.attributes["ttg.shared"] = IntegerAttr(max(_shared_bytes(module), total), i32)


def _pair_ws_kernel(module: ModuleOp, f: FuncOp, limits) -> bool:
    ws = _find_ws(f)
    why = ws if isinstance(ws, str) else _eligible_kernel(f)
    plan = why or _plan_ws(ws)
    if isinstance(plan, str):
        for loop in [op for op in f.walk() if isinstance(op, scf.ForOp)]:
            _decline(loop, plan)
        return False
    shared, invariants = plan
    setup_offset = _setup_offset(f)
    total = setup_offset + 4 * (3 + sum(len(v) for v in invariants))
    if _costs_a_block(f, limits, module.attributes["ttg.total-num-warps"].value.data, total):
        _decline(ws.consumers, _NO_ROOM)
        return False
    _rewrite_ws(ws, shared, invariants, setup_offset, ws.part.count("consumer_warps"))
    _grow_shared(module, f, total)
    return True


def cluster_pairs(module: ModuleOp, capability: int, options) -> bool:
    """Rewrite the kernel's eligible loops (after membar: the refills' block barrier is known);
    True where one was, which marks the module (:data:`CLUSTER_PAIRS`)."""
    if capability != 90 or not getattr(options, "cluster_pairs", False) or getattr(options, "num_ctas", 1) != 1:
        return False
    limits = LIMITS.get(capability)
    done = False
    for f in [op for op in module.ops if isinstance(op, FuncOp) and op.is_public]:
        if any(isinstance(op, ProducerPartitionOp) for op in f.walk()):
            done |= _pair_ws_kernel(module, f, limits)
            continue
        loops = [op for op in f.body.blocks[0].ops if isinstance(op, scf.ForOp)] if f.body.blocks else []
        why = _eligible_kernel(f)
        plans = []
        for loop in loops:
            plan = why or _plan(loop)
            if isinstance(plan, str):
                _decline(loop, plan)
            else:
                plans.append((loop, *plan))
        if not plans:
            continue
        setup_offset = _setup_offset(f)
        words = max(3 + sum(len(v) for v in p[3]) for p in plans)
        empty_offset = setup_offset + -(-4 * words // 16) * 16
        total = empty_offset + 8 * max(p[2][0].bars.type.get_shape()[0] for p in plans)
        warps = module.attributes["ttg.num-warps"].value.data if "ttg.num-warps" in module.attributes else 4
        if _costs_a_block(f, limits, warps, total):
            for loop, *_ in plans:
                _decline(loop, _NO_ROOM)
            continue
        for loop, barrier, shared, invariants in plans:
            _rewrite(loop, barrier, shared, invariants, setup_offset, empty_offset)
        _grow_shared(module, f, total)
        done = True
    if done:
        module.attributes[CLUSTER_PAIRS] = IntegerAttr(1, i32)
    return done
