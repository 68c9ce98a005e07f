"""``nvidia-async-dot-waits``: let a pipelined loop's ``wgmma`` run across iterations.

accelerate-matmul waits for every ``ttng.warp_group_dot`` at once (``pendings = 0``).  When a loop's
dot reads both operands from pipelined multi-slot buffers (``ttg.memdesc_index``) and its waited
result only flows into the loop's yield, the wait may leave one dot in flight (``pendings = 1``):
iteration ``i``'s dot then overlaps iteration ``i+1``'s address arithmetic and copy issue.  This
needs the pipeline's spare slot (``wants_spare_slot`` asks for it): a slot is refilled two
iterations after it is read, when every warpgroup's wait has retired the dot that read it.  The loop
result gets a final wait."""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i32
from xdsl.ir import Operation
from xdsl.rewriter import InsertPoint, Rewriter

from tritium.ttgir.dialect import num_warps_of
from tritium.ttgir.layouts import bit_width
from tritium.ttgir.passes.software_pipeline import slots_ahead
from tritium.ttgir.ops import (AsyncCommitGroupOp, AsyncCopyDescriptorToLocalOp, AsyncCopyGlobalToLocalOp,
                               LocalAllocOp, MemDescIndexOp, MemDescTransOp)
from tritium.ttgir.types import MemDescType

from .dialect import FenceAsyncSharedOp, WarpGroupDotOp, WarpGroupDotWaitOp
from ..toolchain.occupancy import BLOCK_RESERVED_BYTES, LIMITS, REGISTER_FILE


#: the copies the pipeline pass issues into slots (cp.async, and TMA completing on an mbarrier)
ASYNC_COPIES = (AsyncCopyGlobalToLocalOp, AsyncCopyDescriptorToLocalOp)


def _buffer_owner(v):
    """The op that makes the buffer ``v`` reads, through transposed views (``ttg.memdesc_trans``)."""
    owner = getattr(v, "owner", None)
    while isinstance(owner, MemDescTransOp):
        owner = owner.operands[0].owner
    return owner


def _pipelined(dot: WarpGroupDotOp, wait: WarpGroupDotWaitOp) -> bool:
    """Both operands are slots that are refilled two iterations after they are read (a spare slot),
    or one iteration after but only once ``wait`` has run (every copy of the body follows it), so
    the dot may still be reading them during the next iteration."""
    ahead = [slots_ahead(v) for v in (dot.a, dot.b)]
    if all(a >= 2 for a in ahead):
        return True
    if not all(a == 1 for a in ahead):
        return False
    ops = list(wait.parent_block().ops)
    at = ops.index(wait)
    return all(i > at for i, op in enumerate(ops) if isinstance(op, ASYNC_COPIES))


def wants_spare_slot(loop) -> bool:
    """The pipeline's question, asked before it rewrites ``loop``: a wgmma reading two buffers the
    loop fills whose waited result only flows back into the loop (what this pass will let run
    across iterations).  Where ``num_stages + 1`` slots do not fit, ``wants_late_refill`` gives
    the loop Triton's schedule instead."""
    if _matmul_wait(loop) is not None:
        return True
    # a loop whose last wgmma accumulates across iterations and reads a buffer the loop fills
    # (attention backward's dK at head dim 128): too many registers live for the late refill's
    # schedule (``_in_flight_fits``); a spare slot lets that dot stay in flight into the next
    # iteration with the copies issued before the first dot
    return _last_dot_reads_a_slot(loop) and not _in_flight_fits(loop) \
        and _dot_registers(loop) <= SPARE_SLOT_DOT_REGISTERS


#: registers a thread holds for that dot while it runs on (accumulator and register operand): the
#: backward's dK at d128 holds 80 and compiles without spills; the forward's P @ V with 128-row
#: tiles at d128 holds 160 and spills hundreds of registers in flight
SPARE_SLOT_DOT_REGISTERS = 96


def _threads(loop) -> int:
    module = loop
    while not isinstance(module, ModuleOp):
        module = module.parent_op()
    return num_warps_of(module) * 32


def _dot_registers(loop) -> int:
    dot, _ = _last_dot(loop.body.block)
    threads = _threads(loop)
    return sum(_regs32(t, threads) for t in [dot.c.type] + ([dot.a.type] if isinstance(dot.a.type, TensorType) else []))


def _last_dot_reads_a_slot(loop) -> bool:
    body = loop.body.block
    last = _last_dot(body)
    if last is None:
        return False
    dot, wait = last
    first = next((op for op in body.ops if isinstance(op, WarpGroupDotWaitOp)), None)
    return first is not wait and any(isinstance(_buffer_owner(v), LocalAllocOp)
                                     and _buffer_owner(v).parent_block() is body for v in (dot.a, dot.b))


def _matmul_wait(loop):
    """The wait of a wgmma reading two buffers the loop fills whose waited result only flows back
    into the loop, or None."""
    body = loop.body.block
    for wait in body.ops:
        if not isinstance(wait, WarpGroupDotWaitOp) or len(wait.inputs) != 1:
            continue
        dot = wait.inputs[0].owner
        if not isinstance(dot, WarpGroupDotOp) or dot.parent_block() is not body:
            continue
        uses = list(wait.outputs[0].uses)
        loads = all(getattr(_buffer_owner(v), "name", None) == "ttg.local_alloc"
                    and _buffer_owner(v).parent_block() is body for v in (dot.a, dot.b))
        if loads and len(uses) == 1 and uses[0].operation is body.last_op:
            return wait
    return None


#: 32-bit registers per thread the tensors live across an in-flight dot may take (accumulators,
#: register operand, the earlier dot's result): above it ptxas spills in the loop (attention d128)
IN_FLIGHT_REGISTERS = 160


def _regs32(t, threads: int) -> int:
    n = 1
    for d in t.get_shape():
        n *= d
    return max(n // threads * bit_width(t.element_type) // 32, 1)


def _last_dot(body):
    """The body's last wgmma and its wait, when that wait's result only flows to the yield."""
    waits = [op for op in body.ops if isinstance(op, WarpGroupDotWaitOp) and len(op.inputs) == 1]
    if not waits or not isinstance(waits[-1].inputs[0].owner, WarpGroupDotOp):
        return None
    uses = list(waits[-1].outputs[0].uses)
    if len(uses) != 1 or uses[0].operation is not body.last_op:
        return None
    return waits[-1].inputs[0].owner, waits[-1]


#: a matmul loop with a spare slot and at least this many warps (two warp groups sharing the
#: loop-top barrier) refills the slot right after issuing its wgmma instead of before it: the
#: copies then run while the wgmma does (``membar`` adds a barrier before them).  Under Nsight
#: Compute at base clocks (bench NOTES run 27) the persistent matmul, 128x256x64, 8 warps, took
#: 3-4% more cycles than Triton with the refill first and 1-2% fewer with it after the wgmma; the
#: plain 8-warp matmul is the same either way (within 0.5%) and the 4-warp 128x128x64 one 6% slower,
#: hence one warp group keeps the refill first.
SPARE_REFILL_AFTER_DOT_WARPS = 8


#: shared memory an sm_80/sm_90 SM gives its blocks (228 KiB on sm_90; 164 KiB on sm_80); what the
#: driver keeps of it per block and the register file are ``toolchain/occupancy``'s
SM_SHARED_BYTES = {cc: LIMITS[cc].shared for cc in (90, 80)}
#: registers a matmul thread holds beside its accumulator (addresses, counters, descriptors): the
#: 128x128 8-warp tile took 90 with its 64 accumulator registers, 128x256 154 with 128
MATMUL_OTHER_REGISTERS = 40
#: the most shared memory an SM's blocks may take together before the driver's carveout leaves the
#: L1 its smallest share (sm_90: 196 KiB, where the next step, 228 KiB, leaves 28 KiB of L1).  Nsight
#: Compute, base clocks, 8192^3 fp16, one warp group, BK 32 (bench/ncu_ab.sh, session 39): 64x256
#: with 5 slots (2 x 103 KiB) took 0.81-0.84x Triton's cycles, with 4 (2 x 83 KiB) 0.975x; 128x128
#: at 3 blocks of 66 KiB 0.93-0.98x, padded to 2 blocks of 101 KiB 0.95x, 2 blocks of 81 KiB (a
#: spare slot) 0.996x
SHARED_WITH_L1_ROOM = {90: 196 * 1024}


def blocks_per_sm(capability: int):
    """An occupancy estimate: blocks an SM runs at once with ``shared_bytes`` each, by shared
    memory and, for a matmul loop, by its accumulator's registers (other loops: by shared memory
    alone)."""
    smem = SM_SHARED_BYTES.get(capability, SM_SHARED_BYTES[80])

    def estimate(loop, shared_bytes: int) -> int:
        by_shared = smem // (shared_bytes + BLOCK_RESERVED_BYTES)
        if _matmul_wait(loop) is None:
            return by_shared
        threads = _threads(loop)
        regs = -(-min(255, _dot_registers(loop) + MATMUL_OTHER_REGISTERS) // 8) * 8
        return min(by_shared, REGISTER_FILE // (threads * regs))
    return estimate


def spare_pays(capability: int):
    """The pipeline's veto on a spare slot (``Pipeline(spare_pays=)``), from what it does to the SM:

    - it may cost blocks, but not leave one where two ran: halving a 128x128 8-warp matmul's
      blocks (131 KB for four slots, 98 KB for three) gave 440 against Triton's 557 TFLOP/s at
      8192^3, while 3 -> 2 (128x128x32, 4 warps) and 4 -> 3 blocks (64x128x32) gained 2-7%
      (``SHARED_WITH_L1_ROOM``'s measurements);
    - it may not push the SM's blocks past ``SHARED_WITH_L1_ROOM`` together where S slots stay
      within it."""
    estimate = blocks_per_sm(capability)
    room = SHARED_WITH_L1_ROOM.get(capability)

    def pays(loop, plain_bytes: int, spare_bytes: int) -> bool:
        before, after = estimate(loop, plain_bytes), estimate(loop, spare_bytes)
        if after < min(before, 2):
            return False
        if room is not None:
            used = lambda blocks, nbytes: blocks * (nbytes + BLOCK_RESERVED_BYTES)  # noqa: E731
            if used(before, plain_bytes) <= room < used(after, spare_bytes):
                return False
        return True
    return pays


def spare_refill(loop) -> bool:
    """The pipeline's question for a loop that got a spare slot: refill after the slots' last
    consumer (the wgmma) rather than before the first."""
    return _matmul_wait(loop) is not None and _threads(loop) >= 32 * SPARE_REFILL_AFTER_DOT_WARPS


def wants_late_refill(loop):
    """The pipeline's other question, for a loop that gets no spare slot.  A matmul loop (see
    ``wants_spare_slot``) whose ``num_stages + 1`` slots did not fit: its wait, after which the
    refill goes.  A loop whose first dot's result is used in the loop (attention) and whose last
    wgmma reads a buffer the loop fills and may stay in flight across the iteration (see
    ``_leave_last_dot_in_flight``) within ``IN_FLIGHT_REGISTERS``: True, the copies then issued
    after that dot instead of before the first.  False otherwise."""
    body = loop.body.block
    matmul = _matmul_wait(loop)
    if matmul is not None:
        # asked only when the spare slot did not fit: the refill goes after the wait that retires
        # the previous iteration's wgmma (``membar`` puts a barrier before it), and that wait may
        # leave this iteration's in flight (Triton's schedule: S slots, two barriers)
        return matmul
    last = _last_dot(body)
    if last is None:
        return False
    dot, wait = last
    if not any(getattr(_buffer_owner(v), "name", None) == "ttg.local_alloc" and _buffer_owner(v).parent_block() is body
               for v in (dot.a, dot.b)):
        return False
    return _in_flight_fits(loop)


def _in_flight_fits(loop) -> bool:
    """Whether the registers live while the loop's last wgmma is in flight (its accumulator and
    register operand, and the other dots' waited results) stay within ``IN_FLIGHT_REGISTERS``."""
    body = loop.body.block
    last = _last_dot(body)
    if last is None:
        return False
    _, wait = last
    threads = _threads(loop)
    others = [v.type for op in body.ops if isinstance(op, WarpGroupDotWaitOp) and op is not wait
              for v in op.inputs if isinstance(v.type, TensorType)]
    return _dot_registers(loop) + sum(_regs32(t, threads) for t in others) <= IN_FLIGHT_REGISTERS


def _leave_last_dot_in_flight(loop: scf.ForOp, wait: WarpGroupDotWaitOp, dot: WarpGroupDotOp) -> bool:
    """Attention's ``P @ V``: the loop's last dot, its waited result only flowing to the yield, every
    copy of the body issued after it (a late refill) and an earlier full wait in the body before any
    use of that loop-carried accumulator.  The earlier wait (the next iteration's ``Q @ K``) then
    retires this dot too, before the refill of the slot it reads (``membar`` puts a barrier between
    them for the other warpgroups): the dot needs no wait of its own.  The earlier wait takes the
    accumulator as an operand, so nothing reads its registers before it."""
    body = loop.body.block
    ops = list(body.ops)
    pos = {op: i for i, op in enumerate(ops)}
    first = next((op for op in ops if isinstance(op, WarpGroupDotWaitOp)), None)
    if first is None or first is wait or first.pendings.value.data != 0 or pos[first] > pos[dot]:
        return False
    if any(isinstance(op, ASYNC_COPIES) and pos[op] < pos[dot] for op in ops):
        # copies issued before the dot refill, in the next iteration, slots this dot may still be
        # reading, unless each slot it reads is refilled two iterations after (a spare slot)
        slots = [v for v in (dot.a, dot.b) if not isinstance(v.type, TensorType)]
        if not slots or not all(slots_ahead(v) >= 2 for v in slots if loop.is_ancestor(_buffer_owner(v))):
            return False
    # its buffers: pipeline slots (refilled after the barrier past the next full wait) or buffers
    # written before the loop
    if not all(getattr(_buffer_owner(v), "name", None) == "ttg.memdesc_index" or not loop.is_ancestor(_buffer_owner(v))
               for v in (dot.a, dot.b) if not isinstance(v.type, TensorType) and isinstance(v.owner, Operation)):
        return False
    uses = list(wait.outputs[0].uses)
    if len(uses) != 1 or uses[0].operation is not body.last_op:
        return False
    acc = body.args[1 + uses[0].index]
    if any(pos.get(u.operation, -1) <= pos[first] for u in acc.uses):
        return False
    # nor may anything after the dot read its input registers, which it accumulates into
    if any(u.operation is not dot and pos.get(u.operation, -1) > pos[dot] for u in dot.c.uses):
        return False
    merged = WarpGroupDotWaitOp(list(first.inputs) + [acc], 0)
    Rewriter.insert_op(merged, InsertPoint.before(first))
    for old, new in zip(first.outputs, merged.outputs):
        old.replace_all_uses_with(new)
    first.detach()
    first.erase()
    for use in list(acc.uses):
        if use.operation is not merged:
            use.operation.operands[use.index] = merged.outputs[-1]
    return True


def _merge_into_next_wait(loop: scf.ForOp, wait: WarpGroupDotWaitOp, dot: WarpGroupDotOp) -> bool:
    """An accumulator's dot (attention backward's ``dV += P^T dO``: its waited result only flows to
    the yield) followed in the same iteration by a full wait of another dot (``dP``'s), with no copy
    issued in between: that later wait retires both, so the second wgmma is issued while the first
    runs instead of after the tensor cores drained.  Nothing else reads the accumulator before the
    later wait (it only flows to the yield), and its slots are refilled no earlier than before."""
    body = loop.body.block
    ops = list(body.ops)
    pos = {op: i for i, op in enumerate(ops)}
    later = next((op for op in ops[pos[wait] + 1:] if isinstance(op, WarpGroupDotWaitOp)), None)
    if later is None or later.pendings.value.data != 0:
        return False
    if any(isinstance(op, ASYNC_COPIES) for op in ops[pos[dot]:pos[later]]):
        return False
    uses = list(wait.outputs[0].uses)
    if len(uses) != 1 or uses[0].operation is not body.last_op:
        return False
    # the running dot accumulates into its input's registers: nothing may read that input after
    # the dot is issued and before the later wait
    if any(u.operation is not dot and pos[dot] < pos.get(u.operation, -1) <= pos[later] for u in dot.c.uses):
        return False
    merged = WarpGroupDotWaitOp(list(later.inputs) + [wait.inputs[0]], 0)
    Rewriter.insert_op(merged, InsertPoint.before(later))
    for old, new in zip(later.outputs, merged.outputs):
        old.replace_all_uses_with(new)
    later.detach()
    later.erase()
    wait.outputs[0].replace_all_uses_with(merged.outputs[-1])
    wait.detach()
    wait.erase()
    return True


def _prune_fences(module: ModuleOp) -> None:
    """A ``ttng.fence_async_shared`` before a wgmma orders ordinary ``st.shared`` writes before the
    tensor cores read them.  Where every buffer operand is a pipeline slot (filled by ``cp.async``,
    landed by ``cp.async.wait_group`` and a barrier, as Triton's pipelined loops do without a fence)
    or was written before the loop (and fenced there), the fence inside the loop is dropped: it
    compiles to a full ``MEMBAR`` every iteration."""
    for fence in [op for op in module.walk() if isinstance(op, FenceAsyncSharedOp)]:
        loop = fence.parent_op()
        if not isinstance(loop, scf.ForOp):
            continue
        dot = fence.next_op
        while dot is not None and not isinstance(dot, WarpGroupDotOp):
            dot = dot.next_op
        if dot is None:
            continue
        bufs = [v for v in (dot.a, dot.b) if not isinstance(v.type, TensorType)]
        if all(isinstance(_buffer_owner(v), MemDescIndexOp) or not loop.is_ancestor(_buffer_owner(v))
               for v in bufs if isinstance(v.owner, Operation)):
            fence.detach()
            fence.erase()


#: ops a proxy fence may move past: they neither read shared memory through the async proxy nor
#: hold ops that might (the pipeline's prologue copies, their commits and slot views)
_FENCE_TRANSPARENT = (AsyncCopyGlobalToLocalOp, AsyncCommitGroupOp, MemDescIndexOp)


def _fence_transparent(op: Operation) -> bool:
    """Whether a proxy fence (and the shared-memory writes it covers) may move past ``op``: it
    neither reads shared memory through the async proxy nor holds ops that might."""
    if op.regions:
        return False
    if isinstance(op, _FENCE_TRANSPARENT) or (isinstance(op, LocalAllocOp) and not op.operands):  # not yet written
        return True
    return (op.name.split(".")[0] in ("arith", "tt", "math") and op.name not in ("tt.call", "tt.return")
            and "descriptor" not in op.name and "tensormap" not in op.name
            and not any(isinstance(v.type, MemDescType) for v in (*op.operands, *op.results)))


def _sink_fences(module: ModuleOp) -> None:
    """A fence hoisted before a loop, with the writes it covers (attention's Q: a register tile
    written to shared memory once, read by every iteration's wgmma), precedes the pipeline's
    prologue copies.  Each thread's ``st.shared`` of that tile waits for its global load, so the
    copies of the first K and V tiles were issued only once Q had arrived.  The writes and their
    fence move down to just before the first op that may read through the async proxy (or holds
    ops that may): the copies go out while Q is in flight, then Q is stored and fenced, and the
    first barrier membar puts after it publishes it (write, proxy fence, barrier, wgmma).  Moving
    a write later is safe past ops that do not use it; moving a proxy fence later keeps it between
    every write it covers and the reads."""
    for fence in [op for op in module.walk() if isinstance(op, FenceAsyncSharedOp)]:
        writes = []
        prev = fence.prev_op
        while prev is not None and isinstance(prev, LocalAllocOp) and prev.operands:
            writes.insert(0, prev)
            prev = prev.prev_op
        written = {r for w in writes for r in w.results}
        nxt = fence.next_op
        moved = False
        while nxt is not None and _fence_transparent(nxt) and not (written & set(nxt.operands)):
            nxt = nxt.next_op
            moved = True
        if moved and nxt is not None:
            for op in (*writes, fence):
                op.detach()
                nxt.parent_block().insert_op_before(op, nxt)


class AsyncDotWaits:
    name = "nvidia-async-dot-waits"

    def run(self, module: ModuleOp) -> None:
        _prune_fences(module)
        _sink_fences(module)
        for wait in [op for op in module.walk() if isinstance(op, WarpGroupDotWaitOp)]:
            loop = wait.parent_op() if wait.parent_block() is not None else None  # None: merged away
            if not isinstance(loop, scf.ForOp) or len(wait.inputs) != 1:
                continue
            dot = wait.inputs[0].owner
            if not isinstance(dot, WarpGroupDotOp):
                continue
            uses = list(wait.outputs[0].uses)
            yield_op = loop.body.block.last_op
            if len(uses) != 1 or uses[0].operation is not yield_op:
                continue
            if _pipelined(dot, wait):
                wait.properties["pendings"] = IntegerAttr(1, i32)
            elif _leave_last_dot_in_flight(loop, wait, dot):
                wait.outputs[0].replace_all_uses_with(wait.inputs[0])
                wait.detach()
                wait.erase()
            elif _merge_into_next_wait(loop, wait, dot):
                continue  # retired within the iteration: the loop result needs no wait of its own
            else:
                continue
            res = loop.results[uses[0].index]
            final = WarpGroupDotWaitOp([res], 0)
            Rewriter.insert_op(final, InsertPoint.after(loop))
            for use in list(res.uses):
                if use.operation is not final:
                    use.operation.operands[use.index] = final.outputs[0]
