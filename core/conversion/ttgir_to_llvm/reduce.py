"""``tt.reduce``: within each thread's registers, then across lanes with xor-shuffles, then across
warps through shared memory.

The linear layout says which register / lane / warp bits move along the reduced axis; partial
results of the warps along the axis are written to the scratch buffer
(``[output element][warp along axis]`` per operand), and after one barrier every thread combines
them in warp order, so all threads end with the full result in the sliced layout."""
from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects.builtin import TensorType

from ...ttgir.scratch import axis_bits, round8
from .lowering import FunctionLowering, lowers
from .shape_ops import linear_index
from .types import I32, bits_of, const, elem_bytes, shared_load, shared_store


_TERMS = ("tt.reduce.return", "tt.scan.return")


def combine(fl: FunctionLowering, block, lhs: list, rhs: list) -> list:
    """Lower the combine region once for scalar operands ``lhs``, ``rhs``."""
    for a, v in zip(block.args, list(lhs) + list(rhs)):
        fl.set(a, v)
    for op in block.ops:
        if op.name in _TERMS:
            return [fl.get(v) for v in op.operands]
        fl.lower_op(op)
    raise AssertionError("combine region without a return")


def _to_i32_parts(b: ir.IRBuilder, v: ir.Value) -> list:
    ty = v.type
    if isinstance(ty, ir.PointerType):
        v = b.ptrtoint(v, ir.IntType(64))
        ty = v.type
    bits = bits_of(ty)
    iv = v if isinstance(ty, ir.IntType) else b.bitcast(v, ir.IntType(bits))
    if bits < 32:
        return [b.zext(iv, I32)]
    if bits == 32:
        return [iv]
    return [b.trunc(iv, I32), b.trunc(b.lshr(iv, const(iv.type, 32)), I32)]


def _from_i32_parts(b: ir.IRBuilder, parts: list, ty: ir.Type) -> ir.Value:
    wide = isinstance(ty, ir.PointerType)
    bits = 64 if wide else bits_of(ty)
    ity = ir.IntType(bits)
    if bits < 32:
        iv = b.trunc(parts[0], ity)
    elif bits == 32:
        iv = parts[0]
    else:
        iv = b.or_(b.zext(parts[0], ity), b.shl(b.zext(parts[1], ity), const(ity, 32)))
    if wide:
        return b.inttoptr(iv, ty)
    return iv if isinstance(ty, ir.IntType) else b.bitcast(iv, ty)


def shuffle_xor(fl: FunctionLowering, v: ir.Value, mask: int) -> ir.Value:
    b = fl.builder
    return _from_i32_parts(b, [fl.target.shuffle_xor(b, p, mask) for p in _to_i32_parts(b, v)], v.type)


def shuffle_idx(fl: FunctionLowering, v: ir.Value, lane: ir.Value) -> ir.Value:
    b = fl.builder
    return _from_i32_parts(b, [fl.target.shuffle_idx(b, p, lane) for p in _to_i32_parts(b, v)], v.type)


def warp_axis_index(fl: FunctionLowering, bits: list[int]) -> ir.Value:
    """The warp's position along the axis: its axis bits packed together (i32)."""
    return _pack_bits(fl, fl.warp, bits)


def _pack_bits(fl: FunctionLowering, x: ir.Value, bits: list[int]) -> ir.Value:
    """Bits ``bits`` of ``x`` packed together, lowest first (i32)."""
    b = fl.builder
    if bits == list(range(len(bits))):
        return b.and_(x, const(I32, (1 << len(bits)) - 1))
    acc = const(I32, 0)
    for k, bit in enumerate(bits):
        on = b.and_(b.lshr(x, const(I32, bit)), const(I32, 1))
        acc = b.or_(acc, b.shl(on, const(I32, k)) if k else on)
    return acc


def _out_shape(shape, axis):
    return tuple(s for d, s in enumerate(shape) if d != axis)





@lowers("tt.reduce")
def _reduce(fl: FunctionLowering, op) -> None:
    b = fl.builder
    axis = op.axis.value.data
    operands = list(op.operands)
    # operands kept in a source layout by an elided conversion (convert_layout.layout_free_chain)
    types = [fl.layout_override.get(v, v.type) for v in operands]
    if len({t.encoding for t in types}) != 1:
        raise NotImplementedError("reduction of operands in different layouts")
    src_t = types[0]
    info = fl.layout(src_t)
    ll = info.ll
    block = op.combineOp.blocks.first
    srcs = [fl.get(v) for v in operands]
    n_ops = len(srcs)
    # 1. registers: fold those that differ only along the axis, in register order
    acc: dict[tuple, list] = {}
    for r, off in enumerate(info.reg_offsets):
        if r & info.free["register"]:
            continue  # a duplicate of a register already folded
        key = tuple(0 if d == axis else int(x) for d, x in enumerate(off))
        vals = [s[r] for s in srcs]
        acc[key] = vals if key not in acc else combine(fl, block, acc[key], vals)
    # 2. lanes: butterfly over the lane bits that move along the axis
    for bit in axis_bits(ll.lane, axis):
        for key, vals in acc.items():
            other = [shuffle_xor(fl, v, 1 << bit) for v in vals]
            acc[key] = combine(fl, block, vals, other)
    # 3. warps: partials through shared memory, combined in warp order by every thread
    wbits = axis_bits(ll.warp, axis)
    if wbits:
        w = 1 << len(wbits)
        shape = src_t.get_shape()
        out_shape = _out_shape(shape, axis)
        n_out = 1
        for s in out_shape:
            n_out *= s
        base_off = fl.alloc_offset(op)
        bases = []
        for v in operands:
            bases.append(fl.shared_ptr(base_off))
            base_off += round8(n_out * w * elem_bytes(fl.ty(v.type)))
        thread = fl.thread_coords(info)
        widx = warp_axis_index(fl, wbits)
        out_idx = {}
        for key in acc:
            coords = [b.xor(thread[d], const(I32, key[d])) if key[d] else thread[d]
                      for d in range(len(shape)) if d != axis]
            out_idx[key] = b.mul(linear_index(fl, coords, out_shape), const(I32, w))
        for key, vals in acc.items():
            slot = b.add(out_idx[key], widx)
            for base, v in zip(bases, vals):
                shared_store(fl, base, slot, v)
        fl.target.barrier(b)
        # lanes that hold the same output element (their lane bits moved along the axis, or only
        # select duplicates) share the work: each reads one partial, a butterfly combines them
        same = sorted(set(axis_bits(ll.lane, axis)) | {i for i, v in enumerate(ll.lane) if not any(v)})
        if len(same) >= len(wbits):
            use = same[:len(wbits)]
            part_idx = _pack_bits(fl, fl.lane, use)
            for key in acc:
                slot = b.add(out_idx[key], part_idx)
                vals = [shared_load(fl, base, slot, x.type) for base, x in zip(bases, acc[key])]
                for bit in use:
                    other = [shuffle_xor(fl, v, 1 << bit) for v in vals]
                    vals = combine(fl, block, vals, other)
                acc[key] = vals
            wbits = []
        for key in acc if wbits else ():
            vals = None
            for k in range(w):
                slot = b.add(out_idx[key], const(I32, k))
                part = [shared_load(fl, base, slot, x.type) for base, x in zip(bases, acc[key])]
                vals = part if vals is None else combine(fl, block, vals, part)
            acc[key] = vals
    # results in the sliced layout
    res_t = op.results[0].type
    for i in range(n_ops):
        if isinstance(res_t, TensorType):
            out_info = fl.layout(op.results[i].type)
            out = []
            for off in out_info.reg_offsets:
                key = list(int(x) for x in off)
                key.insert(axis, 0)
                out.append(acc[tuple(key)][i])
            fl.set(op.results[i], out)
        else:
            fl.set(op.results[i], next(iter(acc.values()))[i])
