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

from .dialect import WarpGroupDotOp, WarpGroupDotWaitOp


def _pipelined(dot: WarpGroupDotOp) -> bool:
    """Both operands are slots that are refilled two iterations after they are read (a spare slot),
    so the dot may still be reading them during the next iteration."""
    from tritium.ttgir.passes.pipeline import slots_ahead
    return all(slots_ahead(v) >= 2 for v in (dot.a, dot.b))


def wants_spare_slot(loop) -> bool:
    """The pipeline's question, asked before it rewrites ``loop``: a wgmma reading two buffers the
    loop fills whose waited result only flows back into the loop (what this pass will let run
    across iterations)."""
    body = loop.body.block
    for wait in body.ops:
        if not isinstance(wait, WarpGroupDotWaitOp) or len(wait.inputs) != 1:
            continue
        dot = wait.inputs[0].owner
        if not isinstance(dot, WarpGroupDotOp) or dot.parent_block() is not body:
            continue
        uses = list(wait.outputs[0].uses)
        loads = all(getattr(v.owner, "name", None) == "ttg.local_alloc" and v.owner.parent_block() is body
                    for v in (dot.a, dot.b))
        if loads and len(uses) == 1 and uses[0].operation is body.last_op:
            return True
    return False


def _prune_fences(module: ModuleOp) -> None:
    """A ``ttng.fence_async_shared`` before a wgmma orders ordinary ``st.shared`` writes before the
    tensor cores read them.  Where every buffer operand is a pipeline slot (filled by ``cp.async``,
    landed by ``cp.async.wait_group`` and a barrier, as Triton's pipelined loops do without a fence)
    or was written before the loop (and fenced there), the fence inside the loop is dropped: it
    compiles to a full ``MEMBAR`` every iteration."""
    for fence in [op for op in module.walk() if op.name == "ttng.fence_async_shared"]:
        loop = fence.parent_op()
        if not isinstance(loop, scf.ForOp):
            continue
        dot = fence.next_op
        while dot is not None and not isinstance(dot, WarpGroupDotOp):
            dot = dot.next_op
        if dot is None:
            continue
        bufs = [v for v in (dot.a, dot.b) if not isinstance(v.type, TensorType)]
        if all(getattr(v.owner, "name", None) == "ttg.memdesc_index" or not loop.is_ancestor(v.owner)
               for v in bufs if isinstance(v.owner, Operation)):
            fence.detach()
            fence.erase()


class AsyncDotWaits:
    name = "nvidia-async-dot-waits"

    def run(self, module: ModuleOp) -> None:
        _prune_fences(module)
        for wait in [op for op in module.walk() if isinstance(op, WarpGroupDotWaitOp)]:
            loop = wait.parent_op()
            if not isinstance(loop, scf.ForOp) or len(wait.inputs) != 1:
                continue
            dot = wait.inputs[0].owner
            if not isinstance(dot, WarpGroupDotOp) or not _pipelined(dot):
                continue
            uses = list(wait.outputs[0].uses)
            yield_op = loop.body.block.last_op
            if len(uses) != 1 or uses[0].operation is not yield_op:
                continue
            wait.properties["pendings"] = IntegerAttr(1, i32)
            res = loop.results[uses[0].index]
            final = WarpGroupDotWaitOp([res], 0)
            Rewriter.insert_op(final, InsertPoint.after(loop))
            for use in list(res.uses):
                if use.operation is not final:
                    use.operation.operands[use.index] = final.outputs[0]
