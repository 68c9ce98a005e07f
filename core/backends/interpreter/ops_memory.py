"""Translation of loads, stores, atomics and block pointers.

A block pointer (``tt.make_tensor_ptr``) is held as ``(base, shape, strides, offsets)`` of int64s;
loading or storing through it computes the tensor of element addresses and, for the dimensions in
``boundaryCheck``, the in-bounds mask (padding ``zero`` or ``nan`` elsewhere)."""
from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType

from .address_space import atomic, gather, scatter
from .numerics import type_info
from .registry import translates


def _pointee(ptr_type):
    elt = ptr_type.element_type if isinstance(ptr_type, TensorType) else ptr_type
    return elt.pointee_type


def _block_addresses(bp, block_shape, isz, boundary):
    base, shape, strides, offsets = bp
    addr = np.int64(base)
    mask = None
    rank = len(block_shape)
    for d, n in enumerate(block_shape):
        idx = (np.int64(offsets[d]) + np.arange(n, dtype=np.int64)).reshape([n if k == d else 1 for k in range(rank)])
        addr = addr + idx * (np.int64(strides[d]) * isz)
        if d in boundary:
            inb = (idx >= 0) & (idx < np.int64(shape[d]))
            mask = inb if mask is None else mask & inb
    addr = np.broadcast_to(addr, block_shape)
    return addr, (None if mask is None else np.broadcast_to(mask, block_shape))


@translates("tt.load")
def _load(tr, op):
    out = tr.out(op.result)
    p = tr.r(op.ptr)
    ptype = op.ptr.type
    if not isinstance(ptype, TensorType) and ptype.is_block_pointer:
        tensor = ptype.pointee_type
        info = type_info(tensor)
        shape, isz = tuple(tensor.get_shape()), np.dtype(info.store).itemsize
        boundary = set(op.boundaryCheck.get_values())
        pad = np.nan if op.padding is not None and op.padding.value.data == 2 else 0
        other = info.hold(pad)

        def load_block(fr):
            addr, mask = _block_addresses(fr[p], shape, isz, boundary)
            fr[out] = gather(fr[0].space, addr, mask, other, info)
        return load_block
    info = type_info(_pointee(ptype))
    m = tr.r(op.mask) if op.mask is not None else None
    o = tr.r(op.other) if op.other is not None else None
    scalar = not isinstance(ptype, TensorType)

    def load(fr):
        v = gather(fr[0].space, fr[p], None if m is None else fr[m], None if o is None else fr[o], info)
        fr[out] = v[()] if scalar else v
    return load


@translates("tt.store")
def _store(tr, op):
    p, v = tr.r(op.ptr), tr.r(op.value)
    ptype = op.ptr.type
    if not isinstance(ptype, TensorType) and ptype.is_block_pointer:
        tensor = ptype.pointee_type
        info = type_info(tensor)
        shape, isz = tuple(tensor.get_shape()), np.dtype(info.store).itemsize
        boundary = set(op.boundaryCheck.get_values())

        def store_block(fr):
            addr, mask = _block_addresses(fr[p], shape, isz, boundary)
            scatter(fr[0].space, addr, fr[v], mask, info)
        return store_block
    info = type_info(_pointee(ptype))
    m = tr.r(op.mask) if op.mask is not None else None

    def store(fr):
        scatter(fr[0].space, fr[p], fr[v], None if m is None else fr[m], info)
    return store


@translates("tt.make_tensor_ptr")
def _make_tensor_ptr(tr, op):
    base = tr.r(op.base)
    shape, strides, offsets = ([tr.r(x) for x in g] for g in (op.shape, op.strides, op.offsets))
    out = tr.out(op.result)

    def make(fr):
        fr[out] = (fr[base], tuple(fr[r] for r in shape), tuple(fr[r] for r in strides),
                   tuple(np.int64(fr[r]) for r in offsets))
    return make


@translates("tt.advance")
def _advance(tr, op):
    p, deltas, out = tr.r(op.ptr), [tr.r(x) for x in op.offsets], tr.out(op.result)

    def advance(fr):
        base, shape, strides, offsets = fr[p]
        fr[out] = (base, shape, strides, tuple(o + np.int64(fr[d]) for o, d in zip(offsets, deltas)))
    return advance


def _rmw_update(kind: str, info):
    fix = info.fix
    if kind == "fadd":
        return (lambda old, v: fix(old + v)) if fix is not None else (lambda old, v: old + v)
    if kind in ("umax", "umin"):
        u, fn = info.unsigned, np.maximum if kind == "umax" else np.minimum
        return lambda old, v: fn(old.astype(u), v.astype(u)).astype(info.hold)
    return {"add": np.add, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
            "max": np.maximum, "min": np.minimum, "exch": lambda old, v: v}[kind]


@translates("tt.atomic_rmw")
def _atomic_rmw(tr, op):
    info = type_info(op.val.type)
    update = _rmw_update(op.rmw, info)
    p, v, out = tr.r(op.ptr), tr.r(op.val), tr.out(op.result)
    m = tr.r(op.mask) if op.mask is not None else None

    def rmw(fr):
        fr[out] = atomic(fr[0].space, fr[p], None if m is None else fr[m], info, update, fr[v])
    return rmw


@translates("tt.atomic_cas")
def _atomic_cas(tr, op):
    info = type_info(op.val.type)
    p, c, v, out = tr.r(op.ptr), tr.r(op.cmp), tr.r(op.val), tr.out(op.result)

    def bits(x):
        # compare-and-swap compares bit patterns (as the hardware does): NaN == NaN, -0.0 != 0.0
        x = np.asarray(info.save(x) if info.save is not None else x).astype(info.store, copy=False)
        return x.view(f"u{info.itemsize}") if info.kind == "float" else x

    def cas(fr):
        fr[out] = atomic(fr[0].space, fr[p], None, info,
                         lambda old, cmp, val: np.where(bits(old) == bits(cmp), val, old), fr[c], fr[v])
    return cas
