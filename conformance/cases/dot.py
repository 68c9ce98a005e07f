"""tl.dot: fp16, bf16, fp32 ("ieee" and "tf32"), int8 -> int32, fp64; with and without an
accumulator; tile shapes 16..64."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Out, Rand, Scalar, tol


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               PRECISION: tl.constexpr, USE_ACC: tl.constexpr, OUT: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if USE_ACC:
        acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
        z = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=OUT)
    else:
        z = tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT)
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], z)


@triton.jit
def dot_loop_kernel(a_ptr, b_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                    BLOCK_K: tl.constexpr):
    # the usual matmul inner loop: accumulate BLOCK_K slices into an fp32 accumulator
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((M, N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def _case(tag, m, n, k, precision="ieee", acc=False, out="fp32", **kw):
    int_in = dtypes.is_int(tag)
    rng = (-50, 50) if int_in else (-2, 2)
    name = f"dot/{tag}-{m}x{n}x{k}" + (f"-{precision}" if tag == "fp32" else "") + ("-acc" if acc else "")
    if int_in:
        ref = lambda a_ptr, b_ptr, c_ptr: (a_ptr.reshape(m, k).astype(np.int64) @ b_ptr.reshape(k, n).astype(np.int64)
                                           + (c_ptr.reshape(m, n) if acc else 0)).astype(np.int32)
    else:
        ref = lambda a_ptr, b_ptr, c_ptr: a_ptr.reshape(m, k) @ b_ptr.reshape(k, n) + (c_ptr.reshape(m, n) if acc else 0)
    if precision == "tf32":
        # each product keeps ~2^-11 of itself and the errors add up over K: with inputs in (-2, 2)
        # and K = 64 the plain tf32 atol failed about one run in 500 (20,000 draws simulated)
        rtol, atol = dtypes.TF32_TOLERANCE
        tolerance = {"rtol": rtol, "atol": atol * max(1, k // 32)}
    else:
        tolerance = {} if int_in else tol(dtypes.ACCUM_TOLERANCE, out)
    return Case(
        id=name, kernel=dot_kernel,
        constexprs={"M": m, "N": n, "K": k, "PRECISION": precision, "USE_ACC": acc,
                    "OUT": getattr(tl, dtypes.LANG_NAME[out])},
        inputs={"a_ptr": Rand(tag, (m * k,), *rng), "b_ptr": Rand(tag, (k * n,), *rng),
                "c_ptr": Rand(out, (m * n,), *rng)},
        outputs={"z_ptr": Out(out, (m, n), poison="sentinel")}, reference=ref, **tolerance, **kw)



@triton.jit
def dot_loop_scaled_kernel(a_ptr, b_ptr, w_ptr, z_ptr, n_valid, M: tl.constexpr, N: tl.constexpr,
                           K: tl.constexpr, BLOCK_K: tl.constexpr):
    # a matmul loop with a load that feeds no dot: each K block's weight row (fp32), masked to the
    # first n_valid columns (the masked-off lanes read 0), scales that block's product
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((M, N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        w = tl.load(w_ptr + (k // BLOCK_K) * N + rn, mask=rn < n_valid)
        acc += tl.dot(a, b) * w[None, :]
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], acc)


def _scaled_blocks(a_ptr, b_ptr, w_ptr, n_valid, m=32, n=32, k=128, bk=32):
    a, b = a_ptr.reshape(m, k).astype(np.float64), b_ptr.reshape(k, n).astype(np.float64)
    w = np.where(np.arange(n) < n_valid, w_ptr.reshape(k // bk, n), 0.0)
    return sum((a[:, i:i + bk] @ b[i:i + bk]) * w[i // bk] for i in range(0, k, bk))


CASES = [
    _case("fp16", 16, 16, 16), _case("fp16", 32, 32, 32), _case("fp16", 64, 32, 16), _case("fp16", 16, 64, 64),
    _case("fp16", 32, 32, 32, acc=True), _case("fp16", 32, 16, 32, out="fp16"),
    _case("bf16", 16, 16, 16), _case("bf16", 32, 64, 32), _case("bf16", 32, 32, 32, acc=True),
    _case("fp32", 16, 16, 16), _case("fp32", 32, 32, 32), _case("fp32", 64, 64, 16, acc=True),
    _case("fp32", 16, 16, 16, "tf32"), _case("fp32", 32, 32, 64, "tf32"), _case("fp32", 32, 32, 32, "tf32", acc=True),
    _case("int8", 16, 16, 32, out="int32"), _case("int8", 32, 32, 64, out="int32"),
    _case("int8", 32, 32, 32, acc=True, out="int32"),
    _case("fp64", 16, 16, 16, out="fp64"), _case("fp64", 32, 32, 16, acc=True, out="fp64"),
    Case(id="dot/fp16-loop-32x32x128", kernel=dot_loop_kernel, constexprs={"M": 32, "N": 32, "K": 128, "BLOCK_K": 32},
         inputs={"a_ptr": Rand("fp16", (32 * 128,), -1, 1), "b_ptr": Rand("fp16", (128 * 32,), -1, 1)},
         outputs={"z_ptr": Out("fp16", (32, 32))},
         reference=lambda a_ptr, b_ptr: a_ptr.reshape(32, 128) @ b_ptr.reshape(128, 32), **tol(dtypes.ACCUM_TOLERANCE, "fp16")),
    Case(id="dot/fp16-loop-scaled-rows-ragged", kernel=dot_loop_scaled_kernel,
         constexprs={"M": 32, "N": 32, "K": 128, "BLOCK_K": 32},
         inputs={"a_ptr": Rand("fp16", (32 * 128,), -1, 1), "b_ptr": Rand("fp16", (128 * 32,), -1, 1),
                 "w_ptr": Rand("fp32", (4 * 32,), -2, 2), "n_valid": Scalar("int32", 1, 31)},
         outputs={"z_ptr": Out("fp32", (32, 32))}, reference=_scaled_blocks, **tol(dtypes.ACCUM_TOLERANCE, "fp32"),
         doc="a pipelined loop's load that feeds no dot (copied ahead on NVIDIA), masked: its masked-off "
             "lanes read 0"),
]

# tiles smaller than a tensor-core instruction (M below 16 or N below 8, down to 1): any size on
# the interpreter; on NVIDIA, with K of at least 16 (32 for 8-bit operands), one mma.sync as
# Triton's (rows and columns past the tile are copies the lowering drops), fp8 upcast to fp16 on
# sm_90, with 1 and 4 warps (the warps past the tile hold copies too)
CASES += [
    _case("fp16", 1, 32, 16), _case("fp16", 8, 8, 32), _case("fp16", 32, 2, 16, acc=True),
    _case("fp16", 4, 16, 16, out="fp16"), _case("bf16", 2, 64, 16), _case("fp32", 16, 1, 16),
    _case("fp32", 8, 4, 32, "tf32"), _case("int8", 4, 8, 32, out="int32"), _case("fp64", 2, 2, 16, out="fp64"),
    _case("fp16", 2, 4, 32, options={"num_warps": 1}), _case("fp8e5", 1, 2, 32, options={"num_warps": 1}),
    _case("fp8e4nv", 2, 8, 64), _case("bf16", 1, 1, 32, acc=True), _case("fp16", 8, 2, 64, acc=True),
    _case("int8", 1, 4, 64, acc=True, out="int32", options={"num_warps": 1}),
    _case("fp32", 2, 2, 16, "tf32", options={"num_warps": 1}),
    Case(id="dot/fp16-loop-4x2x128", kernel=dot_loop_kernel, constexprs={"M": 4, "N": 2, "K": 128, "BLOCK_K": 32},
         inputs={"a_ptr": Rand("fp16", (4 * 128,), -2, 2), "b_ptr": Rand("fp16", (128 * 2,), -2, 2)},
         outputs={"z_ptr": Out("fp16", (4, 2))},
         reference=lambda a_ptr, b_ptr: a_ptr.reshape(4, 128).astype(np.float32) @ b_ptr.reshape(128, 2),
         **tol(dtypes.ACCUM_TOLERANCE, "fp16"), doc="a K loop accumulating a 4x2 tile (pipelined on NVIDIA)"),
]
