"""``combine``: Triton's TTIR combine patterns.

* ``addptr(p, 0)`` is ``p``; ``addptr(addptr(p, a), b)`` is ``addptr(p, a + b)`` when ``a`` and ``b``
  have the same integer type and the sum cannot wrap: 64-bit offsets, or two constants whose sum
  fits (Triton's rule: each offset is sign-extended on its own, so an i32 ``a + b`` that wraps
  would be another address);
* ``select(c, load(p, c, x), y)`` where the load is used only there is ``load(p, c, y)``;
* ``dot(a, b, 0) + c`` is ``dot(a, b, c)`` (``addi`` or ``addf``) when the zero-accumulator dot is
  used only by the add;
* a load whose mask is all true loses its mask and ``other``; all false, it is its ``other``;
  a store whose mask is all true loses it; all false, it is removed;
* ``cmpi`` of a ``make_range`` against a constant folds when every element gives the same answer;
* ``sum(a[:, :, None] * b[None, :, :], axis=1)`` (an fp32 ``addf`` reduction of the product of two
  broadcast ``expand_dims``) is ``dot(a, b, 0)`` with tf32 inputs, as in Triton, when M, N and K
  are at least 16; with the rule above, ``acc + sum(...)`` becomes ``dot(a, b, acc)``.
"""
from __future__ import annotations

from xdsl.dialects.builtin import Float32Type, ModuleOp, TensorType
from xdsl.pattern_rewriter import PatternRewriter

from .. import arith as A
from ..attrs import CACHE_MODIFIER, EVICTION_POLICY, PADDING_OPTION
from ..memory_ops import LoadOp, StoreOp
from ..ops import AddPtrOp, BroadcastOp, DotOp, ExpandDimsOp, MakeRangeOp, SplatOp
from ..region_ops import ReduceOp
from ._driver import RewriteTable, apply_tables
from ._fold import cmpi_eval, const_value, int_width, is_const, make_const

COMBINE = RewriteTable()


def load_like(op: LoadOp, ptr=None, mask=None, other=None) -> LoadOp:
    """A copy of ``op`` with the given operands (and its cache, eviction, volatility, padding)."""
    new = LoadOp(op.ptr if ptr is None else ptr, mask, other, CACHE_MODIFIER.keyword(op.cache),
                 EVICTION_POLICY.keyword(op.evict), bool(op.isVolatile.value.data),
                 op.boundaryCheck.get_values(), PADDING_OPTION.keyword(op.padding) if op.padding else None)
    new.attributes.update(op.attributes)
    new.location = op.location
    return new


def store_like(op: StoreOp, mask=None) -> StoreOp:
    new = StoreOp(op.ptr, op.value, mask, CACHE_MODIFIER.keyword(op.cache), EVICTION_POLICY.keyword(op.evict),
                  op.boundaryCheck.get_values())
    new.attributes.update(op.attributes)
    new.location = op.location
    return new


def _offsets_combinable(a, b) -> bool:
    """Triton's condition for adding two pointer offsets before the pointer: each offset is
    sign-extended on its own, so their narrower sum is the same address only where it cannot wrap:
    64-bit offsets, or two constants whose sum fits."""
    if a.type != b.type:
        return False
    width = int_width(a.type)
    if width == 64:
        return True
    ca, cb = const_value(a), const_value(b)
    if width is None or not isinstance(ca, int) or not isinstance(cb, int):
        return False
    return -(1 << (width - 1)) <= ca + cb < (1 << (width - 1))


@COMBINE.on(AddPtrOp)
def combine_addptr(op: AddPtrOp, rw: PatternRewriter):
    if is_const(op.offset, 0):
        rw.replace(op, [], [op.ptr])
        return
    inner = op.ptr.owner
    if isinstance(inner, AddPtrOp) and _offsets_combinable(inner.offset, op.offset):
        total = A.AddIOp(inner.offset, op.offset)
        total.location = op.location
        rw.replace(op, [total, AddPtrOp(inner.ptr, total.result)])


def _same_mask(mask, cond) -> bool:
    return mask == cond or (isinstance(mask.owner, SplatOp) and mask.owner.src == cond)


@COMBINE.on(A.SelectOp)
def combine_select_masked_load(op: A.SelectOp, rw: PatternRewriter):
    load = op.true_value.owner
    if (isinstance(load, LoadOp) and load.mask is not None and op.true_value.has_one_use()
            and _same_mask(load.mask, op.cond) and not load.isVolatile.value.data):
        rw.replace(op, load_like(load, mask=load.mask, other=op.false_value))
        rw.erase(load)


@COMBINE.on(A.AddIOp, A.AddFOp)
def combine_dot_add(op, rw: PatternRewriter):
    for dot_v, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        dot = dot_v.owner
        if (isinstance(dot, DotOp) and dot_v.has_one_use() and is_const(dot.c, 0)
                and dot.maxNumImpreciseAcc.value.data == 0 and other.type == dot.d.type):
            new = DotOp(dot.a, dot.b, other, dot.input_precision)
            new.attributes.update(dot.attributes)
            new.location = dot.location
            rw.replace(op, new)
            rw.erase(dot)
            return


@COMBINE.on(LoadOp)
def combine_load_mask(op: LoadOp, rw: PatternRewriter):
    if op.mask is None:
        return
    m = const_value(op.mask)
    if m == 1:
        rw.replace(op, load_like(op))
    elif m == 0 and op.other is not None and not op.isVolatile.value.data:
        rw.replace(op, [], [op.other])


@COMBINE.on(StoreOp)
def combine_store_mask(op: StoreOp, rw: PatternRewriter):
    if op.mask is None:
        return
    m = const_value(op.mask)
    if m == 1:
        rw.replace(op, store_like(op))
    elif m == 0:
        rw.erase(op)


def _expanded(v, axis: int):
    """``x`` when ``v`` is ``broadcast(expand_dims(x, axis))`` of a 2-d ``x``, else None."""
    b = v.owner
    if not isinstance(b, BroadcastOp) or not isinstance(b.src.owner, ExpandDimsOp):
        return None
    e = b.src.owner
    return e.src if e.axis.value.data == axis and len(e.src.type.get_shape()) == 2 else None


@COMBINE.on(ReduceOp)
def combine_broadcast_mul_reduce(op: ReduceOp, rw: PatternRewriter):
    block = op.combineOp.blocks.first
    body = list(block.ops)
    if len(op.operands) != 1 or op.axis.value.data != 1 or len(body) != 2 or not isinstance(body[0], A.AddFOp):
        return
    if set(body[0].operands) != set(block.args) or not isinstance(op.results[0].type, TensorType):
        return
    mul = op.operands[0].owner
    if not isinstance(mul, A.MulFOp) or not isinstance(op.results[0].type.element_type, Float32Type):
        return
    a, b = _expanded(mul.lhs, 2), _expanded(mul.rhs, 0)
    if a is None or b is None:
        return
    (m, k), (k2, n) = a.type.get_shape(), b.type.get_shape()
    if k != k2 or min(m, n, k) < 16:
        return
    zero = make_const(Float32Type(), 0.0, op)
    acc = SplatOp(zero.result, op.results[0].type)
    acc.location = op.location
    dot = DotOp(a, b, acc.result, "tf32")
    dot.location = op.location
    rw.replace(op, [zero, acc, dot])


_SWAP = {"slt": "sgt", "sgt": "slt", "sle": "sge", "sge": "sle", "ult": "ugt", "ugt": "ult",
         "ule": "uge", "uge": "ule", "eq": "eq", "ne": "ne"}


@COMBINE.on(A.CmpIOp)
def combine_cmpi_range(op: A.CmpIOp, rw: PatternRewriter):
    pred, rng, c = op.predicate_name, op.lhs.owner, const_value(op.rhs)
    if not isinstance(rng, MakeRangeOp):
        pred, rng, c = _SWAP[pred], op.rhs.owner, const_value(op.lhs)
    if not isinstance(rng, MakeRangeOp) or c is None:
        return
    lo, hi, w = rng.start.value.data, rng.end.value.data - 1, int_width(op.lhs.type)
    if pred in ("eq", "ne"):
        if lo <= c <= hi:
            return
        answers = {pred == "ne"}
    else:  # order predicates are monotonic over the (non-negative) range, so the ends decide
        answers = {cmpi_eval(pred, lo, c, w), cmpi_eval(pred, hi, c, w)}
    if len(answers) == 1:
        rw.replace(op, make_const(op.result.type, int(answers.pop()), op))


class Combine:
    name = "combine"

    def run(self, module: ModuleOp) -> None:
        apply_tables(module, COMBINE)
