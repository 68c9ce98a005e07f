"""``loop-unroll``: unroll each ``scf.for`` marked ``tt.loop_unroll_factor = F`` (``tl.range(...,
loop_unroll_factor=F)``) by ``F``.

The loop becomes a main loop of step ``F * step`` whose body holds ``F`` copies of the original
body (copy ``j`` sees the induction variable ``iv + j * step`` and the values copy ``j - 1``
yielded), over the first ``trip_count - trip_count % F`` iterations, and an epilogue loop, the
original body unchanged, over the rest.  The epilogue is marked ``tt.num_stages = 1``: it runs at
most ``F - 1`` iterations and is not worth pipelining.  With constant bounds a remainder of zero
drops the epilogue, and fewer trips than ``F`` keep the loop as it is.  ``F <= 1`` leaves the loop as it is; the attribute is removed either way.

The trip count is ``max(0, ceildiv(ub - lb, step))`` in the induction variable's width; the
frontend emits loops with a positive step (a negative ``range`` step is normalised before).
"""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32
from xdsl.ir import Block, Operation, Region, SSAValue

from .. import arith
from ._fold import const_value, make_const

UNROLL_ATTR = "tt.loop_unroll_factor"
STAGES_ATTR = "tt.num_stages"


def _factor(loop: scf.ForOp) -> int:
    attr = loop.attributes.get(UNROLL_ATTR)
    return attr.value.data if isinstance(attr, IntegerAttr) else 1


class _Emitter:
    """Inserts ops before ``anchor``, folding integer constants as it goes."""

    def __init__(self, anchor: Operation):
        self.anchor, self.t = anchor, anchor.operands[0].type

    def emit(self, op: Operation) -> SSAValue:
        op.location = self.anchor.location
        self.anchor.parent_block().insert_op_before(op, self.anchor)
        return op.results[0]

    def const(self, value: int) -> SSAValue:
        return self.emit(make_const(self.t, value))

    def binary(self, cls, a: SSAValue | int, b: SSAValue | int, fold) -> SSAValue:
        """``cls(a, b)``, or the constant ``fold(a, b)`` when both are constants (ints or values)."""
        ca = a if isinstance(a, int) else const_value(a)
        cb = b if isinstance(b, int) else const_value(b)
        if ca is not None and cb is not None:
            return self.const(fold(ca, cb))
        return self.emit(cls(*(self.const(x) if isinstance(x, int) else x for x in (a, b))))


def _clone_body(body: Block, into: Block, iv: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
    """Clone ``body``'s ops (its yield excepted) at the end of ``into`` with the induction variable
    and the iteration arguments bound to ``iv`` and ``carried``; returns the yielded values."""
    env: dict[SSAValue, SSAValue] = {body.args[0]: iv}
    env.update(zip(body.args[1:], carried))
    for op in body.ops:
        if op is body.last_op:
            return [env.get(v, v) for v in op.operands]
        into.add_op(op.clone(value_mapper=env))
    return []


def unroll(loop: scf.ForOp, factor: int) -> None:
    e = _Emitter(loop)
    lb, ub, step = loop.lb, loop.ub, loop.step
    w = lb.type.width.data

    def wrap(x: int) -> int:
        x %= 1 << w
        return x - (1 << w) if x >= 1 << (w - 1) else x

    clb, cub, cstep = const_value(lb), const_value(ub), const_value(step)
    if None not in (clb, cub, cstep) and cstep > 0:
        trips = max(0, -(-(cub - clb) // cstep))
        main_trips = trips - trips % factor
        if main_trips == 0:  # fewer trips than copies: the loop stays as it is
            del loop.attributes[UNROLL_ATTR]
            return
        main_ub = e.const(wrap(clb + main_trips * cstep))
        epilogue = trips % factor != 0
    else:
        diff = e.binary(arith.SubIOp, ub, lb, lambda a, b: wrap(a - b))
        stepm1 = e.binary(arith.SubIOp, step, 1, lambda a, b: wrap(a - b))
        num = e.binary(arith.AddIOp, diff, stepm1, lambda a, b: wrap(a + b))
        trips = e.emit(arith.MaxSIOp(e.emit(arith.DivSIOp(num, step)), e.const(0)))
        main_trips = e.emit(arith.SubIOp(trips, e.emit(arith.RemSIOp(trips, e.const(factor)))))
        main_ub = e.emit(arith.AddIOp(lb, e.emit(arith.MulIOp(main_trips, step))))
        epilogue = True
    main_step = e.binary(arith.MulIOp, step, factor, lambda a, b: wrap(a * b))

    body = loop.body.block
    new_body = Block(arg_types=[a.type for a in body.args])
    iv, carried = new_body.args[0], list(new_body.args[1:])
    for j in range(factor):
        iv_j = iv
        if j:
            offset = e.binary(arith.MulIOp, step, j, lambda a, b: wrap(a * b))
            iv_j = arith.AddIOp(iv, offset)
            iv_j.location = loop.location
            new_body.add_op(iv_j)
            iv_j = iv_j.result
        carried = _clone_body(body, new_body, iv_j, carried)
    new_body.add_op(scf.YieldOp(*carried))
    main = scf.ForOp(lb, main_ub, main_step, list(loop.iter_args), Region(new_body))
    main.attributes.update({k: v for k, v in loop.attributes.items() if k != UNROLL_ATTR})
    main.location = loop.location
    loop.parent_block().insert_op_before(main, loop)
    if not epilogue:
        for old, new in zip(loop.results, main.results):
            old.replace_all_uses_with(new)
        loop.detach()
        loop.erase()
        return
    # the original loop, from where the main loop stopped, is the epilogue
    loop.operands[0] = main_ub
    for i, r in enumerate(main.results):
        loop.operands[3 + i] = r
    del loop.attributes[UNROLL_ATTR]
    loop.attributes[STAGES_ATTR] = IntegerAttr(1, i32)


class LoopUnroll:
    name = "loop-unroll"

    def run(self, module: ModuleOp) -> None:
        loops = [op for op in module.walk() if isinstance(op, scf.ForOp) and UNROLL_ATTR in op.attributes]
        for loop in reversed(loops):  # inner loops first: an outer unroll then copies unrolled bodies
            factor = _factor(loop)
            if factor > 1:
                unroll(loop, factor)
            else:
                del loop.attributes[UNROLL_ATTR]
