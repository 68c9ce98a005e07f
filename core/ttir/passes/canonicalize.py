"""``canonicalize``: local folds and simplifications of arith, scf and tt shape ops.

* constants: integer and float (f16/f32/f64) binary arith on scalar and splat operands, integer
  casts, ``cmpi``/``cmpf`` of constants, ``tt.splat`` of a constant becomes a dense constant;
* identities: ``x + 0``, ``x - 0``, ``x * 1``, ``x * 0`` (integers only), ``x | 0``, ``x & 0``,
  ``x ^ 0``, ``x << 0``, ``x + -0.0``, ``x * 1.0``, ``select`` with a constant or redundant
  condition;
* casts: ``trunci(ext x)`` and ``ext(ext x)`` collapse; ``extf(truncf x)`` is left alone (not exact);
* shapes: ``broadcast``/``expand_dims``/``reshape`` of a splat is a splat, ``broadcast(broadcast x)``
  is one broadcast, a broadcast to the same type disappears;
* control flow: ``scf.if`` with a constant condition is replaced by the taken branch, ``scf.for``
  that runs zero times by its init values.

It also applies the ``combine`` patterns (Triton's TTIR combines), like Triton's canonicalizer.
"""
from __future__ import annotations

import math

from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from .. import arith as A
from ..ops import BroadcastOp, ExpandDimsOp, ReshapeOp, SplatOp
from ._driver import RewriteTable, apply_tables
from ._fold import cmpi_eval, const_value, int_width, make_const, round_float, unsigned, wrap
from .combine import COMBINE

CANON = RewriteTable()


def _replace_const(op: Operation, rw: PatternRewriter, value) -> None:
    rw.replace(op, make_const(op.results[0].type, value, op))


def _sdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _int_eval(op, a: int, b: int, w: int):
    ua, ub = unsigned(a, w), unsigned(b, w)
    match op:
        case A.AddIOp(): return a + b
        case A.SubIOp(): return a - b
        case A.MulIOp(): return a * b
        case A.DivSIOp() if b != 0 and not (a == -(1 << (w - 1)) and b == -1): return _sdiv(a, b)
        case A.RemSIOp() if b != 0: return 0 if b == -1 else a - b * _sdiv(a, b)
        case A.DivUIOp() if ub != 0: return ua // ub
        case A.RemUIOp() if ub != 0: return ua % ub
        case A.AndIOp(): return ua & ub
        case A.OrIOp(): return ua | ub
        case A.XOrIOp(): return ua ^ ub
        case A.ShLIOp() if ub < w: return ua << ub
        case A.ShRSIOp() if ub < w: return a >> ub
        case A.ShRUIOp() if ub < w: return ua >> ub
        case A.MaxSIOp(): return max(a, b)
        case A.MinSIOp(): return min(a, b)
        case A.MaxUIOp(): return max(ua, ub)
        case A.MinUIOp(): return min(ua, ub)
    return None


def _float_eval(op, a: float, b: float):
    match op:
        case A.AddFOp(): return a + b
        case A.SubFOp(): return a - b
        case A.MulFOp(): return a * b
        case A.DivFOp():
            if b == 0:
                return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1, b)
            return a / b
    return None


INT_BINARY = (A.AddIOp, A.SubIOp, A.MulIOp, A.DivSIOp, A.DivUIOp, A.RemSIOp, A.RemUIOp, A.AndIOp,
              A.OrIOp, A.XOrIOp, A.ShLIOp, A.ShRSIOp, A.ShRUIOp, A.MaxSIOp, A.MinSIOp, A.MaxUIOp, A.MinUIOp)
FLOAT_BINARY = (A.AddFOp, A.SubFOp, A.MulFOp, A.DivFOp)
COMMUTATIVE = (A.AddIOp, A.MulIOp, A.AndIOp, A.OrIOp, A.XOrIOp, A.AddFOp, A.MulFOp)


@CANON.on(*INT_BINARY)
def fold_int_binary(op, rw):
    w = int_width(op.result.type)
    a, b = const_value(op.lhs), const_value(op.rhs)
    if w is None:
        return
    if a is not None and b is not None:
        r = _int_eval(op, a, b, w)
        if r is not None:
            _replace_const(op, rw, wrap(r, w))
        return
    if isinstance(op, COMMUTATIVE) and a is not None:  # identities below look at the rhs only
        a, b, x = b, a, op.rhs
    else:
        x = op.lhs
    if b == 0 and isinstance(op, (A.AddIOp, A.SubIOp, A.OrIOp, A.XOrIOp, A.ShLIOp, A.ShRSIOp, A.ShRUIOp)):
        rw.replace(op, [], [x])
    elif b == 1 and isinstance(op, (A.MulIOp, A.DivSIOp, A.DivUIOp)):
        rw.replace(op, [], [x])
    elif b == 0 and isinstance(op, (A.MulIOp, A.AndIOp)):
        _replace_const(op, rw, 0)


@CANON.on(*FLOAT_BINARY)
def fold_float_binary(op, rw):
    a, b = const_value(op.lhs), const_value(op.rhs)
    if a is not None and b is not None:
        r = _float_eval(op, a, b)
        r = round_float(r, op.result.type) if r is not None else None
        if r is not None:
            _replace_const(op, rw, r)
        return
    if isinstance(op, COMMUTATIVE) and a is not None:
        b, x = a, op.rhs
    else:
        x = op.lhs
    if b is None:
        return
    # x + -0.0 == x and x * 1.0 == x for every x (x + 0.0 is not: it turns -0.0 into +0.0).
    neg_zero = b == 0 and math.copysign(1.0, b) < 0
    if (neg_zero and isinstance(op, A.AddFOp)) or (b == 0 and math.copysign(1.0, b) > 0 and isinstance(op, A.SubFOp)) \
            or (b == 1.0 and isinstance(op, (A.MulFOp, A.DivFOp))):
        rw.replace(op, [], [x])


@CANON.on(A.CmpIOp)
def fold_cmpi(op, rw):
    a, b = const_value(op.lhs), const_value(op.rhs)
    if a is not None and b is not None:
        _replace_const(op, rw, int(cmpi_eval(op.predicate_name, a, b, int_width(op.lhs.type))))
    elif op.lhs == op.rhs:
        _replace_const(op, rw, int(op.predicate_name in ("eq", "sle", "sge", "ule", "uge")))


@CANON.on(A.CmpFOp)
def fold_cmpf(op, rw):
    a, b = const_value(op.lhs), const_value(op.rhs)
    if a is None or b is None:
        return
    p = op.predicate_name
    unordered = math.isnan(a) or math.isnan(b)
    if p in ("false", "true"):
        r = p == "true"
    elif p == "ord" or p == "uno":
        r = (not unordered) == (p == "ord")
    elif unordered:
        r = p[0] == "u"
    else:
        r = {"eq": a == b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b, "ne": a != b}[p[1:]]
    _replace_const(op, rw, int(r))


@CANON.on(A.SelectOp)
def fold_select(op, rw):
    c = const_value(op.cond)
    if c is not None:
        rw.replace(op, [], [op.true_value if c else op.false_value])
    elif op.true_value == op.false_value:
        rw.replace(op, [], [op.true_value])


@CANON.on(A.ExtSIOp, A.ExtUIOp, A.TruncIOp)
def fold_int_cast(op, rw):
    src, w_out = op.input, int_width(op.result.type)
    c = const_value(src)
    if c is not None:
        w_in = int_width(src.type)
        v = unsigned(c, w_in) if isinstance(op, A.ExtUIOp) else c
        _replace_const(op, rw, wrap(v, w_out))
        return
    inner = src.owner
    if isinstance(op, A.TruncIOp) and isinstance(inner, (A.ExtSIOp, A.ExtUIOp)):
        x = inner.input
        w_x = int_width(x.type)
        if w_x == w_out:
            rw.replace(op, [], [x])
        elif w_x < w_out:
            rw.replace(op, type(inner)(x, op.result.type))
        else:
            rw.replace(op, A.TruncIOp(x, op.result.type))
    elif isinstance(op, (A.ExtSIOp, A.ExtUIOp)) and isinstance(inner, (A.ExtSIOp, A.ExtUIOp)):
        # sext(zext x) is zext x; zext(sext x) is not an extension of x at all.
        if isinstance(op, A.ExtSIOp) or isinstance(inner, A.ExtUIOp):
            rw.replace(op, type(inner)(inner.input, op.result.type))


@CANON.on(A.ExtFOp)
def fold_extf(op, rw):
    if isinstance(op.input.owner, A.ExtFOp):  # extf(extf x) is exact; extf(truncf x) is not
        rw.replace(op, A.ExtFOp(op.input.owner.input, op.result.type))


@CANON.on(SplatOp)
def fold_splat(op, rw):
    c = const_value(op.src)
    if c is not None and (int_width(op.result.type) is not None or round_float(c, op.result.type) is not None):
        _replace_const(op, rw, c)


@CANON.on(BroadcastOp, ExpandDimsOp, ReshapeOp)
def fold_shape_of_splat(op, rw):
    if op.src.type == op.result.type and not isinstance(op, ExpandDimsOp):
        rw.replace(op, [], [op.src])
        return
    inner = op.src.owner
    if isinstance(inner, SplatOp):
        rw.replace(op, SplatOp(inner.src, op.result.type))
    elif isinstance(inner, A.ConstantOp) and const_value(op.src) is not None:
        _replace_const(op, rw, const_value(op.src))
    elif isinstance(op, BroadcastOp) and isinstance(inner, BroadcastOp):
        rw.replace(op, BroadcastOp(inner.src, op.result.type))


@CANON.on(scf.IfOp)
def fold_constant_if(op, rw):
    c = const_value(op.cond)
    if c is None:
        return
    region = op.true_region if c else op.false_region
    if not region.blocks:  # `scf.if false` without else: nothing runs and nothing is yielded
        rw.erase(op)
        return
    block = region.block
    yield_op = block.last_op
    values = list(yield_op.operands)
    rw.erase(yield_op)
    rw.inline_block(block, InsertPoint.before(op))
    rw.replace(op, [], values)


@CANON.on(scf.ForOp)
def fold_zero_trip_for(op, rw):
    lb, ub = const_value(op.lb), const_value(op.ub)
    if lb is not None and ub is not None and lb >= ub:
        rw.replace(op, [], list(op.iter_args))


class Canonicalize:
    name = "canonicalize"

    def run(self, module: ModuleOp) -> None:
        apply_tables(module, CANON, COMBINE)
