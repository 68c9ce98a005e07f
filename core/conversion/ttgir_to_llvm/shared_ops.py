"""``ttg.barrier`` and the explicit shared-memory buffers (``ttg.local_alloc/load/store/dealloc``).

A buffer value is the i8 shared pointer of its first byte; elements are stored row-major (the
lowering does every access to these buffers, so the swizzle of the shared encoding is not needed
for correctness; it is a bank-conflict optimisation left for later)."""
from __future__ import annotations

from .lowering import FunctionLowering, lowers
from .shape_ops import linear_index, read_tensor, write_tensor


@lowers("ttg.barrier")
def _barrier(fl: FunctionLowering, op) -> None:
    fl.target.barrier(fl.builder)


@lowers("ttg.local_alloc")
def _alloc(fl: FunctionLowering, op) -> None:
    base = fl.shared_ptr(fl.alloc_offset(op))
    fl.set(op.results[0], base)
    if op.src is not None:
        shape = op.src.type.get_shape()
        write_tensor(fl, base, fl.get(op.src), op.src.type, lambda c: linear_index(fl, c, shape))
        fl.target.barrier(fl.builder)


@lowers("ttg.local_store")
def _store(fl: FunctionLowering, op) -> None:
    shape = op.src.type.get_shape()
    write_tensor(fl, fl.get(op.dst), fl.get(op.src), op.src.type, lambda c: linear_index(fl, c, shape))


@lowers("ttg.local_load")
def _load(fl: FunctionLowering, op) -> None:
    t = op.results[0].type
    shape = t.get_shape()
    fl.set(op.results[0], read_tensor(fl, fl.get(op.src), t, lambda c: linear_index(fl, c, shape)))


@lowers("ttg.local_dealloc")
def _dealloc(fl: FunctionLowering, op) -> None:
    pass
