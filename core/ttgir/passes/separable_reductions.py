"""``separable-reductions``: a ``tt.reduce`` whose layout mixes the reduced axis with another
dimension is moved to a blocked layout.

The reduction lowering folds registers, then lanes (butterfly shuffles), then warps (shared
memory) along the axis, one bit at a time; that needs every register, lane and warp basis of the
operand's layout to move either along the axis or across it, never both (a ``#ttg.linear`` swizzle
can move both).  Such a reduction gets its operands converted to the default blocked layout and
its results converted back to the slices of the original layout, so the IR keeps its types.
Layouts the compiler builds (blocked, slice, mma, mfma, their dot operands) are always separable:
for them the pass does nothing."""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp, TensorType

from ..dialect import NUM_WARPS, THREADS_PER_WARP, module_int
from ..encodings import DistributedEncoding, SliceEncodingAttr
from ..layouts import default_blocked_encoding, linear_layout
from ..linear_layout import LinearLayout
from ..ops import ConvertLayoutOp
from ._util import convert_operand, encoding, set_type, with_encoding


def separable(ll: LinearLayout, axis: int) -> bool:
    """Every basis moves along ``axis`` only, across it only, or not at all."""
    for v in (*ll.register, *ll.lane, *ll.warp):
        if v[axis] and any(x for d, x in enumerate(v) if d != axis):
            return False
    return True


class SeparableReductions:
    name = "separable-reductions"

    def run(self, module: ModuleOp) -> None:
        for op in list(module.walk()):
            if op.name != "tt.reduce" or not isinstance(op.operands[0].type, TensorType):
                continue
            t = op.operands[0].type
            enc, axis = encoding(t), op.axis.value.data
            if not isinstance(enc, DistributedEncoding) or separable(linear_layout(enc, t.get_shape()), axis):
                continue
            blocked = default_blocked_encoding(t.get_shape(), module_int(module, NUM_WARPS),
                                               module_int(module, THREADS_PER_WARP))
            for i, v in enumerate(op.operands):
                convert_operand(op, i, with_encoding(v.type, blocked))
            for res in op.results:
                if not isinstance(res.type, TensorType):
                    continue
                original = res.type
                set_type(res, with_encoding(original, SliceEncodingAttr(axis, blocked)))
                back = ConvertLayoutOp(res, original)
                op.parent_block().insert_op_after(back, op)
                res.replace_uses_with_if(back.result, lambda use, b=back: use.operation is not b)
