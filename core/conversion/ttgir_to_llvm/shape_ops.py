"""Shape ops: splat, broadcast, expand_dims, reshape, trans, join, split, cat.

Each is a coordinate map between the source and result tensors.  When the map takes the result
layout's lane and warp bases onto the source layout's (the same threads hold corresponding
elements) it is a renaming of registers; otherwise the tensor goes through shared memory, in the
scratch the allocation pass gave the op (both decided by :mod:`tritium.ttgir.register_plans`)."""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np
from xdsl.dialects.builtin import TensorType

from ...ttgir.register_plans import coord_map, register_plan, split_plans
from .lowering import FunctionLowering, lowers
from .types import I32, const, shared_load, shared_store


def linear_index(fl: FunctionLowering, coords: list[ir.Value], shape) -> ir.Value:
    """Row-major linear index (i32) of ``coords``."""
    b = fl.builder
    idx, stride = None, 1
    for d in reversed(range(len(shape))):
        term = coords[d] if stride == 1 else b.mul(coords[d], const(I32, stride))
        idx = term if idx is None else b.add(idx, term)
        stride *= shape[d]
    return idx if idx is not None else const(I32, 0)


def write_tensor(fl: FunctionLowering, base_ptr, regs: list, t, index_of) -> None:
    """Store each element this thread owns at ``index_of(coords)`` (an i32 element index)."""
    b = fl.builder
    info = fl.layout(t)
    owner = fl.dedup_pred(t)
    thread = fl.thread_coords(info)
    for r, off in enumerate(info.reg_offsets):
        if r & info.free["register"]:
            continue
        sc = [b.xor(thread[d], const(I32, int(o))) if o else thread[d] for d, o in enumerate(off)]
        shared_store(fl, base_ptr, index_of(sc), regs[r], owner)


def read_tensor(fl: FunctionLowering, base_ptr, t, index_of) -> list:
    ety = fl.ty(t)
    return [shared_load(fl, base_ptr, index_of(row), ety) for row in fl.coords(t)]


def through_shared(fl: FunctionLowering, op, srcs: list[tuple[list, object]], dst_type, f) -> list:
    """Write each source row-major (operand ``k`` after the first ``k``), barrier, and read each
    result element at the index of ``f(its coordinates)``.  The maps are bit maps on power-of-two
    shapes, so that index is a xor of per-coordinate-bit constants worked out here."""
    numel = int(np.prod(srcs[0][1].get_shape()))
    base_ptr = fl.shared_ptr(fl.alloc_offset(op))
    for which, (regs, t) in enumerate(srcs):
        shape = t.get_shape()
        write_tensor(fl, base_ptr, regs, t,
                     lambda sc, w=which, sh=shape: fl.builder.add(linear_index(fl, sc, sh), const(I32, w * numel)))
    fl.target.barrier(fl.builder)
    src_shape = srcs[0][1].get_shape()

    def fwd(c):
        sc, which = f(c)
        return which * numel + int(np.ravel_multi_index(sc, src_shape)) if src_shape else which

    dst_shape = dst_type.get_shape()
    return read_tensor(fl, base_ptr, dst_type, lambda row: bit_map_index(fl, row, dst_shape, fwd))


def bit_map_index(fl: FunctionLowering, coords: list, shape, fwd) -> ir.Value:
    """``fwd(coords)`` for a map that is linear over GF(2) on the coordinate bits."""
    b = fl.builder
    rank = len(shape)
    base = fwd(tuple(0 for _ in shape))
    acc = const(I32, base)
    for d, s in enumerate(shape):
        bit = 1
        while bit < s:
            contrib = fwd(tuple(bit if e == d else 0 for e in range(rank))) ^ base
            if contrib:
                on = b.and_(b.lshr(coords[d], const(I32, bit.bit_length() - 1)), const(I32, 1))
                acc = b.xor(acc, b.mul(on, const(I32, contrib)))
            bit *= 2
    return acc


def _remap(fl: FunctionLowering, op) -> None:
    srcs = [fl.get(v) for v in op.operands]
    plan = register_plan(op)
    if plan is not None:
        fl.set(op.results[0], [srcs[w][r] for w, r in plan])
        return
    f = coord_map(op)
    fl.set(op.results[0], through_shared(fl, op, [(s, v.type) for s, v in zip(srcs, op.operands)],
                                         op.results[0].type, f))


@lowers("tt.splat")
def _splat(fl: FunctionLowering, op) -> None:
    t = op.results[0].type
    fl.set(op.results[0], [fl.get(op.operands[0])] * fl.layout(t).ll.num_registers)


@lowers("tt.broadcast", "tt.expand_dims", "tt.trans", "tt.reshape", "tt.join", "tt.cat")
def _shape(fl: FunctionLowering, op) -> None:
    if not isinstance(op.operands[0].type, TensorType):
        _splat(fl, op)
        return
    _remap(fl, op)


@lowers("tt.split")
def _split(fl: FunctionLowering, op) -> None:
    src = fl.get(op.operands[0])
    plans = split_plans(op)
    if plans is not None:
        for res, plan in zip(op.results, plans):
            fl.set(res, [src[r] for _, r in plan])
        return
    # through shared memory: the source written row-major once, each half read back
    t = op.operands[0].type
    shape = t.get_shape()
    base_ptr = fl.shared_ptr(fl.alloc_offset(op))
    write_tensor(fl, base_ptr, src, t, lambda sc: linear_index(fl, sc, shape))
    fl.target.barrier(fl.builder)
    for k, res in enumerate(op.results):
        fl.set(res, read_tensor(fl, base_ptr, res.type, lambda row, k=k: linear_index(fl, row + [const(I32, k)], shape)))
