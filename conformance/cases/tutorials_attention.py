"""A small fused-attention forward pass, written as the fused-attention tutorial's block-pointer
forward kernel writes it."""
import numpy as np

import tritium as triton

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


CASES = [_case(False, 16), _case(True, 16), _case(True, 32)]
