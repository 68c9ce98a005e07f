"""``nvidia-async-operand-loads``: a loop-invariant tensor-core operand loaded by ``cp.async``.

Attention's forward kernel loads its Q tile once, writes it to shared memory (``local_alloc`` of
the loaded tensor) and reads it there in every iteration of the pipelined K/V loop.  Loaded into
registers, the tile costs a round trip: each thread's ``st.shared`` waits for its global load, and
the pipeline's prologue copies of the first K and V tiles, issued after that store, leave only
once Q has arrived (two memory latencies before the first wgmma).  The backward kernels do the
same with K and V (``dK``/``dV``) and Q and dO (``dQ``).

When such a tile's only use is that ``local_alloc`` and the buffer is read only inside a following
loop whose body waits for its copies (``ttg.async_wait``) before any read, the load becomes a
``cp.async`` into the buffer, issued where the load was, with a commit group of its own:

* it is the oldest group in flight, so the loop's first wait (at most N younger groups pending)
  retires it with the first K and V tiles, and the barrier after that wait publishes it;
* the pipeline's prologue copies go out right behind it, no registers hold the tile, and no
  ``st.shared`` or proxy fence is needed for it (wgmma reads ``cp.async`` data after the wait and
  barrier, as it reads the pipelined slots);
* a ``ttg.async_wait {num = 0}`` after the loop covers a loop that runs no iteration, before the
  buffer's bytes can be reused.

Masked-off lanes read zero (the copy's zero fill), so a load with an ``other`` that is not zero
keeps its register path.
"""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from tritium.ttgir.layouts import bit_width
from tritium.ttgir.ops import AsyncCommitGroupOp, AsyncCopyGlobalToLocalOp, AsyncWaitOp, LocalAllocOp, MemDescTransOp
from tritium.ttgir.passes.software_pipeline import is_zero
from tritium.ttgir.types import MemDescType
from tritium.ttir.memory_ops import LoadOp, cache_evict

from .dialect import FenceAsyncSharedOp


def _holds_async(op: Operation) -> bool:
    """Whether ``op`` has regions holding asynchronous copies, commits or waits (whose groups this
    pass cannot count)."""
    return bool(op.regions) and any(o.name.startswith("ttg.async") for o in op.walk())


def _readers(v: SSAValue) -> list[Operation]:
    """The ops reading the buffer ``v``, through transposed views."""
    out = []
    for use in v.uses:
        op = use.operation
        if isinstance(op, MemDescTransOp):
            out.extend(_readers(op.results[0]))
        else:
            out.append(op)
    return out


def _reading_loop(alloc: LocalAllocOp) -> scf.ForOp | None:
    """The loop after ``alloc`` (in its block) that holds every read of its buffer, when that loop's
    body waits for its asynchronous copies before the first op that reads it."""
    readers = _readers(alloc.result)
    if not readers:
        return None
    block = alloc.parent_block()
    loops = {block.find_ancestor_op_in_block(r) for r in readers}
    if len(loops) != 1:
        return None
    loop = loops.pop()
    if not isinstance(loop, scf.ForOp):
        return None
    body = loop.body.block
    first = min((body.find_ancestor_op_in_block(r) for r in readers), key=body.get_operation_index)
    younger = 0  # groups committed after this one before the body's first wait
    op = alloc.next_op
    while op is not loop:
        if _holds_async(op):
            return None
        younger += isinstance(op, AsyncCommitGroupOp)
        op = op.next_op
    for op in body.ops:
        if op is first or _holds_async(op):
            return None
        if isinstance(op, AsyncWaitOp):
            # at most ``num`` younger groups in flight: this one has landed
            return loop if op.num.value.data <= younger else None
        younger += isinstance(op, AsyncCommitGroupOp)
    return None


def _eligible(load: LoadOp) -> LocalAllocOp | None:
    t = load.result.type
    if not isinstance(t, TensorType) or not isinstance(load.ptr.type, TensorType):
        return None
    if not is_zero(load.other) or load.isVolatile.value.data or bit_width(t.element_type) < 8:
        return None
    uses = list(load.result.uses)
    if len(uses) != 1 or not isinstance(uses[0].operation, LocalAllocOp):
        return None
    alloc = uses[0].operation
    if alloc.parent_block() is not load.parent_block() or not hasattr(alloc.result.type.encoding, "offset_bases"):
        return None
    return alloc


class AsyncOperandLoads:
    name = "nvidia-async-operand-loads"

    def run(self, module: ModuleOp) -> None:
        for load in [op for op in module.walk() if isinstance(op, LoadOp)]:
            alloc = _eligible(load)
            loop = _reading_loop(alloc) if alloc is not None else None
            if loop is None:
                continue
            t: MemDescType = alloc.result.type
            buf = LocalAllocOp(MemDescType(t.shape, t.element_type, t.encoding, t.memory_space, mutable=True))
            copy = AsyncCopyGlobalToLocalOp(load.ptr, buf.result, load.mask, None, *cache_evict(load))
            Rewriter.insert_op([buf, copy, AsyncCommitGroupOp()], InsertPoint.before(load))
            alloc.result.replace_all_uses_with(buf.result)
            fence = alloc.next_op
            alloc.detach()
            alloc.erase()
            load.detach()
            load.erase()
            if isinstance(fence, FenceAsyncSharedOp):
                # the fence accelerate-matmul put after this tile's store: nothing left for it
                fence.detach()
                fence.erase()
            after = loop.next_op
            if not (isinstance(after, AsyncWaitOp) and after.num.value.data == 0):
                Rewriter.insert_op(AsyncWaitOp(num=0), InsertPoint.after(loop))
