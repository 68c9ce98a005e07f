"""One attention forward launch per framework (for ncu): d=64, N_CTX=4096, 64x64 tiles, 4 warps, 3 stages.

    ncu --clock-control none -k regex:attn_fwd python bench/profile_attention.py"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_matmul import attn_run  # noqa: E402
from kernel_files import load_kernels  # noqa: E402

import tritium  # noqa: E402
import tritium.language as ttl  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

q, k, v = (torch.randn(8, 16, 4096, 64, device="cuda", dtype=torch.float16) for _ in range(3))
o = torch.empty_like(q)
for name, mod in (("tritium", load_kernels("p_tritium", tritium, ttl, "matmul_kernels.py")),
                  ("triton", load_kernels("p_triton", triton, tl, "matmul_kernels.py"))):
    for causal in (False,):
        attn_run(mod, q, k, v, o, causal, 64, 64, 4, 3)  # compile
        torch.cuda.synchronize()
        attn_run(mod, q, k, v, o, causal, 64, 64, 4, 3)
        torch.cuda.synchronize()
