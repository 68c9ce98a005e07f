"""Shape ops: splat, broadcast, expand_dims, reshape, trans, join, split, cat.

Each is a coordinate map between the source and result tensors.  When the map takes the result
layout's lane and warp bases onto the source layout's (the same threads hold corresponding
elements) it is a renaming of registers; otherwise the tensor goes through shared memory, with the
scratch size declared to the allocation pass."""
from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir
import numpy as np
from xdsl.dialects.builtin import TensorType

from ...ttgir.passes.allocate_shared_memory import register_scratch_size
from .lowering import FunctionLowering, LoweringError, lowers
from .types import I32, const

Coord = tuple[int, ...]


def linear_index(fl: FunctionLowering, coords: list[ir.Value], shape) -> ir.Value:
    """Row-major linear index (i32) of ``coords``."""
    b = fl.builder
    idx, stride = None, 1
    for d in reversed(range(len(shape))):
        term = coords[d] if stride == 1 else b.mul(coords[d], const(I32, stride))
        idx = term if idx is None else b.add(idx, term)
        stride *= shape[d]
    return idx if idx is not None else const(I32, 0)


# --- coordinate maps: result coordinate -> (source coordinate, which source) ----------------------
def _coord_map(op) -> Callable[[Coord], tuple[Coord, int]]:
    name = op.name
    dst_shape = op.results[0].type.get_shape()
    src_shape = op.operands[0].type.get_shape() if isinstance(op.operands[0].type, TensorType) else ()
    if name == "tt.broadcast":
        return lambda c: (tuple(0 if s == 1 and d != 1 else x for x, s, d in zip(c, src_shape, dst_shape)), 0)
    if name == "tt.expand_dims":
        ax = op.axis.value.data
        return lambda c: (c[:ax] + c[ax + 1:], 0)
    if name == "tt.trans":
        order = op.order.get_values()
        inv = [order.index(i) for i in range(len(order))]
        return lambda c: (tuple(c[inv[i]] for i in range(len(order))), 0)
    if name == "tt.reshape":
        def f(c):
            lin = 0
            for x, s in zip(c, dst_shape):
                lin = lin * s + x
            out = []
            for s in reversed(src_shape):
                out.append(lin % s)
                lin //= s
            return tuple(reversed(out)), 0
        return f
    if name == "tt.join":
        return lambda c: (c[:-1], c[-1])
    if name == "tt.split":
        raise AssertionError("split has two results; see _split")
    if name == "tt.cat":
        n0 = src_shape[0]
        return lambda c: ((c[0] % n0,) + c[1:], c[0] // n0)
    raise LoweringError(f"no coordinate map for {name}")


def register_plan(op, f=None, src_index: int = 0, result_index: int = 0):
    """``[result register] -> (source operand, source register)`` when the result's elements already
    live in the same threads as the sources'; None when shared memory is needed."""
    from ...ttgir.layouts import linear_layout
    if op.name == "tt.reshape" and "efficient_layout" in op.properties:
        return _renamed(op)
    f = f or _coord_map(op)
    rt = op.results[result_index].type
    ll_dst = linear_layout(rt.encoding, rt.get_shape())
    srcs = [v.type for v in op.operands]
    lls = [linear_layout(t.encoding, t.get_shape()) for t in srcs]
    # thread parts must agree: result lane/warp bases map onto the source's
    for kind in ("lane", "warp"):
        for bd, bs in zip(getattr(ll_dst, kind), getattr(lls[0], kind)):
            mapped, which = f(bd)
            if which != 0 and any(bd):
                return None
            if tuple(mapped) != tuple(bs):
                return None
        for other in lls[1:]:
            if getattr(other, kind) != getattr(lls[0], kind):
                return None
    index = [{tuple(int(x) for x in off): r for r, off in reversed(list(enumerate(ll.reg_offsets())))}
             for ll in lls]
    plan = []
    for off in ll_dst.reg_offsets():
        c, which = f(tuple(int(x) for x in off))
        r = index[which].get(tuple(c))
        if r is None:
            return None
        plan.append((which, r))
    return plan


def _renamed(op) -> list:
    """``tt.reshape allow_reorder efficient_layout``: its layout was chosen so that register ``r``
    of the source is register ``r`` of the result (the elements may move: the reshape allows it)."""
    from ...ttgir.layouts import total_elems_per_thread
    src_t, dst_t = op.operands[0].type, op.results[0].type
    n = total_elems_per_thread(src_t.encoding, src_t.get_shape())
    if total_elems_per_thread(dst_t.encoding, dst_t.get_shape()) != n:
        raise LoweringError(f"an efficient_layout reshape must keep each thread's registers: {src_t} -> {dst_t}")
    return [(0, r) for r in range(n)]


def _scratch(op) -> int:
    from ...ttgir.passes.allocate_shared_memory import _bytes
    try:
        if op.name == "tt.split":
            ok = _split_plans(op) is not None
        else:
            ok = register_plan(op) is not None
    except (NotImplementedError, ValueError, TypeError, AttributeError):
        ok = False
    return 0 if ok else _bytes(op.results[0].type) * (2 if op.name == "tt.split" else 1)


for _name in ("tt.broadcast", "tt.expand_dims", "tt.trans", "tt.reshape", "tt.join", "tt.cat", "tt.split"):
    register_scratch_size(_name, _scratch)


def write_tensor(fl: FunctionLowering, base_ptr, regs: list, t, index_of) -> None:
    """Store each element this thread owns at ``index_of(coords)`` (an i32 element index)."""
    from .convert_layout import shared_store
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
    from .convert_layout import shared_load
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
    f = _coord_map(op)
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


def _split_maps(op):
    return [lambda c, k=k: (c + (k,), 0) for k in (0, 1)]


def _split_plans(op):
    plans = [register_plan(op, f, 0, i) for i, f in enumerate(_split_maps(op))]
    return None if any(p is None for p in plans) else plans


@lowers("tt.split")
def _split(fl: FunctionLowering, op) -> None:
    src = fl.get(op.operands[0])
    plans = _split_plans(op)
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
