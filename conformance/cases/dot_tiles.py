"""tl.dot at the tile sizes that take a GPU's matrix units, inside the usual K loop: every input
dtype and input_precision, fp32/int32 and fp16 accumulators, ragged M/N/K (masked tails), num_warps
4/8, num_stages 1-4 (software pipelined loops with loop-carried pointers), A given K- or
M-contiguous and B N- or K-contiguous (the layouts some matrix units read only after a transpose),
and the same loop over block pointers.  Backends without matrix units compute the same products."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Out, Rand, tol


@triton.jit
def tiled_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                        B_KMAJOR: tl.constexpr, PRECISION: tl.constexpr, ACC: tl.constexpr,
                        A_MMAJOR: tl.constexpr = False):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    if A_MMAJOR:  # A stored as K rows of M
        a_ptrs = a_ptr + rm[:, None] + rk[None, :] * M
    else:
        a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    if B_KMAJOR:  # B stored as N rows of K
        b_ptrs = b_ptr + rk[:, None] + rn[None, :] * K
    else:
        b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=ACC)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=ACC)
        if A_MMAJOR:
            a_ptrs += BK * M
        else:
            a_ptrs += BK
        if B_KMAJOR:
            b_ptrs += BK
        else:
            b_ptrs += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def block_ptr_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # no padding_option: out-of-bounds lanes must read zero, or the products pick up garbage
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_blk = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (pid_m * BM, 0), (BM, BK), (1, 0))
    b_blk = tl.make_block_ptr(b_ptr, (K, N), (N, 1), (0, pid_n * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(tl.load(a_blk, boundary_check=(0, 1)), tl.load(b_blk, boundary_check=(0, 1)), acc)
        a_blk = tl.advance(a_blk, (0, BK))
        b_blk = tl.advance(b_blk, (BK, 0))
    c_blk = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(c_blk, acc, boundary_check=(0, 1))


@triton.jit
def computed_a_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                             SCALE: tl.constexpr, ACC: tl.constexpr):
    # A is computed in registers before each dot (scaled fp32, then cast to B's type), as
    # attention's P is: the matrix units take it from registers, not from a load
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=ACC)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :] + k * BK,
                    mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptr + (rk[:, None] + k * BK) * N + rn[None, :],
                    mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0)
        acc = tl.dot((a * SCALE).to(b.dtype), b, acc, out_dtype=ACC)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _computed_a_case(tag, m, n, k, bm, bn, bk, warps=4, stages=3):
    integer = dtypes.is_int(tag)
    scale = 8.0 if integer else 2.0

    def ref(a_ptr, b_ptr, **_):
        x = a_ptr.reshape(m, k).astype(np.float64) * scale
        x = np.trunc(x) if integer else dtypes.round_to(x, tag).astype(np.float64)
        b = b_ptr.reshape(k, n).astype(np.float64)
        out = x @ b
        return out.astype(np.int32) if integer else out

    if integer:
        tolerance = {}
    elif tag in ("fp8e4nv", "fp8e5"):
        # the plain fp8 cases' bound (Hopper's reduced-precision fp8 accumulation), times the scale:
        # A's elements are up to ``scale`` times larger, and so are the sums the accumulation rounds
        # (at 1x: 1 element in 65,536 over 0.01 in 2 runs of 8, errors up to 0.0114)
        tolerance = {"rtol": 1e-3 * max(1, k // 128), "atol": 1e-2 * scale * max(1, k // 256)}
    else:
        tolerance = tol(dtypes.ACCUM_TOLERANCE, "fp32")
    acc = "int32" if integer else "fp32"
    return Case(
        id=f"dot/tiles-computed-a-{tag}-{m}x{n}x{k}-{bm}x{bn}x{bk}-w{warps}-s{stages}",
        kernel=computed_a_matmul_kernel, grid=((m + bm - 1) // bm, (n + bn - 1) // bn),
        constexprs={"BM": bm, "BN": bn, "BK": bk, "SCALE": scale, "ACC": getattr(tl, dtypes.LANG_NAME[acc])},
        inputs={"a_ptr": Rand("fp32", (m * k,), -1, 1), "b_ptr": Rand(tag, (k * n,), *((-8, 8) if integer else (-1, 1))),
                "M": m, "N": n, "K": k},
        outputs={"c_ptr": Out(acc, (m, n))}, reference=ref,
        options={"num_warps": warps, "num_stages": stages}, **tolerance)


def _ref(m, n, k, kmajor, integer, mmajor=False):
    def ref(a_ptr, b_ptr, **_):
        a = a_ptr.reshape(k, m).T if mmajor else a_ptr.reshape(m, k)
        b = b_ptr.reshape(n, k).T if kmajor else b_ptr.reshape(k, n)
        if integer:
            return (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
        return a @ b
    return ref


#: bf16x3 keeps about 16 of each operand's 24 mantissa bits (hi + mid), bf16x6 all of them
_TOL = {"tf32": dtypes.TF32_TOLERANCE, "tf32x3": (1e-4, 1e-4), "bf16x3": (1e-3, 1e-3), "bf16x6": (1e-4, 1e-4)}


def _case(tag, m, n, k, bm, bn, bk, warps=4, stages=3, precision="ieee", kmajor=False, mmajor=False, acc=None):
    integer = dtypes.is_int(tag)
    acc = acc or ("int32" if integer else "fp32")
    rng = (-8, 8) if integer else (-1, 1)
    name = (f"dot/tiles-{tag}{'-' + precision if tag == 'fp32' else ''}{'-acc' + acc if acc == 'fp16' else ''}"
            f"-{m}x{n}x{k}-{bm}x{bn}x{bk}-w{warps}-s{stages}{'-am' if mmajor else ''}{'-bk' if kmajor else ''}")
    if integer:
        tolerance = {}
    elif acc == "fp16":
        tolerance = tol(dtypes.ACCUM_TOLERANCE, "fp16")
    elif precision in _TOL:
        tolerance = dict(zip(("rtol", "atol"), _TOL[precision]))
    elif tag in ("fp8e4nv", "fp8e5"):
        # Hopper's fp8 wgmma accumulates in reduced precision (as Triton's default leaves it): the
        # error grows with K (seen: 3e-3 relative at K = 512)
        tolerance = {"rtol": 1e-3 * max(1, k // 128), "atol": 1e-2 * max(1, k // 256)}
    else:
        tolerance = tol(dtypes.ACCUM_TOLERANCE, "fp32")
    return Case(
        id=name, kernel=tiled_matmul_kernel, grid=((m + bm - 1) // bm, (n + bn - 1) // bn),
        constexprs={"BM": bm, "BN": bn, "BK": bk, "B_KMAJOR": kmajor, "PRECISION": precision,
                    "ACC": getattr(tl, dtypes.LANG_NAME[acc]), "A_MMAJOR": mmajor},
        inputs={"a_ptr": Rand(tag, (m * k,), *rng), "b_ptr": Rand(tag, (k * n,), *rng), "M": m, "N": n, "K": k},
        outputs={"c_ptr": Out(acc, (m, n))}, reference=_ref(m, n, k, kmajor, integer, mmajor),
        options={"num_warps": warps, "num_stages": stages}, **tolerance)


def _block_case(tag, m, n, k, bm, bn, bk, stages=3):
    return Case(
        id=f"dot/tiles-block-ptr-{tag}-{m}x{n}x{k}-{bm}x{bn}x{bk}-s{stages}", kernel=block_ptr_matmul_kernel,
        grid=((m + bm - 1) // bm, (n + bn - 1) // bn), constexprs={"BM": bm, "BN": bn, "BK": bk},
        inputs={"a_ptr": Rand(tag, (m * k,), -1, 1), "b_ptr": Rand(tag, (k * n,), -1, 1), "M": m, "N": n, "K": k},
        outputs={"c_ptr": Out("fp32", (m, n))}, reference=_ref(m, n, k, False, False),
        options={"num_stages": stages},
        # fp32 operands take the default input_precision, tf32
        **(dict(zip(("rtol", "atol"), dtypes.TF32_TOLERANCE)) if tag == "fp32" else tol(dtypes.ACCUM_TOLERANCE, "fp32")))


CASES = [
    _case("fp16", 200, 130, 300, 64, 64, 32),
    _case("fp16", 256, 256, 192, 128, 128, 64, stages=2),
    _case("fp16", 256, 512, 128, 128, 256, 64, warps=8),
    _case("fp16", 130, 96, 200, 64, 32, 32, stages=4),
    _case("fp16", 96, 80, 72, 32, 32, 16, stages=2),
    _case("fp16", 192, 128, 160, 64, 128, 32, kmajor=True),
    _case("bf16", 200, 130, 300, 64, 64, 32, stages=4),
    _case("bf16", 128, 128, 96, 128, 64, 32, stages=1),
    _case("bf16", 70, 200, 100, 64, 128, 64, warps=8, stages=2),
    _case("fp32", 200, 130, 100, 64, 64, 32, precision="tf32"),
    _case("fp32", 96, 64, 80, 64, 32, 16, precision="tf32x3"),
    _case("fp32", 128, 64, 128, 64, 64, 32, precision="tf32", kmajor=True),
    _case("fp32", 100, 70, 90, 64, 32, 32, precision="ieee"),
    _case("int8", 200, 130, 300, 64, 64, 64),
    _case("int8", 128, 128, 128, 64, 64, 64, kmajor=True),
    _case("fp8e4nv", 200, 130, 300, 64, 64, 64),
    _case("fp8e4nv", 128, 128, 256, 64, 128, 64, kmajor=True),
    _case("fp8e5", 128, 96, 160, 64, 32, 64, kmajor=True),
    # the wgmma variants: fp16 accumulators, 8-bit and tf32 operands read transposed (A M-contiguous, B
    # N-contiguous), tf32x3, M = 64 rows for 4 and 8 warps; and the mma.sync fp16 accumulator (M = 32)
    _case("fp16", 256, 192, 256, 64, 64, 32, acc="fp16"),
    _case("fp16", 256, 256, 128, 128, 128, 64, warps=8, acc="fp16"),
    _case("fp16", 130, 100, 200, 64, 64, 32, stages=2, kmajor=True, mmajor=True, acc="fp16"),
    _case("fp16", 96, 96, 128, 32, 32, 32, acc="fp16"),
    _case("fp16", 128, 256, 128, 64, 128, 64, warps=8),
    _case("fp16", 200, 130, 160, 64, 64, 32, mmajor=True),
    _case("int8", 256, 256, 128, 128, 128, 64, warps=8),
    _case("int8", 130, 200, 192, 64, 64, 64, mmajor=True),
    _case("int8", 128, 64, 96, 64, 32, 32, stages=2, mmajor=True, kmajor=True),
    _case("fp32", 128, 64, 96, 64, 16, 32, precision="tf32"),
    _case("fp32", 130, 96, 70, 64, 32, 16, precision="tf32", mmajor=True),
    _case("fp32", 256, 128, 128, 128, 128, 64, warps=8, stages=2, precision="tf32x3"),
    _case("fp8e5", 200, 130, 300, 64, 64, 64),
    _case("fp8e4nv", 128, 128, 128, 64, 64, 64, mmajor=True),
    _case("fp8e4nv", 128, 128, 128, 64, 64, 64, acc="fp16"),
    # A computed in registers (attention's P): 16-bit and 8-bit operands, 4 and 8 warps, ragged edges
    _computed_a_case("fp16", 200, 130, 160, 64, 64, 32),
    _computed_a_case("bf16", 128, 128, 128, 128, 128, 64, warps=8),
    _computed_a_case("fp8e4nv", 200, 130, 256, 64, 64, 64),
    _computed_a_case("fp8e4nv", 256, 256, 256, 128, 128, 64, warps=8),
    _computed_a_case("fp8e5", 128, 96, 192, 64, 32, 64, stages=2),
    _computed_a_case("int8", 130, 200, 192, 64, 64, 64),
    _block_case("fp16", 200, 130, 300, 64, 64, 32),
    _block_case("fp32", 200, 130, 300, 64, 64, 32),
    _block_case("bf16", 130, 200, 96, 64, 64, 32, stages=4),
    # the benchmark's tiles over long K loops (the pipelined main loop in its steady state): K a
    # multiple of 16 (mask compares shared along the mask's constancy) and of 8 only
    _case("fp16", 256, 256, 640, 128, 256, 64, warps=8),
    _case("fp16", 256, 256, 632, 128, 256, 64, warps=8),
    _case("fp16", 256, 256, 512, 128, 128, 64, stages=4),
    _case("bf16", 256, 256, 512, 128, 256, 64, warps=8),
    _case("fp8e4nv", 256, 256, 512, 128, 256, 128, warps=8, kmajor=True),
    _case("fp32", 256, 256, 256, 128, 128, 32, stages=4, precision="tf32"),
    # fp32 as sums of bf16 products (bf16 dots on the matrix units): wgmma tiles (M = 64/128, 4 and
    # 8 warps, either operand order) and mma.sync ones (M = 32), ragged edges, K loops
    _case("fp32", 96, 64, 80, 64, 32, 16, precision="bf16x3"),
    _case("fp32", 200, 130, 100, 64, 64, 32, precision="bf16x6", kmajor=True),
    _case("fp32", 130, 96, 70, 32, 32, 32, stages=2, precision="bf16x3", mmajor=True),
    _case("fp32", 100, 70, 90, 32, 32, 16, precision="bf16x6"),
    _case("fp32", 256, 128, 128, 128, 128, 64, warps=8, stages=2, precision="bf16x6"),
]
