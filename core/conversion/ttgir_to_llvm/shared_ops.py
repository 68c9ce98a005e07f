"""``ttg.barrier`` and the explicit shared-memory buffers (``ttg.local_alloc/load/store/dealloc``,
``ttg.memdesc_index``).

A buffer value is the i8 shared pointer of its first byte.  Where the buffer's encoding defines its
own placement (``offset(coords, shape)``, linear over GF(2) in the coordinate bits, e.g. a vendor's
swizzled tensor-core layout that other hardware units read) elements go where it says; otherwise
they are stored row-major (only this lowering touches such buffers, so the swizzle of a generic
shared encoding is a bank-conflict optimisation left for later)."""
from __future__ import annotations

from math import prod

import llvmlite.ir as ir

from ...ttgir.layouts import bit_width
from .lowering import FunctionLowering, lowers
from .shape_ops import bit_map_index, linear_index, read_tensor, write_tensor
from .types import I32, const


def element_index(fl: FunctionLowering, memdesc_type, shape):
    """``coords -> i32 element index`` in a buffer of type ``memdesc_type`` viewed with ``shape``."""
    enc = memdesc_type.encoding
    if hasattr(enc, "offset_bases"):
        return lambda c: bit_map_index(fl, c, shape, lambda cc: enc.offset(cc, shape))
    return lambda c: linear_index(fl, c, shape)


@lowers("ttg.barrier")
def _barrier(fl: FunctionLowering, op) -> None:
    fl.target.barrier(fl.builder)


@lowers("ttg.local_alloc")
def _alloc(fl: FunctionLowering, op) -> None:
    base = fl.shared_ptr(fl.alloc_offset(op))
    fl.set(op.results[0], base)
    if op.src is not None:
        shape = op.src.type.get_shape()
        write_tensor(fl, base, fl.get(op.src), op.src.type, element_index(fl, op.results[0].type, shape))
        fl.target.barrier(fl.builder)


@lowers("ttg.local_store")
def _store(fl: FunctionLowering, op) -> None:
    shape = op.src.type.get_shape()
    write_tensor(fl, fl.get(op.dst), fl.get(op.src), op.src.type, element_index(fl, op.dst.type, shape))


@lowers("ttg.local_load")
def _load(fl: FunctionLowering, op) -> None:
    t = op.results[0].type
    shape = t.get_shape()
    fl.set(op.results[0], read_tensor(fl, fl.get(op.src), t, element_index(fl, op.src.type, shape)))


@lowers("ttg.memdesc_index")
def _index(fl: FunctionLowering, op) -> None:
    t = op.results[0].type
    slot_bytes = prod(t.shape) * max(bit_width(t.element_type) // 8, 1)
    b = fl.builder
    off = b.mul(fl.get(op.index), const(I32, slot_bytes))
    fl.set(op.results[0], b.gep(fl.get(op.src), [off], source_etype=ir.IntType(8)))


@lowers("ttg.local_dealloc")
def _dealloc(fl: FunctionLowering, op) -> None:
    pass
