"""Translation of structured control flow (``scf.for``, ``scf.while``, ``scf.if``) and of calls to
non-inlined functions (``tt.call``).  Region bodies become nested closure lists sharing the
enclosing function's register file; terminators (``scf.yield``, ``scf.condition``) are read by
the parent op's closure."""
from __future__ import annotations

from .numerics import type_info
from .registry import run_block, translates


@translates("scf.for")
def _for(tr, op):
    lb, ub, st = tr.r(op.lb), tr.r(op.ub), tr.r(op.step)
    inits = [tr.r(v) for v in op.iter_args]
    outs = [tr.out(v) for v in op.results]
    block = op.body.blocks[0]
    iv, *carried = [tr.r(a) for a in block.args]
    body, term = tr.block(block)
    yields = [tr.r(v) for v in term.operands]
    ity = type_info(op.lb.type).hold

    def loop(fr):
        vals = [fr[r] for r in inits]
        for i in range(int(fr[lb]), int(fr[ub]), int(fr[st])):
            fr[iv] = ity(i)
            for r, v in zip(carried, vals):
                fr[r] = v
            run_block(body, fr)
            vals = [fr[r] for r in yields]
        for r, v in zip(outs, vals):
            fr[r] = v
    return loop


@translates("scf.if")
def _if(tr, op):
    c = tr.r(op.cond)
    outs = [tr.out(v) for v in op.results]
    then_body, then_term = tr.block(op.true_region.blocks[0])
    then_y = [tr.r(v) for v in then_term.operands] if then_term is not None else []
    if op.false_region.blocks:
        else_body, else_term = tr.block(op.false_region.blocks[0])
        else_y = [tr.r(v) for v in else_term.operands] if else_term is not None else []
    else:
        else_body, else_y = [], []

    def branch(fr):
        if fr[c]:
            run_block(then_body, fr)
            ys = then_y
        else:
            run_block(else_body, fr)
            ys = else_y
        for r, y in zip(outs, ys):
            fr[r] = fr[y]
    return branch


@translates("scf.while")
def _while(tr, op):
    inits = [tr.r(v) for v in op.arguments]
    outs = [tr.out(v) for v in op.results]
    before_blk, after_blk = op.before_region.blocks[0], op.after_region.blocks[0]
    b_args = [tr.r(a) for a in before_blk.args]
    a_args = [tr.r(a) for a in after_blk.args]
    before, cond_op = tr.block(before_blk)
    after, yield_op = tr.block(after_blk)
    c = tr.r(cond_op.condition)
    forwarded = [tr.r(v) for v in cond_op.args]
    yields = [tr.r(v) for v in yield_op.operands]

    def loop(fr):
        vals = [fr[r] for r in inits]
        while True:
            for r, v in zip(b_args, vals):
                fr[r] = v
            run_block(before, fr)
            fwd = [fr[r] for r in forwarded]
            if not fr[c]:
                break
            for r, v in zip(a_args, fwd):
                fr[r] = v
            run_block(after, fr)
            vals = [fr[r] for r in yields]
        for r, v in zip(outs, fwd):
            fr[r] = v
    return loop


@translates("tt.call")
def _call(tr, op):
    callee = op.callee.root_reference.data
    args = [tr.r(v) for v in op.operands]
    outs = [tr.out(v) for v in op.results]
    fn = tr.function(callee)  # translated once; a recursive call finds it already registered

    def call(fr):
        for r, v in zip(outs, fn.call(fr, [fr[a] for a in args])):
            fr[r] = v
    return call
