"""``decompose-scaled-dot``: ``tt.dot_scaled`` as an upcast, a scale and an ordinary ``tt.dot``,
for backends without native microscaled matrix instructions (Triton's ``DecomposeScaledBlocked``).

Each operand is brought to the compute type (f16 when either format is fp16, else bf16):
``e2m1`` bytes through two ``ttg.e2m1_to_fp`` (low nibble first, then high) joined and reshaped
so each pair lands side by side along the packed axis; fp8 through ``tt.fp_to_fp``.  A scale goes
through ``ttg.e8m0_to_fp`` (NaN for 0xFF unless ``fastMath``), is repeated 32 times along K
(expand_dims, broadcast, reshape; the rhs scale, given as ``[N, K/32]``, is transposed first)
and multiplies the operand; a NaN scale makes its whole block NaN, as the format says.  Every
value involved is exact in the compute type while it stays in range, so the dot then sums exact
products.

The pass runs on TTIR, before ``convert-to-ttgir`` gives the new ops their layouts, and the dot it
makes then meets the backend's accelerate-matmul like any other.  That dot carries the unit
attribute :data:`FROM_DOT_SCALED` (its operands are computed in registers, not loaded).
"""
from __future__ import annotations

from xdsl.dialects.builtin import (BFloat16Type, DenseArrayBase, Float8E4M3FNType, Float8E5M2Type, Float16Type,
                                   IntegerAttr, ModuleOp, TensorType, UnitAttr, i32)
from xdsl.ir import Operation, SSAValue

from ...ttir import arith
from ...ttir.dot_scaled import MX_BLOCK, DotScaledOp
from ...ttir.ops import BitcastOp, BroadcastOp, DotOp, ExpandDimsOp, FpToFpOp, JoinOp, ReshapeOp, TransOp
from ..mx_ops import E2M1ToFpOp, E8M0ToFpOp

#: the unit attribute on the ``tt.dot`` a ``tt.dot_scaled`` became
FROM_DOT_SCALED = "tritium.from_dot_scaled"

_FP8 = {"e4m3": Float8E4M3FNType, "e5m2": Float8E5M2Type}


def _tensor(elt, shape) -> TensorType:
    return TensorType(elt, list(shape))


def _swap_last(rank: int) -> list[int]:
    return [*range(rank - 2), rank - 1, rank - 2]


class _Rewriter:
    """Builds the replacement before ``op``, every new op at ``op``'s location."""

    def __init__(self, op: DotScaledOp):
        self.op = op
        fmts = (op.a_format, op.b_format)
        self.ct = Float16Type() if "fp16" in fmts else BFloat16Type()

    def add(self, new: Operation) -> SSAValue:
        new.location = self.op.location
        self.op.parent_block().insert_op_before(new, self.op)
        return new.results[0]

    def upcast(self, v: SSAValue, fmt: str, pack_axis: int) -> SSAValue:
        t = v.type
        shape = list(t.get_shape())
        if fmt == "e2m1":
            first = self.add(E2M1ToFpOp(v, _tensor(self.ct, shape), False))  # the low nibble
            second = self.add(E2M1ToFpOp(v, _tensor(self.ct, shape), True))
            pair = self.add(JoinOp(first, second, _tensor(self.ct, [*shape, 2])))
            rank = len(shape)
            if pack_axis != rank - 1:  # [.., K/2, N, 2] -> [.., K/2, 2, N]
                order = [*range(pack_axis + 1), rank, *range(pack_axis + 1, rank)]
                pair = self.add(TransOp(pair, _tensor(self.ct, [shape[i] if i < rank else 2 for i in order]),
                                        order=DenseArrayBase.from_list(i32, order)))
            shape[pack_axis] *= 2
            return self.add(ReshapeOp(pair, _tensor(self.ct, shape)))
        if fmt in _FP8 and not isinstance(t.element_type, _FP8[fmt]):  # i8 bits (TTIR text may say so)
            v = self.add(BitcastOp(v, _tensor(_FP8[fmt](), shape)))
        if v.type.element_type == self.ct:
            return v
        return self.add(FpToFpOp(v, _tensor(self.ct, shape), "rtne" if fmt == "bf16" else None))

    def scaled(self, v: SSAValue, scale: SSAValue | None, k_axis: int) -> SSAValue:
        if scale is None:
            return v
        rank = len(v.type.get_shape())
        s = self.add(E8M0ToFpOp(scale, _tensor(self.ct, scale.type.get_shape()), self.op.fast_math))
        shape = list(s.type.get_shape())  # [.., rows, K/32]
        if k_axis == rank - 2:  # the rhs: [.., N, K/32] -> [.., K/32, N]
            shape = [*shape[:-2], shape[-1], shape[-2]]
            s = self.add(TransOp(s, _tensor(self.ct, shape), order=DenseArrayBase.from_list(i32, _swap_last(rank))))
        expanded = shape[:k_axis + 1] + [1] + shape[k_axis + 1:]
        s = self.add(ExpandDimsOp(s, _tensor(self.ct, expanded), axis=IntegerAttr(k_axis + 1, i32)))
        expanded[k_axis + 1] = MX_BLOCK
        s = self.add(BroadcastOp(s, _tensor(self.ct, expanded)))
        s = self.add(ReshapeOp(s, _tensor(self.ct, v.type.get_shape())))
        return self.add(arith.MulFOp(v, s))

    def run(self) -> None:
        op = self.op
        rank = len(op.a.type.get_shape())
        lk, rk = op.k_packs
        a = self.upcast(op.a, op.a_format, rank - 1 if lk else rank - 2)
        b = self.upcast(op.b, op.b_format, rank - 2 if rk else rank - 1)
        a = self.scaled(a, op.a_scale, rank - 1)
        b = self.scaled(b, op.b_scale, rank - 2)
        dot = DotOp(a, b, op.c, "ieee")
        dot.attributes[FROM_DOT_SCALED] = UnitAttr()
        d = self.add(dot)
        op.d.replace_all_uses_with(d)
        op.detach()
        op.erase()


class DecomposeScaledDot:
    name = "decompose-scaled-dot"

    def run(self, module: ModuleOp) -> None:
        for op in [o for o in module.walk() if isinstance(o, DotScaledOp)]:
            _Rewriter(op).run()


def decompose_scaled_dot(module: ModuleOp) -> ModuleOp:
    DecomposeScaledDot().run(module)
    return module


__all__ = ["DecomposeScaledDot", "FROM_DOT_SCALED", "decompose_scaled_dot"]
