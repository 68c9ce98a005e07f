"""Compares of an index tensor against few distinct values, as compares against immediates.

A causal mask ``offs_m[:, None] >= start_n + offs_n[None, :]`` in a dot's accumulator layout: a
thread holds two rows and 32 columns of a 128x128 tile, and each column is ``thread_base + C_r``
with ``C_r`` known when compiling (the register's offset in the layout).  Lowered register by
register, the 32 column values are live at once (the assembler computes them early, in the shadow
of the ``wgmma`` that makes the scores), next to the 64 accumulator registers: 169 registers for
the d64 128x128 attention kernel where two blocks an SM need 128.

Here the compare is rewritten exactly, wrap-around included.  With the column side
``A_r = wrap32(common + C_r)`` (``C_r`` shifted to ``[0, M)``) and ``x`` one of the few distinct
values of the other side, in exact integers ``x >= A_r`` holds iff

    C_r <= d  or  (T <= C_r and C_r <= d + 2**32)

where ``d = x - common`` and ``T = 2**31 - common`` (``C_r >= T`` are the registers whose column
wrapped past ``INT_MAX``); ``x <= A_r`` likewise, and ``>``, ``<`` are their negations.  ``d``
(saturated to i32) and the bound standing for ``d + 2**32`` are computed once per distinct ``x``,
``2**31 - 1 - common`` (saturated) once per thread; each register then compares them against its
``C_r``, an immediate.  Where the value ranges prove that no column wraps, only ``C_r <= d`` is
left: one compare a register.  ``==`` and ``!=`` need no range: ``x == A_r`` iff ``wrap32(x - common) == C_r``.

Only signed and equality predicates of i32 tensors, in a layout whose coordinates are sums of
their bits (``LinearLayout.is_additive``), where the index side is used by compares alone and its
registers take at least 8 distinct offsets, the other side at most one distinct value in 8
registers.  The analysis (:func:`affine_of`) follows ``make_range``, ``splat``, constants,
``expand_dims``, ``broadcast``, ``convert_layout``, ``+``, ``-`` and ``*`` by a constant."""
from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import SSAValue

from ...ttir.passes._fold import const_value, wrap
from ...ttir.types import element_type
from ..target_info import intrinsic

I32 = ir.IntType(32)
_MAX_OFFSETS = 1 << 24     # the offsets' span: immediates, and far from the i32 limits
_MIN_DISTINCT = 8          # distinct column offsets a thread holds before the rewrite pays
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1


@dataclass(frozen=True)
class Affine:
    """``sum(c * s for s, c in scalars) + sum(dims[d] * coordinate[d]) + const`` (mod 2**32):
    ``scalars`` are i32 scalar SSA values, ``dims`` one coefficient per tensor dimension."""

    scalars: tuple
    dims: tuple
    const: int

    def __add__(self, other: "Affine") -> "Affine":
        merged = dict(self.scalars)
        for s, c in other.scalars:
            merged[s] = merged.get(s, 0) + c
        return Affine(tuple((s, c) for s, c in merged.items() if c),
                      tuple(a + b for a, b in zip(self.dims, other.dims)), self.const + other.const)

    def scale(self, k: int) -> "Affine":
        return Affine(tuple((s, c * k) for s, c in self.scalars), tuple(d * k for d in self.dims), self.const * k)

    @property
    def is_constant(self) -> bool:
        return not self.scalars and not any(self.dims)


def _i32(v: SSAValue) -> bool:
    e = element_type(v.type)
    return isinstance(e, IntegerType) and e.width.data == 32


def affine_of(v: SSAValue, memo: dict) -> Affine | None:
    """``v`` (an i32 tensor) as an :class:`Affine` of its coordinates, or None."""
    if v in memo:
        return memo[v]
    memo[v] = None
    memo[v] = _affine(v, memo) if isinstance(v.type, TensorType) and _i32(v) else None
    return memo[v]


def _affine(v: SSAValue, memo: dict) -> Affine | None:
    op = v.owner
    if not hasattr(op, "name"):
        return None
    rank = len(v.type.get_shape())
    zeros = (0,) * rank
    name = op.name
    k = const_value(v)  # a splat constant, or a splat of a scalar one
    if k is not None:
        return Affine((), zeros, k)
    if name == "tt.make_range":
        return Affine((), (1,), op.start.value.data)
    if name == "tt.splat":
        s = op.operands[0]
        return Affine(((s, 1),), zeros, 0) if _i32(s) else None
    if name == "tt.expand_dims":
        a = affine_of(op.operands[0], memo)
        if a is None:
            return None
        axis = op.axis.value.data
        return Affine(a.scalars, a.dims[:axis] + (0,) + a.dims[axis:], a.const)
    if name in ("tt.broadcast", "ttg.convert_layout"):
        a = affine_of(op.operands[0], memo)
        return a if a is not None and len(a.dims) == rank else None
    if name in ("arith.addi", "arith.subi", "arith.muli"):
        a, b = (affine_of(x, memo) for x in op.operands)
        if a is None or b is None:
            return None
        if name == "arith.addi":
            return a + b
        if name == "arith.subi":
            return a + b.scale(-1)
        if b.is_constant:
            return a.scale(b.const)
        if a.is_constant:
            return b.scale(a.const)
    return None


# --- lowering ---------------------------------------------------------------------------------------
_FLIP = {"sge": "sle", "sgt": "slt", "sle": "sge", "slt": "sgt", "eq": "eq", "ne": "ne"}


def lower_affine_cmpi(fl, op, pred: str) -> bool:
    """Lower ``op`` (``arith.cmpi`` of predicate ``pred``) as the module docstring says and return
    True, or return False (nothing emitted) where it does not apply."""
    if pred not in _FLIP or not isinstance(op.results[0].type, TensorType) or not _i32(op.operands[0]):
        return False
    if any(v in fl.layout_override for v in (*op.operands, op.results[0])):
        return False
    info = fl.layout(op.operands[0].type)
    if not info.ll.is_additive:
        return False
    memo = fl.affine_memo
    n = info.ll.num_registers
    for side in (1, 0):
        index, other = op.operands[side], op.operands[1 - side]
        aff = affine_of(index, memo)
        if aff is None or not any(aff.dims) or any(u.operation.name != "arith.cmpi" for u in index.uses):
            continue
        offsets = [sum(int(k) * int(o) for k, o in zip(aff.dims, off)) for off in info.reg_offsets]
        xs = fl.get(other)
        xs = xs if isinstance(xs, list) else [xs] * n
        distinct = {id(x): x for x in xs}
        low = min(offsets)
        span = max(offsets) - low + 1
        if len(set(offsets)) < _MIN_DISTINCT or len(distinct) > max(1, n // 8) or span > _MAX_OFFSETS:
            continue
        p = pred if side == 1 else _FLIP[pred]   # now ``x p A``
        fl.set(op.results[0], _emit(fl, aff, info, low, [o - low for o in offsets], span, xs, p))
        return True
    return False


def _common(fl, aff: Affine, info, shift: int) -> tuple[ir.Value, tuple[int, int] | None]:
    """This thread's ``common + shift`` (i32, wrapping) and its exact range (None: unbounded)."""
    b = fl.builder
    base = fl.thread_coords(info)
    ranges = fl.lowering.value_ranges
    acc, lo, hi = None, aff.const + shift, aff.const + shift
    terms = [(fl.get(s), c, ranges.of(s) if ranges is not None else None) for s, c in aff.scalars]
    for d, c in enumerate(aff.dims):
        if c:
            top = sum(int(vec[d]) for vec in (*info.ll.lane, *info.ll.warp))
            terms.append((base[d], c, (0, top)))
    for value, c, r in terms:
        t = value if c == 1 else b.neg(value) if c == -1 else b.mul(value, ir.Constant(I32, wrap(c, 32)))
        acc = t if acc is None else b.add(acc, t)
        if r is None or lo is None:
            lo = hi = None
        else:
            lo, hi = lo + min(c * r[0], c * r[1]), hi + max(c * r[0], c * r[1])
    k = wrap(aff.const + shift, 32)
    if acc is None:
        acc = ir.Constant(I32, k)
    elif k:
        acc = b.add(acc, ir.Constant(I32, k))
    bounded = lo is not None and _INT_MIN <= lo and hi <= _INT_MAX
    return acc, (lo, hi) if bounded else None


def _sub_sat(b, x: ir.Value, y: ir.Value) -> ir.Value:
    """``x - y`` saturated to the i32 range (``llvm.ssub.sat``)."""
    return intrinsic(b, "llvm.ssub.sat.i32", I32, [x, y])


def _emit(fl, aff, info, low, offsets, span, xs, pred) -> list[ir.Value]:
    common, rng = _common(fl, aff, info, low)
    wraps = rng is None or rng[1] + span - 1 > _INT_MAX
    return emit_compares(fl.builder, pred, xs, common, offsets, span, wraps)


def emit_compares(b, pred: str, xs: list, common: ir.Value, offsets: list[int], span: int,
                  wraps: bool) -> list[ir.Value]:
    """Per register ``r``: i1 ``xs[r] pred wrap32(common + offsets[r])``, offsets in ``[0, span)``;
    ``wraps=False`` promises that ``common + span - 1`` does not pass INT_MAX."""
    distinct = {id(x): x for x in xs}
    imms = [ir.Constant(I32, c) for c in offsets]
    if pred in ("eq", "ne"):
        diff = {k: b.sub(x, common) for k, x in distinct.items()}
        sym = "==" if pred == "eq" else "!="
        return [b.icmp_signed(sym, diff[id(x)], imm) for x, imm in zip(xs, imms)]
    # Everything stays in i32: ``d = x - common`` saturated compares with an offset in [0, span)
    # as the exact difference does; ``h`` stands for ``d + 2**32`` (the wrapped registers' bound:
    # the exact wrapped difference where that is below ``span``, else INT_MAX); a register wrapped
    # iff ``INT_MAX - common`` (saturated) is below its offset.
    sat, hwrap = {}, {}
    int_min, int_max = ir.Constant(I32, _INT_MIN), ir.Constant(I32, _INT_MAX)
    for k, x in distinct.items():
        sat[k] = _sub_sat(b, x, common)
        if wraps:
            w = b.sub(x, common)
            low_w = b.and_(b.icmp_signed("==", sat[k], int_min), b.icmp_unsigned("<", w, ir.Constant(I32, span)))
            hwrap[k] = b.select(low_w, w, int_max)
    room = _sub_sat(b, int_max, common) if wraps else None
    out = []
    ge = pred in ("sge", "slt")   # x >= A (or its negation) rather than x <= A
    for x, imm in zip(xs, imms):
        d = sat[id(x)]
        if ge:      # C <= d  or  (wrapped and C <= d + 2**32)
            p = b.icmp_signed(">=", d, imm)
            if wraps:
                p = b.or_(p, b.and_(b.icmp_signed("<", room, imm), b.icmp_signed(">=", hwrap[id(x)], imm)))
        else:       # C >= d  and not (wrapped and C < d + 2**32)
            p = b.icmp_signed("<=", d, imm)
            if wraps:
                p = b.and_(p, b.not_(b.and_(b.icmp_signed("<", room, imm), b.icmp_signed(">", hwrap[id(x)], imm))))
        out.append(b.not_(p) if pred in ("slt", "sgt") else p)
    return out
