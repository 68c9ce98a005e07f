"""The ``ttg`` ops a TTGIR module adds to TTIR, on the interpreter: layouts say where elements live
on a GPU, not what they are, so ``ttg.convert_layout`` is the identity and a shared-memory buffer
(``!ttg.memdesc``) is a numpy array that ``local_alloc`` fills, ``local_load`` copies out and
``local_store`` overwrites."""
from __future__ import annotations

import numpy as np

from .numerics import type_info
from .registry import emit, translates


@translates("ttg.convert_layout")
def _convert_layout(tr, op):
    return emit(tr, op, lambda x: x)


@translates("ttg.local_alloc")
def _local_alloc(tr, op):
    t = op.results[0].type
    if op.operands:
        return emit(tr, op, lambda x: np.array(x, copy=True))
    shape, dt, o = tuple(t.get_shape()), type_info(t.element_type).hold, tr.out(op.results[0])

    def f(fr):
        fr[o] = np.zeros(shape, dt)
    return f


@translates("ttg.local_load")
def _local_load(tr, op):
    return emit(tr, op, lambda buf: buf.copy())


@translates("ttg.local_store")
def _local_store(tr, op):
    src, dst = tr.r(op.operands[0]), tr.r(op.operands[1])

    def f(fr):
        fr[dst][...] = fr[src]
    return f


@translates("ttg.local_dealloc", "ttg.barrier")
def _no_op(tr, op):
    # a program is one logical thread here: nothing to free early, no other threads to wait for
    return lambda fr: None
