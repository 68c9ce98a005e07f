"""``nvidia-overlap-dots``: in a loop of two ``wgmma`` where the second consumes the first through
register work (attention: ``S = Q @ K_j``, a softmax of ``S`` into ``P``, the accumulator rescaled,
``O += P @ V_j``), run that register work while the tensor cores compute the previous iteration's
second dot (FlashAttention-3's intra-warpgroup overlap).

After the pipeline and ``nvidia-async-dot-waits`` the body waits for ``S`` and for the ``P @ V``
in flight from the iteration before in one ``wgmma.wait_group 0``: the softmax runs with this warp
group's tensor cores idle.  The loop becomes a two-stage schedule: stage A of iteration ``k`` is
everything but the second dot (the copy wait, ``S_k``, the softmax, the rescale, the refill of
the slots), stage B is the second dot.  Iteration ``k`` of the new loop runs stage B of ``k - 1``
between issuing ``S_k`` and waiting for it::

    if lb < ub:
        stage A of iteration lb                      // S_0 waited at once, P_0, O_0 * alpha_0
        for k in lb + step .. ub:
            S_k = wgmma(Q, K_k)                      // issued first ...
            O   = wgmma(P_{k-1}, V_{k-1}, O')        // ... then the previous iteration's P @ V
            S_k = wait(S_k) {pendings = 1}           // P @ V still runs
            softmax(S_k) -> P_k, alpha_k             // overlapping it
            O = wait(O) {pendings = 0}; O' = O * alpha_k
            refill slots (as before)
        O = wgmma(P_last, V_last, O'); wait(O)       // stage B of the last iteration
    else: the loop's initial values

Both groups of an iteration are issued and retired within it (ptxas serializes a loop whose
accumulator registers are read after a ``wait_group 1`` that the back edge separates from the
issue: C7514).  ``P_{k-1}``, the rescaled accumulator and the slot index of ``V_{k-1}`` are carried
from one iteration to the next.  No dot is computed that the loop did not compute.

Measured on the H200 (attention forward, one warp group, head dim 64 and 128, causal or not,
N 4096 and 16384): 0.99-1.04x the loop left as is, 12 of 16 rows above 1.01.

Declined (the loop left as it is) in a block of more than one warp group (:class:`OverlapDots`) and
unless the body has that shape: exactly two ``wgmma``, the first with a loop-invariant ``A`` and
accumulator input and a pipeline slot ``B``, the second with a register ``A`` of 16- or 32-bit
elements, one full wait right after the first that also takes the loop-carried accumulator, the
second dot accumulating into a value computed from that wait and left in flight into the yield,
reading a slot view of its own and nothing after it reading its result; ``i32`` bounds; slots
filled by ``cp.async``.  A loop of TMA copies (slots completing on mbarriers) is left alone: the
reordered form is correct there but ran slower on the H200 (the descriptor attention kernel,
causal or not, N 4096 and 16384, against the loop left as is: one warp group 0.87-0.93 at head
dim 64 and 1.00-1.02 at 128; two groups 0.68-0.96; docs/performance.md)."""
from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, TensorType, i32
from xdsl.ir import Block, BlockArgument, Region
from xdsl.rewriter import InsertPoint, Rewriter

from tritium.ttgir.layouts import bit_width
from tritium.ttgir.passes._util import defined_in
from tritium.ttgir.ops import AsyncCopyDescriptorToLocalOp, AsyncWaitOp, MemDescIndexOp, WaitBarrierOp

from .dialect import WarpGroupDotOp, WarpGroupDotWaitOp


class _Shape:
    """The parts of a loop body that has the module docstring's shape."""

    def __init__(self, loop: scf.ForOp):
        self.ok = False
        body = loop.body.block
        ops = list(body.ops)
        if not isinstance(loop.lb.type, IntegerType) or loop.lb.type.width.data != 32:
            return
        dots = [op for op in ops if isinstance(op, WarpGroupDotOp)]
        waits = [op for op in ops if isinstance(op, WarpGroupDotWaitOp)]
        if len(dots) != 2 or len(waits) != 1:
            return
        first, second = dots
        wait = waits[0]
        if wait.pendings.value.data != 0 or len(wait.inputs) != 2 or wait.inputs[0] is not first.d \
                or ops.index(wait) != ops.index(first) + 1:
            return
        if defined_in(first.a, loop) or defined_in(first.c, loop) or not isinstance(first.b.owner, MemDescIndexOp):
            return
        acc = wait.inputs[1]
        if not (isinstance(acc, BlockArgument) and acc.block is body and acc.index > 0):
            return
        yield_op = body.last_op
        if yield_op.operands[acc.index - 1] is not second.d or len(list(second.d.uses)) != 1:
            return
        # the second dot's slot: a view made for it alone
        view = second.b.owner
        if not isinstance(view, MemDescIndexOp) or view.parent_block() is not body or \
                len(list(view.result.uses)) != 1 or defined_in(view.src, loop):
            return
        # its register operand and accumulator come from the stage-A work (they are carried); an
        # operand of 8-bit elements would cross the back edge byte by byte and be packed into its
        # A registers again each iteration (fp8 attention: 24 more prmt an iteration)
        if not (isinstance(second.a.type, TensorType) and defined_in(second.a, loop) and defined_in(second.c, loop)):
            return
        if bit_width(second.a.type.element_type) < 16:
            return
        if any(r.uses for op in ops if isinstance(op, AsyncWaitOp) for r in op.results):
            return
        # slots filled by cp.async only: a loop whose copies complete on mbarriers (TMA descriptor
        # loads) measured slower reordered (module docstring)
        if any(isinstance(op, (AsyncCopyDescriptorToLocalOp, WaitBarrierOp)) for op in body.walk()):
            return
        self.body, self.first, self.second, self.wait, self.view = body, first, second, wait, view
        self.acc_index = acc.index - 1  # position among the iter args
        self.ok = True


def _stage_a(shape: _Shape, mapping: dict, block: Block, carried=None) -> None:
    """Clone stage A (every body op but the second dot, its slot view and the yield) at the end of
    ``block`` through ``mapping``.  With ``carried`` = (P, V slot index, O'), the previous
    iteration's second dot is issued right after the first dot, the first dot's result waited
    alone (``pendings = 1``: the second dot, issued last, may run on) and the accumulator just
    before its first use; without, the body's own full wait is cloned."""
    body = shape.body
    ops = list(body.ops)[:-1]
    acc_out = shape.wait.outputs[1]
    users = {body.find_ancestor_op_in_block(u.operation) for u in acc_out.uses}
    first_user = next((op for op in ops if op in users), None)
    prev = None
    for op in ops:
        if op is shape.second or op is shape.view:
            continue
        if op is shape.wait and carried is not None:
            p, slot, o = carried
            view = shape.view.clone(value_mapper={shape.view.index: slot})
            block.add_op(view)
            prev = shape.second.clone(value_mapper={shape.second.a: p, shape.second.b: view.result,
                                                    shape.second.c: o})
            block.add_op(prev)
            s_wait = WarpGroupDotWaitOp([mapping[shape.first.d]], 1)
            block.add_op(s_wait)
            mapping[shape.wait.outputs[0]] = s_wait.outputs[0]
            if first_user is None:
                o_wait = WarpGroupDotWaitOp([prev.d], 0)
                block.add_op(o_wait)
                mapping[acc_out] = o_wait.outputs[0]
            continue
        if op is first_user and carried is not None:
            o_wait = WarpGroupDotWaitOp([prev.d], 0)
            block.add_op(o_wait)
            mapping[acc_out] = o_wait.outputs[0]
        block.add_op(op.clone(value_mapper=mapping))


def overlap(loop: scf.ForOp) -> bool:
    shape = _Shape(loop)
    if not shape.ok:
        return False
    body = shape.body
    yield_op = body.last_op
    n_iter = len(loop.iter_args)
    second = shape.second
    guard_block = Block()
    cond = arith.CmpiOp(loop.lb, loop.ub, "slt")
    Rewriter.insert_op(cond, InsertPoint.before(loop))

    # stage A of the first iteration
    pro: dict = {body.args[0]: loop.lb}
    pro.update({a: v for a, v in zip(body.args[1:], loop.iter_args)})
    _stage_a(shape, pro, guard_block)

    def carried_out(m: dict) -> list:
        # the loop's values with the accumulator position holding O' (the second dot's input),
        # then P, the V slot index, and O' again is not needed twice
        vals = [m.get(v, v) for v in yield_op.operands]
        vals[shape.acc_index] = m.get(second.c, second.c)
        return vals + [m.get(second.a, second.a), m.get(shape.view.index, shape.view.index)]

    inits = carried_out(pro)
    start = arith.AddiOp(loop.lb, loop.step)
    guard_block.add_op(start)
    types = [v.type for v in inits]
    new_body = Block(arg_types=[loop.lb.type] + types)
    m: dict = {body.args[0]: new_body.args[0]}
    m.update({a: b for a, b in zip(body.args[1:], new_body.args[1:n_iter + 1])})
    p_arg, slot_arg = new_body.args[n_iter + 1], new_body.args[n_iter + 2]
    o_arg = new_body.args[1 + shape.acc_index]
    _stage_a(shape, m, new_body, carried=(p_arg, slot_arg, o_arg))
    new_body.add_op(scf.YieldOp(*carried_out(m)))
    new_loop = scf.ForOp(start.result, loop.ub, loop.step, inits, Region(new_body))
    new_loop.attributes.update(loop.attributes)
    new_loop.attributes["tritium.overlapped_dots"] = IntegerAttr(1, i32)
    guard_block.add_op(new_loop)
    # stage B of the last iteration
    res = list(new_loop.results)
    view = shape.view.clone(value_mapper={shape.view.index: res[n_iter + 1]})
    guard_block.add_op(view)
    last = second.clone(value_mapper={second.a: res[n_iter], second.b: view.result, second.c: res[shape.acc_index]})
    guard_block.add_op(last)
    done = WarpGroupDotWaitOp([last.d], 0)
    guard_block.add_op(done)
    outs = res[:n_iter]
    outs[shape.acc_index] = done.outputs[0]
    guard_block.add_op(scf.YieldOp(*outs))
    else_block = Block()
    else_block.add_op(scf.YieldOp(*loop.iter_args))
    guard = scf.IfOp(cond.result, [r.type for r in loop.results], Region(guard_block), Region(else_block))
    Rewriter.insert_op(guard, InsertPoint.before(loop))
    for old, new in zip(loop.results, guard.results):
        old.replace_all_uses_with(new)
    loop.detach()
    loop.erase()
    return True


class OverlapDots:
    """Only for a block of one warp group (``num_warps`` 4): where two or more share the SM's tensor
    cores, each one's softmax already overlaps the others' dots, and the reordered issue measured
    slower (H200, attention forward, 8 warps: 0.94-0.98 of the loop left as is without causal
    masking; with it 1.12-1.14 at head dim 64 and 0.98 at 128)."""

    name = "nvidia-overlap-dots"

    def __init__(self, num_warps: int = 4):
        self.num_warps = int(num_warps)

    def run(self, module: ModuleOp) -> None:
        if self.num_warps != 4:
            return
        for loop in [op for op in module.walk() if isinstance(op, scf.ForOp)]:
            overlap(loop)
