"""Reductions, scans and tensor methods as Triton's tests write them: ``tl.reduce`` and
``tl.associative_scan`` with multi-operand combine functions, ``keep_dims``, argmax/argmin with
ties, int8/uint8/fp16 inputs, ``tl.PropagateNan``, ``x.sum()``/``x.T``/``x.reshape``/
``x.broadcast_to``/``x.to()``."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Gen, Out, Rand, tol

M, K = 8, 32


@triton.jit
def _argmax_combine(v1, i1, v2, i2):
    # larger value wins; on a tie the lower index
    pick = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(pick, v1, v2), tl.where(pick, i1, i2)


@triton.jit
def _add_mul(a1, b1, a2, b2):
    return a1 + a2, b1 * b2


@triton.jit
def multi_reduce_kernel(x_ptr, vmax_ptr, imax_ptr, s_ptr, p_ptr, M: tl.constexpr, K: tl.constexpr):
    rows = tl.arange(0, M)
    x = tl.load(x_ptr + rows[:, None] * K + tl.arange(0, K)[None, :])
    idx = tl.broadcast_to(tl.arange(0, K)[None, :], (M, K))
    v, i = tl.reduce((x, idx), 1, _argmax_combine)
    s, p = tl.reduce((x, tl.full((M, K), 1.0, tl.float32) + (x > 0).to(tl.float32) * 0.0), 1, _add_mul)
    tl.store(vmax_ptr + rows, v)
    tl.store(imax_ptr + rows, i)
    tl.store(s_ptr + rows, s)
    tl.store(p_ptr + rows, p)


@triton.jit
def _running_max_count(m1, c1, m2, c2):
    return tl.maximum(m1, m2), c1 + c2


@triton.jit
def multi_scan_kernel(x_ptr, m_ptr, c_ptr, REVERSE: tl.constexpr, K: tl.constexpr):
    offs = tl.arange(0, K)
    x = tl.load(x_ptr + offs)
    m, c = tl.associative_scan((x, (x > 0).to(tl.int32)), 0, _running_max_count, reverse=REVERSE)
    tl.store(m_ptr + offs, m)
    tl.store(c_ptr + offs, c)


@triton.jit
def keep_dims_kernel(x_ptr, out_ptr, OP: tl.constexpr, AXIS: tl.constexpr, M: tl.constexpr, K: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]
    x = tl.load(x_ptr + offs)
    if OP == "sum":
        r = tl.sum(x, axis=AXIS, keep_dims=True)
    elif OP == "max":
        r = tl.max(x, AXIS, keep_dims=True)
    else:
        r = x.min(axis=AXIS, keep_dims=True)
    # a kept dimension broadcasts back against the tile
    tl.store(out_ptr + offs, x - r)


@triton.jit
def arg_kernel(x_ptr, out_ptr, OP: tl.constexpr, M: tl.constexpr, K: tl.constexpr):
    rows = tl.arange(0, M)
    x = tl.load(x_ptr + rows[:, None] * K + tl.arange(0, K)[None, :])
    if OP == "argmax":
        r = tl.argmax(x, axis=1)
    elif OP == "argmin":
        r = tl.argmin(x, 1)
    elif OP == "max_with_indices":
        _, r = tl.max(x, 1, return_indices=True)
    else:
        _, r = tl.min(x, axis=1, return_indices=True, return_indices_tie_break_left=True)
    tl.store(out_ptr + rows, r)


@triton.jit
def small_int_reduce_kernel(x_ptr, out_ptr, OP: tl.constexpr, K: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, K))
    if OP == "sum":
        r = tl.sum(x, axis=0)
    elif OP == "max":
        r = tl.max(x, axis=0)
    elif OP == "min":
        r = tl.min(x, axis=0)
    elif OP == "xor_sum":
        r = tl.xor_sum(x, axis=0)
    else:
        r = x.sum()
    tl.store(out_ptr, r)


@triton.jit
def propagate_nan_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, K: tl.constexpr):
    offs = tl.arange(0, K)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "max_all":
        r = tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "min_all":
        r = tl.minimum(x, y, tl.PropagateNan.ALL)
    else:
        r = tl.clamp(x, -1.0, y, propagate_nan=tl.PropagateNan.ALL)
    tl.store(out_ptr + offs, r)


@triton.jit
def methods_kernel(x_ptr, out_ptr, s_ptr, M: tl.constexpr, K: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])
    t = x.T                                   # [K, M]
    flat = t.reshape(K * M)
    back = flat.reshape((K, M)).to(tl.float32)
    wide = tl.arange(0, M)[None, :].broadcast_to(K, M).to(tl.float32)
    y = back * 2 + wide
    tl.store(out_ptr + tl.arange(0, K)[:, None] * M + tl.arange(0, M)[None, :], y)
    tl.store(s_ptr, x.sum() + t.max())


def _nan_inputs(rng, shape):
    v = rng.uniform(-4, 4, shape)
    v[rng.random(shape) < 0.2] = np.nan
    v[v == 0] = 1
    return v


CASES = []
for t in ("fp32", "fp16", "int32"):
    ties = Gen(t, (M, K), lambda rng, s: rng.integers(-3, 4, s) + 0.0)  # many ties
    CASES.append(Case(
        id=f"compat/reduce-tuple-argmax-{t}", kernel=multi_reduce_kernel, constexprs={"M": M, "K": K},
        inputs={"x_ptr": ties if t != "fp32" else Rand(t, (M, K), -2, 2)},
        outputs={"vmax_ptr": Out(t, (M,)), "imax_ptr": Out("int32", (M,)), "s_ptr": Out(t if t != "int32" else "fp32", (M,)),
                 "p_ptr": Out("fp32", (M,))},
        reference=lambda x_ptr: (x_ptr.max(1), x_ptr.argmax(1).astype(np.int32), x_ptr.astype(np.float64).sum(1),
                                 np.ones(M)),
        **tol(dtypes.ACCUM_TOLERANCE, t if t != "int32" else "fp32")))
for rev in (False, True):
    for t in ("fp32", "int16"):
        CASES.append(Case(
            id=f"compat/scan-tuple-{t}{'-reverse' if rev else ''}", kernel=multi_scan_kernel,
            constexprs={"REVERSE": rev, "K": 64}, inputs={"x_ptr": Rand(t, (64,), -1000, 1000)},
            outputs={"m_ptr": Out(t, (64,)), "c_ptr": Out("int32", (64,))},
            reference=(lambda rev: lambda x_ptr: (
                np.maximum.accumulate(x_ptr[::-1])[::-1] if rev else np.maximum.accumulate(x_ptr),
                (np.cumsum((x_ptr > 0)[::-1])[::-1] if rev else np.cumsum(x_ptr > 0)).astype(np.int32)))(rev)))
for op in ("sum", "max", "min"):
    for axis in (0, 1):
        CASES.append(Case(
            id=f"compat/keep-dims-{op}-axis{axis}", kernel=keep_dims_kernel,
            constexprs={"OP": op, "AXIS": axis, "M": M, "K": K}, inputs={"x_ptr": Rand("fp32", (M, K))},
            outputs={"out_ptr": Out("fp32", (M, K))},
            reference=(lambda op, a: lambda x_ptr: x_ptr - getattr(np, op)(x_ptr, axis=a, keepdims=True))(op, axis),
            **tol(dtypes.ACCUM_TOLERANCE, "fp32")))
for op in ("argmax", "argmin", "max_with_indices", "min_with_indices"):
    for t in ("fp32", "int8", "uint8", "fp16"):
        lo = -3 if t != "uint8" else 1
        CASES.append(Case(
            id=f"compat/{op}-ties-{t}", kernel=arg_kernel, constexprs={"OP": op, "M": M, "K": K},
            inputs={"x_ptr": Gen(t, (M, K), (lambda lo: lambda rng, s: rng.integers(lo, lo + 5, s))(lo))},
            outputs={"out_ptr": Out("int32", (M,))},
            reference=(lambda op: lambda x_ptr: (x_ptr.argmax(1) if "max" in op else x_ptr.argmin(1))
                       .astype(np.int32))(op)))
for t in ("int8", "uint8", "int16", "fp16"):
    for op in ("sum", "max", "min", "xor_sum", "method_sum"):
        if op == "xor_sum" and t == "fp16":
            continue
        out = t
        if op in ("sum", "method_sum") and t in ("int8", "int16"):
            out = "int32"
        elif op in ("sum", "method_sum") and t == "uint8":
            out = "uint32"
        ref = {"sum": lambda x: x.astype(np.float64).sum(), "method_sum": lambda x: x.astype(np.float64).sum(),
               "max": lambda x: x.max(), "min": lambda x: x.min(), "xor_sum": lambda x: np.bitwise_xor.reduce(x)}[op]
        CASES.append(Case(
            id=f"compat/reduce-{op}-{t}", kernel=small_int_reduce_kernel, constexprs={"OP": op, "K": 128},
            inputs={"x_ptr": Rand(t, (128,), -10 if t == "fp16" else None, 10 if t == "fp16" else None)},
            outputs={"out_ptr": Out(out, (1,))},
            reference=(lambda ref, out: lambda x_ptr: np.array([ref(x_ptr)]).astype(
                np.float64 if dtypes.is_float(out) else dtypes.STORAGE[out]))(ref, out),
            **tol(dtypes.ACCUM_TOLERANCE, "fp16")))
for op, ref in (("max_all", lambda x, y: np.maximum(x, y)), ("min_all", lambda x, y: np.minimum(x, y)),
                ("clamp_all", lambda x, y: np.where(np.isnan(x) | np.isnan(y), np.nan,
                                                     np.minimum(np.maximum(x, -1.0), y)))):
    CASES.append(Case(id=f"compat/propagate-nan-{op}", kernel=propagate_nan_kernel, constexprs={"OP": op, "K": 128},
                      inputs={"x_ptr": Gen("fp32", (128,), _nan_inputs),
                              "y_ptr": Gen("fp32", (128,), lambda rng, s: np.abs(_nan_inputs(rng, s)) + 1)},
                      outputs={"out_ptr": Out("fp32", (128,))}, reference=(lambda r: lambda x_ptr, y_ptr: r(x_ptr, y_ptr))(ref)))
for t in ("fp16", "int32"):
    CASES.append(Case(id=f"compat/tensor-methods-{t}", kernel=methods_kernel, constexprs={"M": M, "K": K},
                      inputs={"x_ptr": Rand(t, (M, K), -50, 50)},
                      outputs={"out_ptr": Out("fp32", (K, M)), "s_ptr": Out(t if t != "int32" else "int32", (1,))},
                      reference=lambda x_ptr: (x_ptr.T * 2.0 + np.arange(M)[None, :],
                                               np.array([x_ptr.astype(np.float64).sum() + x_ptr.max()]).astype(
                                                   np.float64 if x_ptr.dtype.kind == "f" else np.int32)),
                      # 256 values of up to 50 summed in fp16: partial sums reach a few hundred,
                      # where an fp16 step is 0.25, and the tree's 8 levels each round once
                      rtol=1e-2, atol=2.0))
