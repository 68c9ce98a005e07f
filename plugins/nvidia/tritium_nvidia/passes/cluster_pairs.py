"""``cluster_pairs`` (option ``cluster_pairs``, sm_90): two programs next to each other along the
grid's x axis share the tiles their pipelined loops copy alike, each tile read from L2 once and
written into both CTAs' shared memory by one TMA multicast.

Programs keep their meaning: program ``i`` is CTA ``i`` (``program_id`` reads the CTA's id).  The
kernel is launched in clusters of two CTAs along x where the grid's x size is even (the driver's
``cluster_pairs`` launch, ``metadata["cluster_pairs"]``), without clusters otherwise, and it
decides at run time what the pair shares, so any kernel stays correct:

* before the loop, ``ttng.pair_setup``: the two CTAs exchange the loop's bounds through
  distributed shared memory; the pair is *paired* where both run the same iterations;
* in the loop, the block barrier before the refills (every warp has read the slots they
  overwrite) becomes ``ttng.pair_exchange``: paired, each CTA publishes every shareable copy's
  coordinates and predicate, passes a cluster barrier (now both CTAs' warps have read the slots),
  and compares them with its peer's.  A copy equal on both sides is issued once, by the CTAs in
  turn, with ``.multicast::cluster`` into both (``ttng.pair_copy`` mode 1); the other CTA only
  expects its bytes on its own slot barrier (mode 2).  Different copies go alone (mode 0).
  Not paired: the block barrier as before;
* after the loop, ``ttng.pair_teardown``: paired, a cluster barrier, so that neither CTA exits
  while its peer may still read its table or copy into its slots.

A copy is shareable when its tensor map cannot differ between the two programs (no value it is
built from, a host descriptor's map being a kernel argument and a ``tl.make_tensor_descriptor``
reading its base, shape and strides, depends on ``program_id``) and its tile is one box of the
map.  The prologue's copies (before the loop) stay per CTA.

Status: off by default.  Correct on the H200 for every shape tried (host and device descriptors,
even and odd grids, ragged K), but 0.45-0.55x of the same kernel without it (128x256x64 and
128x128x64 tiles, 4096^3 and 8192^3): the cluster barrier and the peer's table read sit between
one iteration's ``wgmma`` and the next (0.66x with the exchange alone, multicast off).  The way
forward is CUTLASS's: per-slot *empty* barriers the consumers of both CTAs arrive on (remote
``mbarrier.arrive`` through ``mapa``), waited on by the issuing thread alone, and the sharing
decided once before the loop.

Applied only where every CTA of the pair is sure to reach each of these points the same number
of times: the loop is a top-level statement of the kernel (not in an ``if`` or another loop), the
kernel has one ``return`` at its end, no warp specialization (its producer would need a second
hand-off) and no ``num_ctas`` clusters.  ``tritium.pair_reason`` on a loop says why one was left.
"""
from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, StringAttr, i32
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from tritium.ttgir.layouts import bit_width
from tritium.ttgir.ops import AsyncCopyDescriptorToLocalOp, BarrierOp, MemDescIndexOp
from tritium.ttir.ops import FuncOp, ReturnOp

from .dialect import (BulkStoreWaitOp, PairCopyOp, PairExchangeOp, PairSetupOp, PairTeardownOp,
                      ProducerPartitionOp, TensorMapCreateOp)
from ..runtime.tensor_map import map_boxes
from ..toolchain.occupancy import LIMITS, blocks_per_sm

#: on the module: the kernel decides pairs at run time; launch it in clusters of two where it can
CLUSTER_PAIRS = "tritium.cluster_pairs"
REASON = "tritium.pair_reason"
#: bytes of the exchange table a copy takes (its coordinates, at most 5, and predicate) and of the
#: bounds the setup exchanges
COPY_BYTES = 32
SETUP_BYTES = 16

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


def _one_box(copy) -> bool:
    """The copy's tile is one box of its map (``tensor_map.map_boxes``).  A tile of several boxes
    (rows over 128 bytes, or over 256 rows) is not shared: multicast copies of such tiles gave
    wrong results on the H200 (every box but the first), not understood yet."""
    t = copy.result.type
    shape = list(t.get_shape())
    if getattr(getattr(t, "encoding", None), "transposed", False):
        shape = shape[::-1]
    return len(map_boxes(shape, max(bit_width(t.element_type) // 8, 1))) == 1


def _defined_before(v: SSAValue, body: Block, limit: Operation, order: dict) -> bool:
    if isinstance(v, BlockArgument):
        return v.block is body or not _inside(v.block, body)
    owner_block = v.owner.parent_block()
    if owner_block is body:
        return order[v.owner] < order[limit]
    return not _inside(owner_block, body)


def _inside(block: Block | None, body: Block) -> bool:
    while block is not None:
        if block is body:
            return True
        op = block.parent_op()
        block = op.parent_block() if op is not None else None
    return False


def _decline(loop: Operation, why: str) -> None:
    loop.attributes[REASON] = StringAttr(why)


def _plan(loop: scf.ForOp):
    """(the barrier before the refills, the shareable copies) of ``loop``, or a reason string."""
    body = loop.body.blocks[0]
    copies = [op for op in loop.walk() if isinstance(op, AsyncCopyDescriptorToLocalOp)]
    if not copies:
        return "no pipelined descriptor copies"
    if any(c.parent_block() is not body for c in copies):
        return "a copy under a condition or in an inner loop"
    if not all(isinstance(t, IntegerType) and t.width.data == 32
               for t in (loop.lb.type, loop.ub.type, loop.step.type)):
        return "bounds of other than 32 bits"
    shared = [c for c in copies if _map_is_shared(c.desc) and _one_box(c)]
    if not shared:
        return "no copy of one box whose tensor map both programs share"
    barrier = copies[0].prev_op
    while barrier is not None and not isinstance(barrier, BarrierOp):
        if not (isinstance(barrier, (MemDescIndexOp, BulkStoreWaitOp)) or not barrier.regions
                and barrier.name.startswith("arith.")):
            return f"{barrier.name} between the refills' barrier and the first refill"
        barrier = barrier.prev_op
    if barrier is None:
        return "no block barrier before the refills"
    order = {op: i for i, op in enumerate(body.ops)}
    for c in shared:
        if not all(_defined_before(v, body, barrier, order) for v in [*c.indices, c.pred]):
            return "a refill's coordinates are computed after the barrier"
        if len(c.indices) > COPY_BYTES // 4 - 1:
            return "a copy of more than 7 coordinates"
    return barrier, shared


def _eligible_kernel(f: FuncOp) -> str | None:
    if any(isinstance(op, ProducerPartitionOp) for op in f.walk()):
        return "warp-specialized"
    body = f.body.blocks[0] if f.body.blocks else None
    returns = [op for op in f.walk() if isinstance(op, ReturnOp)]
    if body is None or len(returns) != 1 or returns[0] is not body.last_op:
        return "a return before the kernel's end"
    return None


def _rewrite(loop: scf.ForOp, barrier: BarrierOp, shared: list, setup_offset: int, table_offset: int) -> None:
    block = loop.parent_block()
    setup = PairSetupOp(loop.lb, loop.ub, loop.step)
    setup.attributes["allocation.offset"] = IntegerAttr(setup_offset, i32)
    block.insert_op_before(setup, loop)
    paired = setup.paired
    body = loop.body.blocks[0]
    iv = body.args[0]
    # the iteration's parity: ((iv - lb) / step) & 1
    ops = [arith.SubiOp(iv, loop.lb)]
    ops.append(arith.DivSIOp(ops[-1].result, loop.step))
    one = arith.ConstantOp(IntegerAttr(1, i32))
    ops += [one, arith.AndIOp(ops[-1].result, one.result)]
    values, widths = [], []
    for c in shared:
        pred = arith.ExtUIOp(c.pred, i32)
        ops.append(pred)
        values += [*c.indices, pred.result]
        widths.append(len(c.indices) + 1)
    for op in ops:
        body.insert_op_before(op, barrier)
    exchange = PairExchangeOp(paired, ops[3].result, values, widths)
    exchange.attributes["allocation.offset"] = IntegerAttr(table_offset, i32)
    body.insert_op_before(exchange, barrier)
    barrier.detach()
    barrier.erase()
    for c, mode in zip(shared, exchange.modes):
        copy = PairCopyOp(c.desc, list(c.indices), c.result, c.bars, c.index, c.pred, mode)
        copy.attributes.update(c.attributes)
        body.insert_op_before(copy, c)
        c.detach()
        c.erase()
    after = loop.next_op
    teardown = PairTeardownOp(paired)
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
        table_offset = setup_offset + SETUP_BYTES
        copies = max(len(p[2]) for p in plans)
        total = table_offset + 2 * copies * COPY_BYTES
        warps = module.attributes["ttg.num-warps"].value.data if "ttg.num-warps" in module.attributes else 4
        if limits is not None and blocks_per_sm(limits, 1, warps, total) < blocks_per_sm(limits, 1, warps, shared_now):
            for loop, *_ in plans:
                _decline(loop, "the exchange table would cost a block an SM")
            continue
        for loop, barrier, shared in plans:
            _rewrite(loop, barrier, shared, setup_offset, table_offset)
        f.attributes["ttg.shared"] = IntegerAttr(total, i32)
        whole = module.attributes["ttg.shared"].value.data if "ttg.shared" in module.attributes else 0
        module.attributes["ttg.shared"] = IntegerAttr(max(whole, total), i32)
        done = True
    if done:
        module.attributes[CLUSTER_PAIRS] = IntegerAttr(1, i32)
    return done
