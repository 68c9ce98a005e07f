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

Applied only where every CTA of the pair is sure to reach each of these points the same number
of times: the loop is a top-level statement of the kernel (not in an ``if`` or another loop), the
kernel has one ``return`` at its end, no warp specialization (its producer would need the
hand-off too) and no ``num_ctas`` clusters.  ``tritium.pair_reason`` on a loop says why one was
left.

Status (H200, docs/performance.md): results right for every shape tried; 0.83-0.93x of the same
kernel without it (128x256x64 and 128x128x64 tiles, 4096^3 and 8192^3): the issuing thread's
wait for its peer holds up its warp's next ``wgmma`` (no producer warp here), and one SM sends
the whole tile every other iteration.  So the option stays off.
"""
from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, StringAttr, i32
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from tritium.ttgir.ops import AsyncCopyDescriptorToLocalOp, BarrierOp, MemDescIndexOp
from tritium.ttir.ops import FuncOp, ReturnOp

from .dialect import (BulkStoreWaitOp, PairCopyOp, PairRefillOp, PairSetupOp, PairTeardownOp,
                      ProducerPartitionOp, TensorMapCreateOp)
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


def _inside(block: Block | None, body: Block) -> bool:
    while block is not None:
        if block is body:
            return True
        op = block.parent_op()
        block = op.parent_block() if op is not None else None
    return False


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
        inside = v.block is body if isinstance(v, BlockArgument) else _inside(v.owner.parent_block(), body)
        if not inside:
            if v.owner.name == "arith.constant":
                continue  # the same in both programs
            if not (isinstance(v.type, IntegerType) and v.type.width.data in (1, 32)):
                return None
            out.append(v)
            continue
        if isinstance(v, BlockArgument):
            return None  # a loop-carried value
        op = v.owner
        if op.regions or not op.name.startswith("arith."):
            return None
        stack.extend(reversed(list(op.operands)))
    return out


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
    shared, invariants = [], []
    for c in copies:
        inv = _invariants(c, loop) if _map_is_shared(c.desc) else None
        if inv is not None:
            shared.append(c)
            invariants.append(inv)
    if not shared:
        return "no copy whose tensor map and coordinates both programs may share"
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
    if any(isinstance(op, ProducerPartitionOp) for op in f.walk()):
        return "warp-specialized"
    body = f.body.blocks[0] if f.body.blocks else None
    returns = [op for op in f.walk() if isinstance(op, ReturnOp)]
    if body is None or len(returns) != 1 or returns[0] is not body.last_op:
        return "a return before the kernel's end"
    return None


def _rewrite(loop: scf.ForOp, barrier: BarrierOp, shared: list, invariants: list, setup_offset: int,
             empty_offset: int) -> None:
    block = loop.parent_block()
    before = []
    values = []
    for inv in invariants:
        for v in inv:
            if v.type.width.data == 1:
                ext = arith.ExtUIOp(v, i32)
                before.append(ext)
                v = ext.result
            values.append(v)
    nslots = shared[0].bars.type.get_shape()[0]
    setup = PairSetupOp(loop.lb, loop.ub, loop.step, values, [len(v) for v in invariants], nslots, empty_offset)
    setup.attributes["allocation.offset"] = IntegerAttr(setup_offset, i32)
    for op in before + [setup]:
        block.insert_op_before(op, loop)
    body = loop.body.blocks[0]
    iv = body.args[0]
    # the iteration's number from 0: (iv - lb) / step
    sub = arith.SubiOp(iv, loop.lb)
    t = arith.DivSIOp(sub.result, loop.step)
    refill = PairRefillOp(setup.paired, t.result, shared[0].index, list(setup.shares), nslots, empty_offset)
    anchor = barrier.next_op
    for op in (sub, t, refill):
        body.insert_op_before(op, anchor)
    for c, mode in zip(shared, refill.modes):
        copy = PairCopyOp(c.desc, list(c.indices), c.result, c.bars, c.index, c.pred, mode)
        copy.attributes.update(c.attributes)
        body.insert_op_before(copy, c)
        c.detach()
        c.erase()
    after = loop.next_op
    teardown = PairTeardownOp(setup.paired)
    if after is None:
        block.add_op(teardown)
    else:
        block.insert_op_before(teardown, after)


def cluster_pairs(module: ModuleOp, capability: int, options) -> bool:
    """Rewrite the kernel's eligible loops (after membar: the refills' block barrier is known);
    True where one was, which marks the module (:data:`CLUSTER_PAIRS`)."""
    if capability != 90 or not getattr(options, "cluster_pairs", False) or getattr(options, "num_ctas", 1) != 1:
        return False
    limits = LIMITS.get(capability)
    done = False
    for f in [op for op in module.ops if isinstance(op, FuncOp) and op.is_public]:
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
        shared_now = f.attributes["ttg.shared"].value.data if "ttg.shared" in f.attributes else 0
        setup_offset = -(-shared_now // 16) * 16
        words = max(3 + sum(len(v) for v in p[3]) for p in plans)
        empty_offset = setup_offset + -(-4 * words // 16) * 16
        total = empty_offset + 8 * max(p[2][0].bars.type.get_shape()[0] for p in plans)
        warps = module.attributes["ttg.num-warps"].value.data if "ttg.num-warps" in module.attributes else 4
        if limits is not None and blocks_per_sm(limits, 1, warps, total) < blocks_per_sm(limits, 1, warps, shared_now):
            for loop, *_ in plans:
                _decline(loop, "the exchange table would cost a block an SM")
            continue
        for loop, barrier, shared, invariants in plans:
            _rewrite(loop, barrier, shared, invariants, setup_offset, empty_offset)
        f.attributes["ttg.shared"] = IntegerAttr(total, i32)
        whole = module.attributes["ttg.shared"].value.data if "ttg.shared" in module.attributes else 0
        module.attributes["ttg.shared"] = IntegerAttr(max(whole, total), i32)
        done = True
    if done:
        module.attributes[CLUSTER_PAIRS] = IntegerAttr(1, i32)
    return done
