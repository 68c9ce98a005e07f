"""``nvidia-async-dot-waits``: let a pipelined loop's ``wgmma`` run across iterations.

accelerate-matmul waits for every ``ttng.warp_group_dot`` at once (``pendings = 0``).  When a loop's
dot reads both operands from pipelined multi-slot buffers (``ttg.memdesc_index``) and its waited
result only flows into the loop's yield, the wait may leave one dot in flight (``pendings = 1``):
iteration ``i``'s dot then overlaps iteration ``i+1``'s address arithmetic and copy issue.  The slot
refilled in iteration ``i+1`` is the one dot ``i`` read, and the wait in iteration ``i+1`` (after
dot ``i+1`` is issued) retires dot ``i`` before that refill.  The loop result gets a final wait."""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32
from xdsl.rewriter import InsertPoint, Rewriter

from .dialect import WarpGroupDotOp, WarpGroupDotWaitOp


def _pipelined(dot: WarpGroupDotOp) -> bool:
    return all(getattr(v.owner, "name", None) == "ttg.memdesc_index" for v in (dot.a, dot.b))


class AsyncDotWaits:
    name = "nvidia-async-dot-waits"

    def run(self, module: ModuleOp) -> None:
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
