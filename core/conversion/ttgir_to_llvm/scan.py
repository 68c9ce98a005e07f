"""``tt.scan``: each operand goes row-major through shared memory; after one barrier every thread
folds, for each element it holds, the run along the axis up to that element (from the far end for
``reverse``) in a loop, combining strictly in sequence order.

This is the simple, layout-independent algorithm (O(axis length) per element); the faster
register / shuffle / warp-partials scan is future work."""
from __future__ import annotations

import llvmlite.ir as ir

from ...ttgir.scratch import round8
from .lowering import FunctionLowering, lowers
from .reduce import combine
from .shape_ops import linear_index, write_tensor
from .types import I32, const, elem_bytes, shared_load


@lowers("tt.scan")
def _scan(fl: FunctionLowering, op) -> None:
    b = fl.builder
    axis = op.axis.value.data
    reverse = bool(op.reverse.value.data)
    t = op.operands[0].type
    shape = t.get_shape()
    length = shape[axis]
    stride = 1
    for s in shape[axis + 1:]:
        stride *= s
    block = op.combineOp.blocks.first
    bases, off = [], fl.alloc_offset(op)
    for v in op.operands:
        base = fl.shared_ptr(off)
        bases.append(base)
        write_tensor(fl, base, fl.get(v), v.type, lambda c: linear_index(fl, c, shape))
        n = 1
        for s in shape:
            n *= s
        off += round8(n * elem_bytes(fl.ty(v.type)))
    fl.target.barrier(b)
    tys = [fl.ty(v.type) for v in op.operands]
    outs: list[list] = [[] for _ in op.operands]
    step = -1 if reverse else 1
    for coords in fl.coords(t):
        row = list(coords)
        row[axis] = const(I32, 0)
        row_base = linear_index(fl, row, shape)
        first = length - 1 if reverse else 0

        def load_at(i):
            idx = b.add(row_base, b.mul(i, const(I32, stride)))
            return [shared_load(fl, base, idx, ty) for base, ty in zip(bases, tys)]

        init = load_at(const(I32, first))
        pre = b.block
        header = fl.fn.append_basic_block("scan.header")
        body = fl.fn.append_basic_block("scan.body")
        exit_ = fl.fn.append_basic_block("scan.exit")
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I32)
        i.add_incoming(const(I32, first + step), pre)
        accs = [b.phi(ty) for ty in tys]
        for p, x in zip(accs, init):
            p.add_incoming(x, pre)
        go = b.icmp_signed(">=" if reverse else "<=", i, coords[axis])
        b.cbranch(go, body, exit_)
        b.position_at_end(body)
        new = combine(fl, block, list(accs), load_at(i))
        latch = b.block
        i.add_incoming(b.add(i, const(I32, step)), latch)
        for p, x in zip(accs, new):
            p.add_incoming(x, latch)
        b.branch(header)
        b.position_at_end(exit_)
        for k, p in enumerate(accs):
            outs[k].append(p)
    for res, vals in zip(op.results, outs):
        fl.set(res, vals)


__all__ = ["ir"]
