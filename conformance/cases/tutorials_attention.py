"""A small fused-attention forward pass, written as the fused-attention tutorial's block-pointer
forward kernel writes it; and the tutorial-style pointer kernel at the tiles that take the matrix
units (128x64 and 64x64 blocks, head dim 64 and 128, causal and not, one to eight K/V blocks per
program, two to four pipeline stages)."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Out, Rand


from tritium.examples.attention import _fwd_kernel  # noqa: E402

Z, H, N_CTX, D = 1, 2, 64, 16
SM_SCALE = 0.5


def _attention(Q, K, V, causal):
    """Softmax attention in float64, in base 2 like the kernel; also returns log2-sum-exp2."""
    q = Q.reshape(Z * H, N_CTX, D)
    k = K.reshape(Z * H, N_CTX, D)
    v = V.reshape(Z * H, N_CTX, D)
    s = (q @ k.transpose(0, 2, 1)) * (SM_SCALE * 1.44269504)
    if causal:
        s = np.where(np.tril(np.ones((N_CTX, N_CTX), dtype=bool))[None], s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp2(s - m)
    lse = (m[..., 0] + np.log2(p.sum(-1)))
    return (p / p.sum(-1, keepdims=True)) @ v, lse


def _case(causal, block):
    strides = {}
    for name, (a, b) in (("q", ("m", "k")), ("k", ("n", "k")), ("v", ("k", "n")), ("o", ("m", "n"))):
        strides.update({f"stride_{name}z": H * N_CTX * D, f"stride_{name}h": N_CTX * D,
                        f"stride_{name}{a}": D, f"stride_{name}{b}": 1})
    return Case(
        id=f"tutorials/flash-attention-fwd-{'causal' if causal else 'full'}-block{block}", kernel=_fwd_kernel,
        grid=(triton.cdiv(N_CTX, block), Z * H),
        constexprs={"BLOCK_M": block, "BLOCK_DMODEL": D, "BLOCK_N": block, "IS_CAUSAL": causal},
        inputs={"Q": Rand("fp16", (Z * H * N_CTX * D,), -1, 1), "K": Rand("fp16", (Z * H * N_CTX * D,), -1, 1),
                "V": Rand("fp16", (Z * H * N_CTX * D,), -1, 1), "sm_scale": SM_SCALE,
                "Z": Z, "H": H, "N_CTX": N_CTX, **strides},
        outputs={"L": Out("fp32", (Z * H * N_CTX,)), "Out": Out("fp16", (Z * H * N_CTX * D,))},
        # q is rounded to fp16 after scaling and p before the second dot: allow a few fp16 ulps
        reference=lambda Q, K, V: tuple(reversed([r.ravel() for r in _attention(Q, K, V, causal)])),
        rtol=2e-2, atol=2e-2)


@triton.jit
def attn_fwd_kernel(Q, K, V, Out, sm_scale, stride_h, stride_m, N_CTX, HEAD_DIM: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off = tl.program_id(1).to(tl.int64) * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + off + offs_m[:, None] * stride_m + offs_d[None, :])
    k_ptrs = K + off + offs_n[None, :] * stride_m + offs_d[:, None]
    v_ptrs = V + off + offs_n[:, None] * stride_m + offs_d[None, :]
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        k = tl.load(k_ptrs + start_n * stride_m)
        qk = tl.dot(q, k)
        if CAUSAL:
            qk = tl.where(offs_m[:, None] >= (start_n + offs_n[None, :]), qk * qk_scale, -1.0e6)
        else:
            qk = qk * qk_scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptrs + start_n * stride_m)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]  # the first alpha is exp2(-inf) = 0: l_i's initial 1 is gone
    tl.store(Out + off + offs_m[:, None] * stride_m + offs_d[None, :], acc.to(Out.type.element_ty))


def _pointer_ref(heads, n_ctx, d, causal):
    def ref(Q, K, V, **_):
        q, k, v = (x.reshape(heads, n_ctx, d).astype(np.float64) for x in (Q, K, V))
        s = (q @ k.transpose(0, 2, 1)) * SM_SCALE
        if causal:
            s = np.where(np.tril(np.ones((n_ctx, n_ctx), dtype=bool))[None], s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        return ((p / p.sum(-1, keepdims=True)) @ v).ravel()
    return ref


def _pointer_case(d, causal, n_ctx=512, heads=2, bm=128, bn=64, warps=4, stages=3):
    size = heads * n_ctx * d
    return Case(
        id=f"tutorials/attention-fwd-d{d}-{'causal' if causal else 'full'}-{n_ctx}-{bm}x{bn}-w{warps}-s{stages}",
        kernel=attn_fwd_kernel, grid=(n_ctx // bm, heads),
        constexprs={"HEAD_DIM": d, "BLOCK_M": bm, "BLOCK_N": bn, "CAUSAL": causal},
        inputs={"Q": Rand("fp16", (size,), -1, 1), "K": Rand("fp16", (size,), -1, 1), "V": Rand("fp16", (size,), -1, 1),
                "sm_scale": SM_SCALE, "stride_h": n_ctx * d, "stride_m": d, "N_CTX": n_ctx},
        outputs={"Out": Out("fp16", (size,))}, reference=_pointer_ref(heads, n_ctx, d, causal),
        options={"num_warps": warps, "num_stages": stages}, rtol=2e-2, atol=2e-2)


CASES = [_case(False, 16), _case(True, 16), _case(True, 32)] + [
    _pointer_case(d, causal) for d in (64, 128) for causal in (False, True)] + [
    # 64-row tiles: loops of 1 to 4 K/V blocks (causal: one more each program), 2 to 4 stages
    _pointer_case(d, causal, n_ctx=n, bm=64, stages=s)
    for d in (64, 128) for causal in (False, True) for n, s in ((64, 3), (192, 2), (256, 4))]
