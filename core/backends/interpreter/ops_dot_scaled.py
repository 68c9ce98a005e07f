"""Translation of ``tt.dot_scaled``: operands decoded exactly (:mod:`.mx_formats`), scaled, and
multiplied in float64; the sum is rounded once to float32, as ``tt.dot`` is.  The elementwise
decode ops that ``decompose-scaled-dot`` makes (``ttg.e2m1_to_fp``, ``ttg.e8m0_to_fp``) run too,
so the decomposed form of a kernel can be checked against the op on the CPU."""
from __future__ import annotations

import numpy as np

from .mx_formats import E2M1_TABLE, apply_scale, decode, decode_e8m0
from .numerics import rounder, type_info
from .registry import emit, translates


@translates("tt.dot_scaled")
def _dot_scaled(tr, op):
    rank = len(op.a.type.get_shape())
    lk, rk = op.k_packs
    fa, fb = op.a_format, op.b_format
    a_pack = rank - 1 if lk else rank - 2
    b_pack = rank - 2 if rk else rank - 1
    regs = [tr.r(v) for v in (op.a, op.b, op.c)]
    sa = tr.r(op.a_scale) if op.a_scale is not None else None
    sb = tr.r(op.b_scale) if op.b_scale is not None else None
    o = tr.out(op.d)

    def f(fr):
        a, b, c = (fr[r] for r in regs)
        x, y = decode(a, fa, a_pack), decode(b, fb, b_pack)
        if sa is not None:
            x = apply_scale(x, fr[sa], rank - 1)
        if sb is not None:
            y = apply_scale(y, fr[sb], rank - 2)
        with np.errstate(invalid="ignore", over="ignore"):
            fr[o] = (np.matmul(x, y) + c).astype(np.float32)
    return f


@translates("ttg.e2m1_to_fp")
def _e2m1_to_fp(tr, op):
    shift, rnd = (4 if op.is_high else 0), rounder(type_info(op.result.type))
    return emit(tr, op, lambda x: rnd(E2M1_TABLE[(np.asarray(x).view(np.uint8) >> shift) & 0xF]))


@translates("ttg.e8m0_to_fp")
def _e8m0_to_fp(tr, op):
    fast, rnd = op.fast_math, rounder(type_info(op.result.type))

    def f(x):
        codes = np.asarray(x).view(np.uint8)
        v = decode_e8m0(codes)
        if fast:  # the plain exponent bits: 0 reads as zero, 0xFF as inf
            v = np.where(codes == 0, 0.0, np.where(codes == 0xFF, np.inf, v))
        with np.errstate(over="ignore"):
            return rnd(v)
    return emit(tr, op, f)
