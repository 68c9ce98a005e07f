"""``tt.gather``: ``result[.., i, ..] = src[.., indices[.., i, ..], ..]`` along ``axis``.

The source goes through the op's scratch buffer (its size: ``allocate-shared-memory``'s
default for ``tt.gather``, the source's bytes): every thread stores the source elements it owns at
their row-major position, a barrier, then each thread loads, for every result register, the element
its index selects (the result has the indices' layout, so index register ``r`` belongs to result
register ``r``).  ``membar`` orders the buffer against the ops before and after.

The index is read as an i32 (wider indices truncated, narrower ones zero-extended) and taken modulo
the axis' extent, so an out-of-range index (whose value the language leaves unspecified) reads an
element of the source, never memory outside the buffer; the interpreter does the same."""
from __future__ import annotations

import llvmlite.ir as ir

from .lowering import FunctionLowering, LoweringError, lowers
from .shape_ops import linear_index, write_tensor
from .types import I32, const, shared_load


def index_to_i32(fl: FunctionLowering, v: ir.Value, extent: int) -> ir.Value:
    """``v`` (any integer width) as an i32 position in ``[0, extent)``."""
    b = fl.builder
    w = v.type.width
    if w > 32:
        v = b.trunc(v, I32)
    elif w < 32:
        v = b.zext(v, I32)
    if extent & (extent - 1) == 0:
        return b.and_(v, const(I32, extent - 1))
    return b.urem(v, const(I32, extent))


@lowers("tt.gather")
def _gather(fl: FunctionLowering, op) -> None:
    src_t, idx_t, res_t = op.src.type, op.indices.type, op.result.type
    if fl.layout(idx_t).ll != fl.layout(res_t).ll:
        raise LoweringError(f"tt.gather: the result's layout must be the indices' ({idx_t} -> {res_t})")
    axis = op.axis.value.data
    shape = src_t.get_shape()
    extent = shape[axis]
    base_ptr = fl.shared_ptr(fl.alloc_offset(op))
    write_tensor(fl, base_ptr, fl.get(op.src), src_t, lambda sc: linear_index(fl, sc, shape))
    fl.target.barrier(fl.builder)
    ety = fl.ty(res_t.element_type)
    idx = fl.get(op.indices)
    out = []
    for r, row in enumerate(fl.coords(res_t)):
        at = list(row)
        at[axis] = index_to_i32(fl, idx[r], extent)
        out.append(shared_load(fl, base_ptr, linear_index(fl, at, shape), ety))
    fl.set(op.result, out)
