"""``membar``: insert ``ttg.barrier`` between shared-memory accesses that conflict.

Runs after ``allocate-shared-memory``.  Each op's accesses are byte ranges of shared memory, read
or written: ``local_alloc`` with a value and ``local_store``/``async_copy_global_to_local`` write
their buffer, ``local_load`` reads it, ``async_copy_descriptor_to_local`` writes its slot (not its
barrier), ``init_barriers``/``inval_barriers`` write the barriers and ``wait_barrier`` reads them (a
thread past it sees the tile that completed the barrier, so the copy's write needs no barrier
before that thread's reads), an op with a scratch buffer reads and writes it, a call reads
and writes its callee's whole (virtual) range, and any other op with buffer operands (a vendor's
tensor-core op) reads them.  A ``memdesc_index`` slot stands for its whole buffer.  Walking a function in order, the accesses since the
last barrier are kept; an access overlapping one of them with at least one write (RAW, WAR, WAW)
needs a barrier first — unless the backend's filter ``(op_a, op_b) -> bool`` says it is not needed.
``scf.for`` bodies are walked to a fixed point (the back edge carries the body's pending accesses);
where an access from before a loop would need a barrier in the body's first iteration, the
barrier goes before the loop instead (once, not every iteration) unless a barrier the body needs
anyway comes first,
``scf.if`` branches merge, and callees are processed first so a call sees what its callee leaves
unsynchronised; at a function's exit the pending accesses are that summary.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from ...ttir.ops import CallOp
from ...ttir.region_ops import ReduceOp, ScanOp
from ..ops import (AsyncCopyDescriptorToLocalOp, AsyncCopyGlobalToLocalOp, AsyncWaitOp, BarrierOp, InitBarriersOp,
                   InvalBarriersOp, LocalAllocOp, LocalDeallocOp, LocalLoadOp, LocalStoreOp, MemDescIndexOp,
                   MemDescTransOp, WaitBarrierOp)
from ..scratch import scratch_size
from ..types import MemDescType
from .allocate_shared_memory import OFFSET_ATTR, _call_order

MembarFilter = Callable[[Operation, Operation], bool]
_ASYNC_COPIES = (AsyncCopyGlobalToLocalOp, AsyncCopyDescriptorToLocalOp)
#: ops that only name (a part of) a buffer, accessing nothing
_VIEWS = (MemDescIndexOp, MemDescTransOp, LocalDeallocOp)
#: ops whose regions are a combine function of their own, not control flow
_COMBINES = (ReduceOp, ScanOp)


@dataclass(frozen=True)
class Access:
    lo: int
    hi: int          # exclusive
    write: bool
    op: Operation

    def conflicts(self, o: "Access") -> bool:
        return (self.write or o.write) and self.lo < o.hi and o.lo < self.hi


def _offset(op: Operation) -> int | None:
    a = op.attributes.get(OFFSET_ATTR)
    return a.value.data if isinstance(a, IntegerAttr) else None


def _buffer_range(v: SSAValue, whole: int) -> tuple[int, int]:
    owner = v.owner
    while isinstance(owner, (MemDescIndexOp, MemDescTransOp)):
        # a slot, or a transposed view: the whole buffer
        v = owner.operands[0]
        owner = v.owner
    if isinstance(owner, LocalAllocOp) and _offset(owner) is not None:
        return _offset(owner), _offset(owner) + owner.results[0].type.size_in_bytes()
    return 0, whole  # a buffer passed through block arguments: assume any


class Membar:
    name = "membar"

    def __init__(self, membar_filter: MembarFilter | None = None, scratch_rules=None):
        self.filter = membar_filter or (lambda a, b: False)
        self.scratch_rules = scratch_rules  # the backend's, as the allocation was given
        self.summaries: dict[str, frozenset[Access]] = {}

    def run(self, module: ModuleOp) -> None:
        for f in _call_order(module):
            whole = f.attributes["ttg.shared"].value.data if "ttg.shared" in f.attributes else 1 << 30
            self.whole = max(whole, 1)
            pending = self._block(f.body.blocks[0], frozenset()) if f.body.blocks else frozenset()
            self.summaries[f.sym_name.data] = pending

    def accesses(self, op: Operation) -> list[Access]:
        if isinstance(op, LocalAllocOp) and op.operands:
            return [Access(*_buffer_range(op.results[0], self.whole), True, op)]
        if isinstance(op, (LocalStoreOp, AsyncCopyGlobalToLocalOp)):
            return [Access(*_buffer_range(op.operands[1], self.whole), True, op)]
        if isinstance(op, AsyncCopyDescriptorToLocalOp):  # its barrier is a synchronisation object, not data
            return [Access(*_buffer_range(op.result, self.whole), True, op)]
        if isinstance(op, (InitBarriersOp, InvalBarriersOp)):
            return [Access(*_buffer_range(op.operands[0], self.whole), True, op)]
        if isinstance(op, (WaitBarrierOp, LocalLoadOp)):
            return [Access(*_buffer_range(op.operands[0], self.whole), False, op)]
        if isinstance(op, CallOp):
            base = _offset(op)
            summary = self.summaries.get(op.callee.string_value(), frozenset())
            if base is None:
                return []
            return [Access(base + a.lo, base + a.hi, a.write, op) for a in summary]
        if _offset(op) is not None and (size := scratch_size(op, self.scratch_rules)):
            lo = _offset(op)
            return [Access(lo, lo + size, True, op), Access(lo, lo + size, False, op)]
        if not isinstance(op, _VIEWS):
            # any other op taking buffers (a vendor's tensor-core op reading its operands) reads them
            return [Access(*_buffer_range(v, self.whole), False, op) for v in op.operands
                    if isinstance(v.type, MemDescType)]
        return []

    def _block(self, block: Block, pending: frozenset[Access]) -> frozenset[Access]:
        for op in list(block.ops):
            if isinstance(op, BarrierOp):
                pending = frozenset()
                continue
            if isinstance(op, scf.ForOp):
                pending = self._loop(op, pending)
                continue
            if isinstance(op, scf.IfOp):
                outs = [self._block(r.blocks[0], pending) for r in op.regions if r.blocks]
                pending = frozenset().union(*outs) if len(outs) == 2 else pending.union(*outs)
                continue
            if op.regions and not isinstance(op, _COMBINES):
                for r in op.regions:
                    for b in r.blocks:
                        pending = pending | self._block(b, pending)
            if isinstance(op, WaitBarrierOp):
                # the waiting thread sees the landed tile itself: no block barrier for its readers
                pending = frozenset(a for a in pending if not isinstance(a.op, AsyncCopyDescriptorToLocalOp))
            if isinstance(op, AsyncWaitOp):
                # asynchronous copies' writes land here: from now on they are this wait's (a
                # filter exempting the copies themselves still sees the landed data as a write)
                pending = frozenset(Access(a.lo, a.hi, a.write, op) if isinstance(a.op, AsyncCopyGlobalToLocalOp) else a
                                    for a in pending)
                continue
            new = self.accesses(op)
            if any(p.conflicts(a) and not self.filter(p.op, op) for a in new for p in pending):
                block.insert_op_before(BarrierOp(), op)
                pending = frozenset()
            pending = pending | frozenset(new)
        return pending

    def _loop(self, loop: Operation, pending: frozenset[Access]) -> frozenset[Access]:
        body = loop.body.blocks[0]
        # what the loop's first iteration would need a barrier for because of accesses from before
        # the loop (barriers just initialised, a tile stored through shared memory): one barrier
        # before the loop rather than one in the body that every iteration pays.  Asynchronous
        # copies are not settled by it (their data lands at their wait), so they stay pending.
        settled = frozenset(a for a in pending if not isinstance(a.op, _ASYNC_COPIES))
        before = None
        if settled and self._entry_conflicts(body, settled):
            before = BarrierOp()
            loop.parent_block().insert_op_before(before, loop)
            pending = pending - settled
        entry = pending
        for _ in range(4):  # barriers only shrink what flows around the back edge
            out = self._block(body, entry)
            if out <= entry:
                break
            entry = entry | out
        if before is not None and not self._entry_conflicts(body, settled):
            # the body needs a barrier of its own (a pipelined loop's, after its copies' wait)
            # ahead of every access that conflicts with those from before the loop: that one
            # publishes them too.  If the loop runs no iteration they are still pending after it.
            before.detach()
            before.erase()
            return entry | out | settled
        return entry | out

    def _entry_conflicts(self, block: Block, pending: frozenset[Access]) -> bool:
        """Whether an access of ``pending`` (what reaches the loop's entry, no asynchronous copies)
        meets a conflicting one in ``block`` (the body's first iteration) before a barrier there;
        nested regions count as all their accesses."""
        for op in block.ops:
            if isinstance(op, BarrierOp):
                return False
            if op.regions and not isinstance(op, _COMBINES):
                inner = [a for r in op.regions for b in r.blocks for o in b.walk() for a in self.accesses(o)]
                if any(p.conflicts(a) for a in inner for p in pending):
                    return True
                continue
            if any(p.conflicts(a) and not self.filter(p.op, op) for a in self.accesses(op) for p in pending):
                return True
        return False


def membar(module: ModuleOp, membar_filter: MembarFilter | None = None) -> ModuleOp:
    Membar(membar_filter).run(module)
    return module


__all__ = ["Membar", "membar", "Access", "MemDescType"]
