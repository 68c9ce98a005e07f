"""``nvidia-warp-specialize``: a producer warp group for a pipelined loop marked
``tl.range(..., warp_specialize=True)`` (sm_90).

The pipeline pass has already turned the loop's descriptor loads into copies of the copy engine
(TMA) into ``NSLOTS`` slots, each completing on its *full* barrier, issued ``S - 1`` iterations
ahead by the block's thread 0, with a block barrier before each refill (every warp must have read
the slot the refill overwrites).  Here the copies move to warps of their own:

* the block gets one more warp group (``ttg.total-num-warps``), after the ``num_warps`` warps the
  layouts use (the *consumers*);
* ``ttng.producer_partition`` before the loop holds the *producer*: a loop over the same
  iterations that evaluates only what the copies need (their coordinates, slots and predicates:
  the backward slice of the copies in the body, with the loop-carried values it reads) and,
  before refilling a slot, waits on that slot's *empty* barrier for the consumers to hand it back.
  The producer lowers its register budget (``setmaxnreg``) and exits when done; the consumers
  raise theirs;
* the consumers' loop keeps everything else (the waits on the full barriers, the ``wgmma``s)
  and, once the ``warp_group_dot_wait`` of iteration ``i`` has retired iteration ``i - 1``'s
  dots, each consumer warp arrives on the empty barrier of ``i - 1``'s slot
  (``ttng.arrive_barrier``): no block barrier in the loop any more.

Use ``u`` of a slot (the ``u``-th iteration copied into it, ``u = j // NSLOTS`` for iteration
``j``) waits for phase ``u - 1`` of its empty barrier: parity ``(u & 1) ^ 1``, which a fresh
barrier passes at once for ``u = 0``.  An iteration past the end copies nothing and waits for
nothing.  The prologue's copies (iterations ``0 .. S-2``) stay where the pipeline put them,
before the producer starts.

Barriers: one block barrier before the partition publishes every barrier's initialisation to
both sides; after it only the consumers synchronise, so :func:`consumer_barriers` (run after
membar) makes every later block barrier a named one counting the consumer threads
(``bar.sync 1, N``; after the producer has exited, a full one would also do) and drops any
inside the producer.

A loop that does not fit stays as it is, with the reason in ``tritium.ws_reason`` on it: not in
a kernel's body (nested in another loop or an ``if``), no pipelined descriptor copies, copies
that need more than the slice above, ``num_warps`` not a multiple of 4, work before the loop
that writes memory (the producer warps run it too), or a consumer loop without a
``warp_group_dot_wait`` retiring the previous iteration.
"""
from __future__ import annotations

from typing import NamedTuple

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i32, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import Pure

from tritium.ttgir.ops import (AsyncCopyDescriptorToLocalOp, BarrierOp, InitBarriersOp, InvalBarriersOp,
                               LocalAllocOp, MemDescIndexOp, WaitBarrierOp)
from tritium.ttgir.passes._util import iter_arg_index
from tritium.ttgir.types import MemDescType
from tritium.ttir import arith
from tritium.ttir.ops import FuncOp
from tritium.ttir.passes._fold import const_value

from .dialect import (ArriveBarrierOp, BulkStoreWaitOp, FenceAsyncSharedOp, ProducerPartitionOp, TensorMapAcquireOp,
                      TensorMapCreateOp, WarpGroupDotOp, WarpGroupDotWaitOp, WarpGroupTurnOp)
from ..toolchain.occupancy import LIMITS, REGISTER_FILE, blocks_per_sm

WARP_SPECIALIZE = "tt.warp_specialize"
REASON = "tritium.ws_reason"
#: on a ``ttg.barrier`` the consumers alone pass: (barrier id, threads)
NAMED_BARRIER = "ttng.named_barrier"

PRODUCER_WARPS = 4
#: registers a producer thread keeps
PRODUCER_REGS = 40
#: a split for more blocks an SM (:func:`shared_split`) is tried only where each consumer thread
#: keeps this many registers (what attention's unspecialized d64 kernel runs at)
MIN_CONSUMER_REGS = 168


def consumer_registers(consumer_warps: int, blocks: int = 1) -> int:
    """What each consumer thread may take once the producer has given its registers back: the
    block's share of the file (``blocks`` blocks an SM) over the consumers, a multiple of 8, at
    most 256 (``setmaxnreg``'s range is 24..256)."""
    per = (REGISTER_FILE // blocks - PRODUCER_WARPS * 32 * PRODUCER_REGS) // (consumer_warps * 32)
    return max(24, min(256, per // 8 * 8))


def _entry(total_warps: int, blocks: int = 1) -> int:
    return min(255, REGISTER_FILE // (blocks * total_warps * 32)) // 8 * 8


def entry_registers(module: ModuleOp) -> int | None:
    """The per-thread register count a warp-specialized kernel starts with (``.maxnreg``), or None
    for a kernel without the split: the file over all its threads, a multiple of 8.  ``setmaxnreg``
    moves registers between the groups from that known start; without it ptxas picks the entry
    count itself (114 for attention d64 128x64 against the 168 the split assumes), and it may
    ignore the ``setmaxnreg`` (C7508, "unable to determine register count at entry")."""
    total = module.attributes.get("ttg.total-num-warps")
    if total is None:
        return None
    return _entry(total.value.data)


class Split(NamedTuple):
    """A warp-specialized kernel's register split: ``.maxnreg`` at entry, the consumers' count."""
    blocks: int
    entry: int
    consumers: int


def shared_split(capability: int, total_warps: int, shared: int) -> Split | None:
    """The split for the most blocks an SM (two or more) that the kernel's shared memory allows and
    that leaves each consumer thread :data:`MIN_CONSUMER_REGS` or more, else None.  Pinned to the
    whole file (:func:`entry_registers`), a kernel with one consumer warp group runs one group of
    ``wgmma`` an SM; two blocks give its consumers 216 registers (entry 128) against 256.  Two
    consumer groups would keep 104 and stay alone.  The ``cubin`` stage assembles the kernel with
    this split as a trial and keeps it where ptxas spills (next to) nothing."""
    limits = LIMITS.get(capability)
    consumer_warps = total_warps - PRODUCER_WARPS
    if capability != 90 or limits is None or consumer_warps <= 0:  # setmaxnreg: sm_90a
        return None
    room = blocks_per_sm(limits, 1, total_warps, shared)  # what the shared memory and warps allow
    fits = [b for b in range(2, room + 1) if consumer_registers(consumer_warps, b) >= MIN_CONSUMER_REGS]
    if not fits:
        return None
    blocks = max(fits)
    return Split(blocks, _entry(total_warps, blocks), consumer_registers(consumer_warps, blocks))


class _Plan(NamedTuple):
    """What ``_plan`` found in a loop it takes: the copies, the slot count, the counter's start (the
    first iteration the loop copies), the copies' slice and the loop-carried arguments it reads,
    the consumers' wait on the full barriers and the wait that retires the previous wgmma."""
    copies: list
    nslots: int
    first: int
    slice_ops: set
    carried: list
    full_wait: Operation
    retire: Operation


class WarpSpecialize:
    """Run after the pipeline and before a CSE and DCE, which drop what the consumers no longer
    use (the copies' address slice)."""

    name = "nvidia-warp-specialize"

    def __init__(self, capability: int, num_warps: int, pingpong: bool = False):
        self.capability, self.num_warps, self.pingpong = capability, num_warps, pingpong

    def run(self, module: ModuleOp) -> None:
        done = False
        for loop in [op for op in module.walk() if isinstance(op, scf.ForOp) and WARP_SPECIALIZE in op.attributes]:
            if done:
                loop.attributes[REASON] = StringAttr("one warp-specialized loop a kernel")
                continue
            plan = self._plan(loop)
            if isinstance(plan, str):
                loop.attributes[REASON] = StringAttr(plan)
                continue
            self._specialize(loop, plan)
            done = True
        if done:
            module.attributes["ttg.total-num-warps"] = IntegerAttr(self.num_warps + PRODUCER_WARPS, i32)

    # -- the decision -------------------------------------------------------------------------
    def _plan(self, loop: scf.ForOp) -> _Plan | str:
        """The loop's plan, or why it is not specialized."""
        if self.capability != 90:
            return f"warp specialization is for sm_90 (this target: sm_{self.capability})"
        if self.num_warps % 4:
            return f"num_warps={self.num_warps} is not whole warp groups"
        if any(isinstance(op, scf.ForOp) for op in loop.body.block.ops):
            return "the loop holds a loop: the copies to specialize are the inner loop's (a persistent " \
                   "kernel's tile loop around its K loop is not specialized yet)"
        func = loop.parent_op()
        if not isinstance(func, FuncOp) or not func.is_public:
            return "the loop is not in the kernel's own body (nested in a loop, an if, or a callee)"
        body = loop.body.block
        copies = [op for op in body.ops if isinstance(op, AsyncCopyDescriptorToLocalOp)]
        if not copies:
            return "no descriptor loads the pipeline copies with the copy engine"
        if len({id(c.index) for c in copies}) != 1 or len({id(c.pred) for c in copies}) != 1:
            return "the loop's copies use different slots or predicates"
        k = iter_arg_index(loop, copies[0].index)
        first = const_value(loop.iter_args[k]) if k is not None else None
        nslots = _slots(copies[0])
        if not isinstance(first, int) or nslots is None or not 0 < first < nslots:
            return "the copies' slot is not a loop-carried counter the pipeline started"
        if any(loop.is_ancestor(c.desc.owner) for c in copies):
            return "the copies' tensor maps are made in the loop"
        slice_ops, carried = _producer_slice(loop, copies)
        if slice_ops is None:
            return "the copies depend on work other than address arithmetic"
        waits = [op for op in body.ops if isinstance(op, WaitBarrierOp)]
        if not waits or len({id(w.index) for w in waits}) != 1:
            return "the consumers do not wait on the copies' barriers at one slot"
        dots = [op for op in body.ops if isinstance(op, WarpGroupDotOp)]
        retire = [op for op in body.ops if isinstance(op, WarpGroupDotWaitOp)]
        if not dots or not retire or retire[0].pendings.value.data > len(dots):
            return "no warp_group_dot_wait retires the previous iteration's wgmma"
        for op in body.ops:
            if op is retire[0]:
                break
            if not (isinstance(op, (WaitBarrierOp, WarpGroupDotOp, BulkStoreWaitOp, AsyncCopyDescriptorToLocalOp))
                    or _pure(op)):
                return f"{op.name} before the dots' wait reads what the producer may refill"
        for op in func.body.block.ops:
            if op is loop:
                break
            if not _safe_before(op):
                return f"{op.name} before the loop writes memory (the producer warps run it too)"
        return _Plan(copies, nslots, first, slice_ops, carried, waits[0], retire[0])

    # -- the rewrite --------------------------------------------------------------------------
    def _specialize(self, loop: scf.ForOp, plan: _Plan) -> None:
        body = loop.body.block
        copies, nslots = plan.copies, plan.nslots
        before = InsertPoint.before(loop)

        # the empty barriers: one arrival a consumer warp a phase
        bar_type = copies[0].bars.type
        empty = LocalAllocOp(MemDescType([nslots], i64, bar_type.encoding, bar_type.memory_space, mutable=True))
        Rewriter.insert_op([empty, InitBarriersOp(empty.results[0], self.num_warps),
                            BarrierOp()], before)  # both sides see every barrier initialised

        # the producer: the slice of the copies, over the same iterations
        pblock = Block()
        maps: list[SSAValue] = []
        for c in copies:
            if all(c.desc is not m for m in maps):
                maps.append(c.desc)
                # the producer's first thread copies through the map: it acquires it itself (the
                # kernel's acquire, or the map's building, made it visible to thread 0 alone)
                pblock.add_op(TensorMapAcquireOp(c.desc))
        first = _add(pblock, arith.ConstantOp(IntegerAttr(plan.first, i32)))
        carried = plan.carried
        pbody = Block(arg_types=[body.args[0].type] + [loop.iter_args[k].type for k in carried] + [i32])
        env: dict[SSAValue, SSAValue] = {body.args[0]: pbody.args[0]}
        for n, k in enumerate(carried):
            env[body.args[k + 1]] = pbody.args[n + 1]
        j = pbody.args[-1]
        waited = False
        for op in body.ops:
            if op not in plan.slice_ops:
                continue
            if isinstance(op, AsyncCopyDescriptorToLocalOp) and not waited:
                waited = True
                self._wait_empty(pbody, empty.results[0], env[op.index], env[op.pred], j, nslots)
            new = op.clone(value_mapper=env)
            pbody.add_op(new)
            for old, nw in zip(op.results, new.results):
                env[old] = nw
        yield_op = body.last_op
        one = _add(pbody, arith.ConstantOp(IntegerAttr(1, i32)))
        pbody.add_op(scf.YieldOp(*[env.get(yield_op.operands[k], yield_op.operands[k]) for k in carried],
                                 _add(pbody, arith.AddIOp(j, one))))
        pblock.add_op(scf.ForOp(loop.lb, loop.ub, loop.step, [loop.iter_args[k] for k in carried] + [first],
                                Region(pbody)))
        regs = consumer_registers(self.num_warps)
        Rewriter.insert_op(ProducerPartitionOp(Region(pblock), PRODUCER_WARPS, self.num_warps, PRODUCER_REGS, regs),
                           before)

        # the consumers: no copies; each warp hands back the previous iteration's slot, (slot - 1)
        # mod nslots, from the second iteration on
        for op in list(body.ops):
            if isinstance(op, (AsyncCopyDescriptorToLocalOp, BulkStoreWaitOp)):
                op.detach()
                op.erase()
        slot = plan.full_wait.index
        zero, last, one = (arith.ConstantOp(IntegerAttr(v, i32)) for v in (0, nslots - 1, 1))
        dec = arith.SubIOp(slot, one)
        wraps = arith.CmpIOp(slot, zero, "eq")
        prev = arith.SelectOp(wraps, last, dec)
        started = arith.CmpIOp(body.args[0], loop.lb, "ne")
        Rewriter.insert_op([zero, last, one, dec, wraps, prev, started,
                            ArriveBarrierOp(empty.results[0], prev.result, started.result)],
                           InsertPoint.after(plan.retire))
        Rewriter.insert_op(InvalBarriersOp(empty.results[0]), InsertPoint.after(loop))
        if self.pingpong:
            self._take_turns(loop)

    def _take_turns(self, loop: scf.ForOp) -> None:
        """Two consumer groups whose loop runs register work between its dots (attention: the
        softmax between ``S = Q K^T`` and ``O += P V``) issue their first dots in turns, so one
        group's softmax runs while the other's dots keep the tensor cores busy (the ping-pong
        schedule): a group waits for its turn before its first ``wgmma`` and passes it on once
        the ``wgmma`` before its first wait are issued."""
        if self.num_warps != 8:
            return
        ops = list(loop.body.block.ops)
        dots = [i for i, op in enumerate(ops) if isinstance(op, WarpGroupDotOp)]
        waits = [i for i, op in enumerate(ops) if isinstance(op, WarpGroupDotWaitOp)]
        if len(dots) < 2 or not any(dots[0] < w < dots[-1] for w in waits):
            return
        threads = self.num_warps * 32
        last_issued = max(i for i in dots if i < min(w for w in waits if w > dots[0]))
        Rewriter.insert_op(WarpGroupTurnOp("wait", threads), InsertPoint.before(ops[dots[0]]))
        Rewriter.insert_op(WarpGroupTurnOp("pass", threads), InsertPoint.after(ops[last_issued]))
        Rewriter.insert_op(WarpGroupTurnOp("start", threads), InsertPoint.before(loop))
        Rewriter.insert_op(WarpGroupTurnOp("end", threads), InsertPoint.after(loop))

    @staticmethod
    def _wait_empty(block: Block, empty: SSAValue, slot: SSAValue, pred: SSAValue, j: SSAValue, nslots: int) -> None:
        """``if pred: wait empty[slot] for parity ((j // nslots) & 1) ^ 1``."""
        n = _add(block, arith.ConstantOp(IntegerAttr(nslots, i32)))
        one = _add(block, arith.ConstantOp(IntegerAttr(1, i32)))
        use = _add(block, arith.DivSIOp(j, n))
        parity = _add(block, arith.XOrIOp(_add(block, arith.AndIOp(use, one)), one))
        then = Block()
        then.add_op(WaitBarrierOp(empty, slot, parity))
        then.add_op(scf.YieldOp())
        block.add_op(scf.IfOp(pred, [], Region(then)))


def _add(block: Block, op: Operation) -> SSAValue:
    block.add_op(op)
    return op.results[0]


def _pure(op: Operation) -> bool:
    return op.has_trait(Pure) and not op.regions


def _safe_before(op: Operation) -> bool:
    """Work the producer warps may run too before the split: pure values, shared buffers no
    register fills (the copy engine's, ``nvidia-tiles-into-shared``) and their barriers and waits,
    the pipeline's prologue copies (issued by one thread), proxy fences, map builds and acquires,
    reads."""
    if op.name.startswith(("arith.", "math.")):  # no memory (a division's fault would be everyone's)
        return True
    if _pure(op) or op.regions:
        return _pure(op) or all(_safe_before(o) for r in op.regions for b in r.blocks for o in b.ops)
    # a buffer the layouts' warps fill from registers is written by the producer warps too
    if isinstance(op, LocalAllocOp):
        return op.src is None
    # (a map built in the kernel: its first warp builds it, the producer warps only pass by; a proxy
    # fence orders, it writes nothing)
    return isinstance(op, (InitBarriersOp, AsyncCopyDescriptorToLocalOp, MemDescIndexOp, WaitBarrierOp,
                           TensorMapAcquireOp, TensorMapCreateOp, BulkStoreWaitOp, BarrierOp,
                           FenceAsyncSharedOp)) or op.name in (
        "tt.load", "tt.get_program_id", "tt.get_num_programs", "tt.int_to_ptr", "tt.descriptor_load", "scf.yield",
        "ttg.global_scratch_alloc")


def _slots(copy: AsyncCopyDescriptorToLocalOp) -> int | None:
    shape = copy.bars.type.get_shape()
    return shape[0] if len(shape) == 1 else None


def _producer_slice(loop: scf.ForOp, copies: list[Operation]):
    """(the body's ops the copies need, the loop-carried arguments they read, by index), or
    (None, None) when one of them is more than address arithmetic (the producer evaluates the
    slice again, so it must be free of effects)."""
    body = loop.body.block
    yield_op = body.last_op
    need: set[Operation] = set()
    carried: list[int] = []
    work = [v for c in copies for v in c.operands]
    while work:
        v = work.pop()
        k = iter_arg_index(loop, v)
        if k is not None:
            if k not in carried:
                carried.append(k)
                work.append(yield_op.operands[k])
            continue
        op = v.owner
        if not isinstance(op, Operation) or op.parent_block() is not body or op in need:
            continue
        if not _pure(op):
            return None, None
        need.add(op)
        work.extend(op.operands)
    need.update(copies)
    return need, sorted(carried)


def consumer_barriers(module: ModuleOp) -> None:
    """After membar: a block barrier inside a producer partition is dropped (the producer
    synchronises through its barriers in shared memory), and every one after the partition in its
    function counts only the consumer threads (named barrier 1)."""
    for part in [op for op in module.walk() if isinstance(op, ProducerPartitionOp)]:
        for op in list(part.walk()):
            if isinstance(op, BarrierOp):
                op.detach()
                op.erase()
        threads = part.count("consumer_warps") * 32
        after = False
        func = part
        while not isinstance(func, FuncOp):
            func = func.parent_op()
        for op in func.walk():
            if op is part:
                after = True
                continue
            if after and isinstance(op, BarrierOp) and not part.is_ancestor(op):
                op.attributes[NAMED_BARRIER] = IntegerAttr(threads, i32)


__all__ = ["WarpSpecialize", "Split", "consumer_barriers", "consumer_registers", "entry_registers", "shared_split",
           "NAMED_BARRIER", "REASON"]
