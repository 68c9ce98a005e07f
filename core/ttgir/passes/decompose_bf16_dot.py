"""``decompose-bf16-dot``: an fp32 ``tt.dot`` with ``input_precision`` ``bf16x3`` or ``bf16x6`` as
a sum of bf16 dots accumulating in fp32, so that bf16 tensor cores give close to fp32 accuracy.

Each fp32 operand ``x`` is split into bf16 pieces, each the rounding (to nearest even) of what the
pieces before it left over: ``hi = bf16(x)``, ``mid = bf16(x - hi)``, ``lo = bf16(x - hi - mid)``
(every subtraction is exact in fp32).  With ``a`` and ``b`` split so, the products are summed
smallest first into a zero fp32 accumulator, one bf16 dot each:

* ``bf16x3`` (``hi`` and ``mid`` only): ``mid*hi``, ``hi*mid``;
* ``bf16x6``: ``mid*mid``, ``lo*hi``, ``hi*lo``, ``mid*hi``, ``hi*mid``;

then NaNs in that partial sum become 0 (an infinite operand has ``hi = inf`` and a NaN remainder,
``inf - inf``; its true contribution comes from the ``hi*hi`` term alone), then ``hi*hi`` is added
and last the original accumulator.  A product of two bf16 numbers is exact in fp32, so each term
is what the tensor cores compute exactly; the terms left out (``lo*lo``, ``mid*lo``, ... and for
``bf16x3`` everything below ``mid*hi``) are below fp32's (``bf16x6``) or about 2^-16 of the
result's (``bf16x3``) precision.

The pass runs on TTIR, before ``convert-to-ttgir``; the bf16 dots it makes meet the backend's
accelerate-matmul like any other.  The interpreter computes the same sum in numpy.
"""
from __future__ import annotations

from xdsl.dialects.builtin import BFloat16Type, DenseIntOrFPElementsAttr, Float32Type, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from ...ttir import arith
from ...ttir.ops import DotOp

#: how many bf16 pieces each operand is split into, and the products (piece of a, piece of b)
#: summed before ``hi*hi``, in the order they are added
TERMS = {
    "bf16x3": (2, ((1, 0), (0, 1))),
    "bf16x6": (3, ((1, 1), (2, 0), (0, 2), (1, 0), (0, 1))),
}


class _Rewriter:
    def __init__(self, op: DotOp):
        self.op = op

    def add(self, new: Operation) -> SSAValue:
        new.location = self.op.location
        self.op.parent_block().insert_op_before(new, self.op)
        return new.results[0]

    def split(self, x: SSAValue, pieces: int) -> list[SSAValue]:
        shape = list(x.type.get_shape())
        out = []
        for i in range(pieces):
            piece = self.add(arith.TruncFOp(x, TensorType(BFloat16Type(), shape)))
            out.append(piece)
            if i != pieces - 1:
                x = self.add(arith.SubFOp(x, self.add(arith.ExtFOp(piece, TensorType(Float32Type(), shape)))))
        return out

    def run(self) -> None:
        op = self.op
        pieces, small = TERMS[op.input_precision]
        a, b = self.split(op.a, pieces), self.split(op.b, pieces)
        acc_t = op.c.type
        zero = self.add(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(acc_t, [0.0])))
        acc = zero
        for i, j in small:
            acc = self.add(DotOp(a[i], b[j], acc, "ieee"))
        nan = self.add(arith.CmpFOp(acc, acc, "uno"))
        acc = self.add(arith.SelectOp(nan, zero, acc))
        acc = self.add(DotOp(a[0], b[0], acc, "ieee"))
        d = self.add(arith.AddFOp(acc, op.c))
        op.d.replace_all_uses_with(d)
        op.detach()
        op.erase()


def _applies(op: Operation) -> bool:
    return (isinstance(op, DotOp) and op.input_precision in TERMS
            and isinstance(op.a.type.element_type, Float32Type) and isinstance(op.b.type.element_type, Float32Type)
            and isinstance(op.c.type.element_type, Float32Type))


class DecomposeBf16Dot:
    name = "decompose-bf16-dot"

    def run(self, module: ModuleOp) -> None:
        for op in [o for o in module.walk() if _applies(o)]:
            _Rewriter(op).run()


def decompose_bf16_dot(module: ModuleOp) -> ModuleOp:
    DecomposeBf16Dot().run(module)
    return module


__all__ = ["DecomposeBf16Dot", "TERMS", "decompose_bf16_dot"]
