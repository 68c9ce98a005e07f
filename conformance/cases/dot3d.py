"""Batched (3-D) tl.dot: ``[B, M, K] @ [B, K, N]`` tiles of one program, as Triton's own batched
dot test launches them (M, N of 64 in 32x32 blocks, or 32 in one block; K whole; B 1..8; 1..16
warps, so warps both outnumber and undershoot the batch), for fp16 -> fp16 (the tensor cores
accumulate in fp16), fp16/bf16 -> fp32, int8 -> int32 and fp32 with tf32 / tf32x3; the same
dot accumulated over a K loop; and blocks smaller than a tensor-core tile (1x32, 32x2, 8x8)."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Out, Rand, tol


@triton.jit
def batched_dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BB: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr, PRECISION: tl.constexpr, OUT: tl.constexpr):
    # one program: every batch entry of one BM x BN output block
    rb = tl.arange(0, BB)[:, None, None]
    rm = (tl.program_id(0) * BM + tl.arange(0, BM))[None, :, None]
    rn = (tl.program_id(1) * BN + tl.arange(0, BN))[None, None, :]
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rb * (M * K) + rm * K + rk[None, None, :])
    b = tl.load(b_ptr + rb * (K * N) + rk[None, :, None] * N + rn)
    c = tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT)
    tl.store(c_ptr + rb * (M * N) + rm * N + rn, c)


@triton.jit
def batched_dot_loop_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BB: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                            BK: tl.constexpr, PRECISION: tl.constexpr, OUT: tl.constexpr):
    rb = tl.arange(0, BB)[:, None, None]
    rm = (tl.program_id(0) * BM + tl.arange(0, BM))[None, :, None]
    rn = (tl.program_id(1) * BN + tl.arange(0, BN))[None, None, :]
    rk = tl.arange(0, BK)
    acc = tl.zeros((BB, BM, BN), dtype=OUT)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rb * (M * K) + rm * K + (k0 + rk)[None, None, :])
        b = tl.load(b_ptr + rb * (K * N) + (k0 + rk)[None, :, None] * N + rn)
        acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=OUT)
    tl.store(c_ptr + rb * (M * N) + rm * N + rn, acc)


def _ref(bsz, m, n, k, integer):
    def ref(a_ptr, b_ptr, **_):
        a, b = a_ptr.reshape(bsz, m, k), b_ptr.reshape(bsz, k, n)
        if integer:
            return np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(np.int32)
        return np.matmul(a, b)
    return ref


#: fp16 accumulation rounds the running sum to fp16 once per 16-deep instruction step: at the
#: scale of these inputs (sums of up to 128 products of [-1, 1] values) that stays well inside
#: Triton's own tolerance for this test, 1e-2 relative and absolute
FP16_ACC_TOLERANCE = (1e-2, 1e-2)


def _case(tag, out, bsz, m, n, k, bm, bn, warps, precision="ieee", loop=False):
    integer = dtypes.is_int(tag)
    bk = 32 if loop else k
    prec = f"-{precision}" if tag == "fp32" else ""
    name = (f"dot3d/{tag}-{out}{prec}-b{bsz}-{m}x{n}x{k}-{bm}x{bn}{'x' + str(bk) + '-loop' if loop else ''}"
            f"-w{warps}")
    if integer:
        tolerance = {}
    elif out == "fp16":
        tolerance = dict(zip(("rtol", "atol"), FP16_ACC_TOLERANCE))
    elif precision == "tf32":
        tolerance = dict(zip(("rtol", "atol"), dtypes.TF32_TOLERANCE))
    else:
        tolerance = tol(dtypes.ACCUM_TOLERANCE, "fp32")
    rng = (-128, 127) if integer else (-1, 1)
    return Case(
        id=name, kernel=batched_dot_loop_kernel if loop else batched_dot_kernel, grid=(m // bm, n // bn),
        constexprs={"BB": bsz, "BM": bm, "BN": bn, "BK": bk, "PRECISION": precision,
                    "OUT": getattr(tl, dtypes.LANG_NAME[out])},
        inputs={"a_ptr": Rand(tag, (bsz * m * k,), *rng), "b_ptr": Rand(tag, (bsz * k * n,), *rng),
                "M": m, "N": n, "K": k},
        outputs={"c_ptr": Out(out, (bsz, m, n))}, reference=_ref(bsz, m, n, k, integer),
        options={"num_warps": warps}, **tolerance)


_PAIRS = [("fp16", "fp16", "ieee"), ("fp16", "fp32", "ieee"), ("int8", "int32", "ieee"), ("bf16", "fp32", "ieee"),
          ("fp32", "fp32", "tf32")]

#: (batch, warps): fewer warps than batch entries (registers wrap the batch), as many, and more
#: (warps repeat entries); one warp on all 8 entries only for fp16 (it spills: slow to build)
_SPREAD = ((1, 1), (1, 4), (1, 16), (2, 1), (2, 4), (2, 16), (4, 1), (4, 4), (4, 16), (8, 4), (8, 16))

CASES = (
    # Triton's shapes: 64x64x64 in 32x32 blocks
    [_case(t, o, bsz, 64, 64, 64, 32, 32, w, p) for t, o, p in _PAIRS for bsz, w in _SPREAD]
    # fp16 accumulation with the other warp counts, and deeper K (more fp16 roundings)
    + [_case("fp16", "fp16", bsz, 64, 64, 64, 32, 32, w) for bsz, w in ((8, 1), (8, 2), (8, 8), (1, 2), (4, 8))]
    + [_case("fp16", "fp16", bsz, 64, 64, 128, 32, 32, w) for bsz, w in ((8, 4), (4, 1), (2, 16))]
    # one 32x32x32 block
    + [_case(t, o, bsz, 32, 32, 32, 32, 32, w, p) for t, o, p in _PAIRS for bsz, w in ((1, 4), (4, 2))]
    # Triton's large-block case, tf32x3, and the dot inside a K loop (the accumulator carried)
    + [_case("fp16", "fp16", 4, 128, 128, 64, 64, 64, 4), _case("fp32", "fp32", 2, 64, 64, 64, 32, 32, 4, "tf32x3"),
       _case("fp16", "fp16", 2, 64, 64, 128, 32, 32, 4, loop=True),
       _case("fp16", "fp32", 4, 64, 64, 96, 32, 32, 8, loop=True),
       _case("int8", "int32", 8, 32, 32, 128, 32, 32, 4, loop=True)]
    # blocks below a tensor-core tile (Triton's 1x32, 32x2 and 8x8 blocks of a 32x32x32 dot): FMA on NVIDIA
    + [_case(t, o, bsz, 32, 32, 32, bm, bn, w, p) for t, o, p in (("fp16", "fp32", "ieee"), ("fp32", "fp32", "ieee"))
       for bm, bn in ((1, 32), (32, 2), (8, 8)) for bsz, w in ((2, 4), (8, 1))]
    + [_case(t, o, 4, 32, 32, 32, bm, bn, 2, p) for t, o, p in (("fp16", "fp16", "ieee"), ("int8", "int32", "ieee"),
                                                                   ("fp32", "fp32", "tf32"))
       for bm, bn in ((1, 32), (8, 8))]
)
