"""One flash-attention forward launch each for Tritium and Triton (after two warm-up launches each),
for Nsight Compute: ``ncu --clock-control none -k regex:attn_fwd --launch-skip 6 --launch-count 2
python bench/ncu_attention.py [d n_ctx BLOCK_M BLOCK_N warps stages causal]``."""
from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_files import load_kernels  # noqa: E402
from bench_matmul import attn_ref, attn_run, rel_err  # noqa: E402


def main(argv) -> int:
    import tritium
    import tritium.language as ttl
    import triton
    import triton.language as tl
    d, n_ctx, bm, bn, w, s, causal = ([int(x) for x in argv[:6]] + [int(argv[6]) if len(argv) > 6 else 0]
                                      if argv else [64, 16384, 128, 64, 4, 3, 0])
    impls = [load_kernels("mm_tritium", tritium, ttl, "matmul_kernels.py"),
             load_kernels("mm_triton", triton, tl, "matmul_kernels.py")]
    z, h = max(1, 16384 // n_ctx) * 2, 16
    q, kk, v = (torch.randn(z, h, n_ctx, d, device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    ref = attn_ref(q[:1, :1, :2048], kk[:1, :1, :2048], v[:1, :1, :2048], bool(causal))
    for k in impls:
        for _ in range(2):
            o.fill_(float("nan"))
            attn_run(k, q, kk, v, o, bool(causal), bm, bn, w, s)
        torch.cuda.synchronize()
        assert not torch.isnan(o).any()
        small = torch.empty_like(q[:1, :1, :2048])
        attn_run(k, q[:1, :1, :2048].contiguous(), kk[:1, :1, :2048].contiguous(), v[:1, :1, :2048].contiguous(),
                 small, bool(causal), bm, bn, w, s)
        assert rel_err(small, ref) < 1e-2
    for k in impls:
        attn_run(k, q, kk, v, o, bool(causal), bm, bn, w, s)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
