"""Host wrappers and numpy references for the tutorial examples."""
from __future__ import annotations

import numpy as np

import tritium as triton

from .attention import _fwd_kernel
from .fused_softmax import softmax_kernel
from .layer_norm import _layer_norm_fwd_fused
from .matmul import matmul_kernel
from .vector_add import add_kernel


def _rel_err(got, ref) -> float:
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    if not np.all(np.isfinite(got)):
        return float("inf")  # a poisoned (unwritten) element or a NaN
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


class _Mem:
    """Moves arrays to the backend's memory and back."""

    def __init__(self, backend):
        self.drv = backend.driver()
        self.name = backend.name

    def put(self, a):
        return self.drv.from_numpy(np.ascontiguousarray(a))

    def get(self, d):
        self.drv.synchronize()
        return np.asarray(self.drv.to_numpy(d))


def vector_add(backend, rng):
    n = 98_432
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    m = _Mem(backend)
    dx, dy, out = m.put(x), m.put(y), m.put(np.full(n, np.nan, np.float32))
    grid = lambda meta: (triton.cdiv(n, meta['BLOCK_SIZE']),)  # noqa: E731
    add_kernel[grid](dx, dy, out, n, BLOCK_SIZE=1024, backend=backend.name)
    return f"n={n}", _rel_err(m.get(out), x.astype(np.float64) + y), 1e-6


def fused_softmax(backend, rng):
    rows, cols = 64, 781
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    m = _Mem(backend)
    dx, out = m.put(x), m.put(np.full((rows, cols), np.nan, np.float32))
    block = triton.next_power_of_2(cols)
    softmax_kernel[(min(rows, 16),)](out, dx, cols, cols, rows, cols, BLOCK_SIZE=block, num_stages=2,
                                     num_warps=4, backend=backend.name)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(1, keepdims=True))
    return f"{rows}x{cols}", _rel_err(m.get(out), e / e.sum(1, keepdims=True)), 1e-5


def layer_norm(backend, rng):
    rows, cols, eps = 32, 1151, 1e-5
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, cols).astype(np.float32)
    b = rng.uniform(-1, 1, cols).astype(np.float32)
    m = _Mem(backend)
    dx, dw, db = m.put(x), m.put(w), m.put(b)
    y = m.put(np.full((rows, cols), np.nan, np.float32))
    mean, rstd = m.put(np.full(rows, np.nan, np.float32)), m.put(np.full(rows, np.nan, np.float32))
    _layer_norm_fwd_fused[(rows,)](dx, y, dw, db, mean, rstd, cols, cols, eps, BLOCK_SIZE=512, num_warps=4,
                                   backend=backend.name)
    xd = x.astype(np.float64)
    mu = xd.mean(1)
    rs = 1 / np.sqrt(xd.var(1) + eps)
    ref = (xd - mu[:, None]) * rs[:, None] * w + b
    err = max(_rel_err(m.get(y), ref), _rel_err(m.get(mean), mu), _rel_err(m.get(rstd), rs))
    return f"{rows}x{cols}", err, 1e-5


def matmul(backend, rng):
    M, N, K = 96, 80, 72
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    m = _Mem(backend)
    da, db, c = m.put(a), m.put(b), m.put(np.full((M, N), np.nan, np.float16))
    grid = lambda META: (triton.cdiv(M, META['BLOCK_SIZE_M']) * triton.cdiv(N, META['BLOCK_SIZE_N']),)  # noqa: E731
    matmul_kernel[grid](da, db, c, M, N, K, K, 1, N, 1, N, 1, ACTIVATION="", backend=backend.name)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    return f"{M}x{N}x{K} fp16", _rel_err(m.get(c), ref), 2e-3


def attention(backend, rng):
    Z, H, N_CTX, D, BLOCK = 1, 2, 64, 16, 16
    q, k, v = (rng.uniform(-1, 1, (Z, H, N_CTX, D)).astype(np.float16) for _ in range(3))
    sm_scale = 0.5
    m = _Mem(backend)
    dq, dk, dv = m.put(q), m.put(k), m.put(v)
    o = m.put(np.full((Z, H, N_CTX, D), np.nan, np.float16))
    lse = m.put(np.full((Z * H, N_CTX), np.nan, np.float32))
    s = [H * N_CTX * D, N_CTX * D, D, 1]
    _fwd_kernel[(triton.cdiv(N_CTX, BLOCK), Z * H)](dq, dk, dv, sm_scale, lse, o, *s, *s, *s, *s, Z, H, N_CTX,
                                                    BLOCK_M=BLOCK, BLOCK_DMODEL=D, BLOCK_N=BLOCK, IS_CAUSAL=True,
                                                    backend=backend.name)
    qd, kd, vd = (t.astype(np.float64) for t in (q, k, v))
    sc = qd @ kd.swapaxes(-1, -2) * sm_scale
    sc = np.where(np.tril(np.ones((N_CTX, N_CTX), bool)), sc, -np.inf)
    p = np.exp(sc - sc.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ vd
    return f"causal {Z}x{H}x{N_CTX}x{D}", _rel_err(m.get(o), ref), 1e-2


EXAMPLES = [("vector add", vector_add), ("fused softmax", fused_softmax), ("layer norm forward", layer_norm),
            ("matmul (grouped, autotuned)", matmul), ("flash attention forward", attention)]
