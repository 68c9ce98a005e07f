"""``reorder_broadcast``: compute elementwise ops before ``tt.splat``/``tt.broadcast``, on the
smaller source values, as Triton does:

* ``elementwise(splat a, splat b)`` becomes ``splat(elementwise(a, b))`` (a dense splat constant
  counts as a splat of its scalar);
* ``elementwise(broadcast a, broadcast b)`` with equal source shapes becomes
  ``broadcast(elementwise(a, b))``; splat constants among the operands are rebuilt at the source
  shape.

Only effect-free single-result elementwise ops move: arith, math, tt's elementwise extras, and library
calls and inline assembly marked pure.
"""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from ..arith import ConstantOp
from ..ops import (BroadcastOp, ClampFOp, ElementwiseInlineAsmOp, ExternElementwiseOp, FpToFpOp, MulhiUIOp,
                   PreciseDivFOp, PreciseSqrtOp, SplatOp, is_pure)
from ..types import element_type, like, shape_of
from ._fold import const_value, make_const

_TT_ELEMENTWISE = (ClampFOp, FpToFpOp, MulhiUIOp, PreciseDivFOp, PreciseSqrtOp, ExternElementwiseOp,
                   ElementwiseInlineAsmOp)


def is_elementwise(op: Operation) -> bool:
    if isinstance(op, ConstantOp) or len(op.results) != 1 or op.regions or not op.operands:
        return False
    if not (op.name.startswith(("arith.", "math.")) or isinstance(op, _TT_ELEMENTWISE)):
        return False
    shape = shape_of(op.results[0].type)
    return bool(shape) and is_pure(op) and all(shape_of(v.type) == shape for v in op.operands)


def _rebuild(op: Operation, operands, result_type) -> Operation:
    new = type(op).create(operands=list(operands), result_types=[result_type],
                          properties=dict(op.properties), attributes=dict(op.attributes))
    new.location = op.location
    return new


class _Reorder(RewritePattern):
    def match_and_rewrite(self, op: Operation, rw: PatternRewriter) -> None:
        if not is_elementwise(op):
            return
        owners = [v.owner for v in op.operands]
        result_t = op.results[0].type
        if all(isinstance(o, SplatOp) or (isinstance(o, ConstantOp) and const_value(v) is not None)
               for o, v in zip(owners, op.operands)):
            if all(isinstance(o, ConstantOp) for o in owners):
                return  # constant folding's business
            new_ops, scalars = [], []
            for o, v in zip(owners, op.operands):
                if isinstance(o, SplatOp):
                    scalars.append(o.src)
                else:
                    c = make_const(element_type(v.type), const_value(v), o)
                    new_ops.append(c)
                    scalars.append(c.result)
            scalar_op = _rebuild(op, scalars, element_type(result_t))
            rw.replace(op, [*new_ops, scalar_op, SplatOp(scalar_op.results[0], result_t)])
            return
        bcasts = [o for o in owners if isinstance(o, BroadcastOp)]
        if not bcasts:
            return
        src_shape = shape_of(bcasts[0].src.type)
        if any(shape_of(b.src.type) != src_shape for b in bcasts):
            return
        if not all(isinstance(o, BroadcastOp) or (isinstance(o, ConstantOp) and const_value(v) is not None)
                   for o, v in zip(owners, op.operands)):
            return
        new_ops, srcs = [], []
        for o, v in zip(owners, op.operands):
            if isinstance(o, BroadcastOp):
                srcs.append(o.src)
            else:
                c = make_const(like(v.type, src_shape), const_value(v), o)
                new_ops.append(c)
                srcs.append(c.result)
        small = _rebuild(op, srcs, like(result_t, src_shape))
        rw.replace(op, [*new_ops, small, BroadcastOp(small.results[0], result_t)])


class ReorderBroadcast:
    name = "reorder_broadcast"

    def run(self, module: ModuleOp) -> None:
        PatternRewriteWalker(_Reorder(), apply_recursively=True).rewrite_module(module)
