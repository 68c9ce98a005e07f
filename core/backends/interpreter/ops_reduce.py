"""Translation of ``tt.reduce`` and ``tt.scan``: the combine region runs on whole slices at once.

reduce: a pairwise tree along the axis (elements ``2i`` and ``2i+1`` combine, lower index as the
left operand; an odd last element is carried), so ``log2(n)`` region runs per reduction.
scan: Hillis-Steele, ``log2(n)`` steps where element ``i`` combines with element ``i - d`` (earlier
element as the left operand).  Both orders are fixed, so results are deterministic; they differ
from a sequential fold only by floating-point reassociation.
"""
from __future__ import annotations

import numpy as np

from .numerics import type_info
from .registry import run_block, translates


def _region(tr, op):
    block = op.combine_block
    args = [tr.r(a) for a in block.args]
    body, term = tr.block(block)
    n = len(op.srcs)
    return args[:n], args[n:], body, [tr.r(v) for v in term.operands]


def _combine(fr, lhs_regs, rhs_regs, body, yields, lhs, rhs):
    for r, v in zip(lhs_regs, lhs):
        fr[r] = v
    for r, v in zip(rhs_regs, rhs):
        fr[r] = v
    run_block(body, fr)
    return [np.asarray(fr[y]) for y in yields]


@translates("tt.reduce")
def _reduce(tr, op):
    srcs = [tr.r(v) for v in op.srcs]
    outs = [tr.out(v) for v in op.results]
    axis = op.axis.value.data
    lhs_regs, rhs_regs, body, yields = _region(tr, op)

    def reduce(fr):
        xs = [np.moveaxis(np.asarray(fr[s]), axis, -1) for s in srcs]
        while xs[0].shape[-1] > 1:
            n = xs[0].shape[-1]
            even = n - n % 2
            ys = _combine(fr, lhs_regs, rhs_regs, body, yields,
                          [x[..., 0:even:2] for x in xs], [x[..., 1:even:2] for x in xs])
            ys = [np.broadcast_to(y, xs[0][..., 0:even:2].shape) for y in ys]
            if n % 2:
                ys = [np.concatenate([y, x[..., -1:]], axis=-1) for y, x in zip(ys, xs)]
            xs = ys
        for o, x, s in zip(outs, xs, srcs):
            r = x[..., 0]
            fr[o] = r[()] if r.ndim == 0 else np.ascontiguousarray(r)
    return reduce


@translates("tt.scan")
def _scan(tr, op):
    srcs = [tr.r(v) for v in op.srcs]
    outs = [tr.out(v) for v in op.results]
    axis, reverse = op.axis.value.data, bool(op.reverse.value.data)
    lhs_regs, rhs_regs, body, yields = _region(tr, op)

    def scan(fr):
        xs = [np.moveaxis(np.asarray(fr[s]), axis, -1) for s in srcs]
        if reverse:
            xs = [x[..., ::-1] for x in xs]
        n, d = xs[0].shape[-1], 1
        while d < n:
            ys = _combine(fr, lhs_regs, rhs_regs, body, yields, [x[..., :-d] for x in xs], [x[..., d:] for x in xs])
            xs = [np.concatenate([x[..., :d], np.broadcast_to(y, x[..., d:].shape)], axis=-1) for x, y in zip(xs, ys)]
            d *= 2
        if reverse:
            xs = [x[..., ::-1] for x in xs]
        for o, x in zip(outs, xs):
            fr[o] = np.ascontiguousarray(np.moveaxis(x, -1, axis))
    return scan


@translates("tt.map_elementwise")
def _map_elementwise(tr, op):
    """The scalar region runs once per group of ``pack`` consecutive elements (row-major order),
    so control flow inside it (``scf.if`` on an element's value) takes each element's own path."""
    srcs = [tr.r(v) for v in op.srcs]
    outs = [tr.out(v) for v in op.results]
    pack = op.pack.value.data
    block = op.scalar_block
    arg_regs = [tr.r(a) for a in block.args]
    body, term = tr.block(block)
    yields = [tr.r(v) for v in term.operands]
    holds = [type_info(v.type.get_element_type()).hold for v in op.results]

    def map_elementwise(fr):
        xs = [np.asarray(fr[s]) for s in srcs]
        shape = xs[0].shape
        flat = [np.broadcast_to(x, shape).reshape(-1) for x in xs]
        n = flat[0].size
        res = [np.empty(n, h) for h in holds]
        for g in range(0, n, pack):
            for i, x in enumerate(flat):
                for j in range(pack):
                    fr[arg_regs[i * pack + j]] = x[g + j]
            run_block(body, fr)
            for k, r in enumerate(res):
                for j in range(pack):
                    r[g + j] = fr[yields[k * pack + j]]
        for o, r in zip(outs, res):
            fr[o] = r.reshape(shape)
    return map_elementwise
