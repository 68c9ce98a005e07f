"""Reductions folded into a loop-carried accumulator over a K loop (``acc = op(acc, tl.sum(x, 1))``):
the loops ``optimize-thread-locality`` rewrites to reduce within each thread inside the loop and
across threads once after it.  Rows (axis 1), columns (axis 0) and 1-D blocks (a scalar
accumulator); sum, max, min, xor_sum; fp32, fp64, int32, and fp16/bf16 reduced in fp32 (``tl.max``
and ``tl.min`` promote them, as Triton's do);
a constant init or one loaded from memory (folded in after the loop); masked tails; 1 to 8 warps.
And the sum over k of a broadcast product (``tl.sum(x[:, :, None] * y[None, :, :], axis=1)``), which
the compiler turns into a tf32 dot."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Out, Rand, tol


@triton.jit
def _combine(acc, x, OP: tl.constexpr, AXIS: tl.constexpr):
    if OP == "sum":
        acc = acc + tl.sum(x, axis=AXIS)
    elif OP == "max":
        acc = tl.maximum(acc, tl.max(x, axis=AXIS))
    elif OP == "min":
        acc = tl.minimum(acc, tl.min(x, axis=AXIS))
    else:
        acc = acc ^ tl.xor_sum(x, axis=AXIS)
    return acc


@triton.jit
def rows_kernel(x_ptr, init_ptr, z_ptr, K, OP: tl.constexpr, ACC: tl.constexpr, NEUTRAL: tl.constexpr,
                LOAD_INIT: tl.constexpr, MASKED: tl.constexpr, M: tl.constexpr, BK: tl.constexpr):
    # z[m] = op over k of x[m, k], x row-major (M, K), BK columns per iteration
    rm = tl.arange(0, M)
    rk = tl.arange(0, BK)
    if LOAD_INIT:
        acc = tl.load(init_ptr + rm)
    else:
        acc = tl.full([M], NEUTRAL, ACC)
    for k0 in range(0, K, BK):
        ptrs = x_ptr + rm[:, None] * K + (k0 + rk)[None, :]
        if MASKED:
            x = tl.load(ptrs, mask=(k0 + rk)[None, :] < K, other=NEUTRAL)
        else:
            x = tl.load(ptrs)
        acc = _combine(acc, x.to(ACC), OP, 1)
    tl.store(z_ptr + rm, acc)


@triton.jit
def cols_kernel(x_ptr, init_ptr, z_ptr, K, OP: tl.constexpr, ACC: tl.constexpr, NEUTRAL: tl.constexpr,
                LOAD_INIT: tl.constexpr, MASKED: tl.constexpr, M: tl.constexpr, BK: tl.constexpr):
    # z[m] = op over k of x[k, m], x row-major (K, M), BK rows per iteration
    rm = tl.arange(0, M)
    rk = tl.arange(0, BK)
    if LOAD_INIT:
        acc = tl.load(init_ptr + rm)
    else:
        acc = tl.full([M], NEUTRAL, ACC)
    for k0 in range(0, K, BK):
        ptrs = x_ptr + (k0 + rk)[:, None] * M + rm[None, :]
        if MASKED:
            x = tl.load(ptrs, mask=(k0 + rk)[:, None] < K, other=NEUTRAL)
        else:
            x = tl.load(ptrs)
        acc = _combine(acc, x.to(ACC), OP, 0)
    tl.store(z_ptr + rm, acc)


@triton.jit
def flat_kernel(x_ptr, init_ptr, z_ptr, K, OP: tl.constexpr, ACC: tl.constexpr, NEUTRAL: tl.constexpr,
                LOAD_INIT: tl.constexpr, MASKED: tl.constexpr, M: tl.constexpr, BK: tl.constexpr):
    # z = op over k of x[k]: a scalar accumulator, BK elements per iteration (M is unused)
    rk = tl.arange(0, BK)
    if LOAD_INIT:
        acc = tl.load(init_ptr)
    else:
        acc = tl.full([], NEUTRAL, ACC)
    for k0 in range(0, K, BK):
        if MASKED:
            x = tl.load(x_ptr + k0 + rk, mask=k0 + rk < K, other=NEUTRAL)
        else:
            x = tl.load(x_ptr + k0 + rk)
        acc = _combine(acc, x.to(ACC), OP, 0)
    tl.store(z_ptr, acc)


@triton.jit
def mul_broadcast_kernel(x_ptr, y_ptr, z_ptr, K, M: tl.constexpr, N: tl.constexpr, BK: tl.constexpr):
    # z = x @ y written as Triton's test_dot_mulbroadcasted does: the sum over k of a broadcast
    # product, accumulated over a K loop (the compiler makes it a tf32 dot)
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rak = tl.arange(0, BK)[None, :]
    rbk = tl.arange(0, BK)[:, None]
    acc = tl.full((M, N), 0.0, tl.float32)
    for k0 in range(0, K, BK):
        x = tl.load(x_ptr + rm * K + k0 + rak)
        y = tl.load(y_ptr + (k0 + rbk) * N + rn)
        acc = tl.sum(x[:, :, None] * y[None, :, :], axis=1) + acc
    tl.store(z_ptr + rm * N + rn, acc)


_KERNELS = {"rows": (rows_kernel, 1), "cols": (cols_kernel, 0), "flat": (flat_kernel, None)}
_NP = {"sum": np.add, "max": np.maximum, "min": np.minimum, "xor_sum": np.bitwise_xor}


def _neutral(op, acc):
    if op in ("sum", "xor_sum"):
        return 0
    big = float("inf") if dtypes.is_float(acc) else np.iinfo(dtypes.STORAGE[acc]).max
    return -big if op == "max" else big


def _reference(op, shape, axis, acc, init):
    def ref(x_ptr, init_ptr=None):
        x = x_ptr.reshape(shape)
        hold = np.float64 if dtypes.is_float(acc) else np.int64
        r = _NP[op].reduce(x.astype(hold), axis=axis)
        if init_ptr is not None:
            r = _NP[op](r, init_ptr.reshape(np.shape(r)).astype(hold))
        return r if dtypes.is_float(acc) else (r.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    return ref


def _case(kind, op, src, m, bk, k, warps=4, acc=None, init=False, masked=False):
    acc = acc or src
    kernel, axis = _KERNELS[kind]
    shape = {"rows": (m, k), "cols": (k, m), "flat": (k,)}[kind]
    out_shape = () if kind == "flat" else (m,)
    name = f"reduce_loop/{kind}-{op}-{src}" + (f"-acc{acc}" if acc != src else "") + \
        f"-{'' if kind == 'flat' else f'{m}x'}{bk}-k{k}-w{warps}" + ("-init" if init else "") + \
        ("-masked" if masked else "")
    low = -100 if dtypes.is_int(src) else None
    inputs = {"x_ptr": Rand(src, (int(np.prod(shape)),), low, -low if low else None), "K": k}
    inputs["init_ptr"] = Rand(acc, out_shape or (1,), low, -low if low else None) if init else None
    kw = tol(dtypes.ACCUM_TOLERANCE, acc) if op == "sum" and dtypes.is_float(acc) else {}
    return Case(id=name, kernel=kernel,
                constexprs={"OP": op, "ACC": getattr(tl, dtypes.LANG_NAME[acc]), "NEUTRAL": _neutral(op, acc),
                            "LOAD_INIT": init, "MASKED": masked, "M": m, "BK": bk},
                inputs=inputs, outputs={"z_ptr": Out(acc, out_shape, poison="sentinel")},
                reference=_reference(op, shape, 1 if kind == "rows" else 0, acc, init),
                options={"num_warps": warps}, **kw)


CASES = [
    # the shapes of Triton's test_optimize_thread_locality (BLOCK_M 32, BLOCK_N 32..128)
    _case("rows", "sum", "fp32", 32, 64, 512),
    _case("rows", "sum", "fp32", 32, 64, 512, init=True),
    _case("rows", "max", "fp32", 32, 128, 1024),
    _case("rows", "min", "fp32", 32, 32, 512, warps=8),
    _case("rows", "max", "fp32", 32, 64, 512, init=True),
    _case("rows", "sum", "fp32", 16, 128, 1008, masked=True),
    _case("rows", "sum", "fp32", 4, 512, 2048, warps=8),
    _case("rows", "sum", "fp64", 16, 64, 256),
    _case("rows", "max", "fp16", 64, 64, 512, acc="fp32"),
    _case("rows", "min", "bf16", 32, 64, 256, warps=2, acc="fp32"),
    _case("rows", "sum", "fp16", 32, 64, 512, acc="fp32"),
    _case("rows", "sum", "bf16", 8, 256, 1024, warps=1, acc="fp32"),
    _case("rows", "sum", "int32", 32, 64, 512, init=True),
    _case("rows", "max", "int32", 32, 64, 384),
    _case("rows", "min", "int32", 64, 32, 256, warps=2, masked=True),
    _case("rows", "xor_sum", "int32", 32, 64, 512),
    _case("cols", "sum", "fp32", 32, 64, 512),
    _case("cols", "max", "fp32", 64, 64, 256, warps=8),
    _case("cols", "min", "fp16", 32, 128, 512, acc="fp32", masked=True),
    _case("cols", "sum", "int32", 16, 128, 512, warps=2, init=True),
    _case("flat", "sum", "fp32", 1, 1024, 8192),
    _case("flat", "max", "fp32", 1, 256, 2048, warps=1),
    _case("flat", "sum", "int32", 1, 512, 4096, init=True),
    _case("flat", "min", "fp16", 1, 512, 3000, acc="fp32", masked=True),
    _case("flat", "sum", "bf16", 1, 1024, 4096, warps=8, acc="fp32"),
]
for _m, _n, _bk, _k, _w in ((128, 32, 32, 160, 4), (64, 64, 16, 64, 4), (32, 16, 16, 48, 1)):
    CASES.append(Case(
        id=f"reduce_loop/mul-broadcast-sum-fp32-{_m}x{_n}x{_bk}-k{_k}-w{_w}", kernel=mul_broadcast_kernel,
        constexprs={"M": _m, "N": _n, "BK": _bk},
        inputs={"x_ptr": Rand("fp32", (_m * _k,), -1, 1), "y_ptr": Rand("fp32", (_k * _n,), -1, 1), "K": _k},
        outputs={"z_ptr": Out("fp32", (_m, _n))},
        reference=lambda x_ptr, y_ptr, m=_m, n=_n, k=_k: x_ptr.reshape(m, k) @ y_ptr.reshape(k, n),
        options={"num_warps": _w}, rtol=1e-2, atol=5e-2))
