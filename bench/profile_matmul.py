"""One 4096^3 fp16 matmul launch per framework (for ncu), 128x256x64 tiles, 8 warps, 3 stages.

    ncu --clock-control none -k regex:matmul_kernel python bench/profile_matmul.py"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_matmul import run_matmul  # noqa: E402
from kernel_files import load_kernels  # noqa: E402

import tritium  # noqa: E402
import tritium.language as ttl  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

a, b = (torch.randn(4096, 4096, device="cuda", dtype=torch.float16) for _ in range(2))
c = torch.empty_like(a)
for name, mod in (("tritium", load_kernels("p_tritium", tritium, ttl, "matmul_kernels.py")),
                  ("triton", load_kernels("p_triton", triton, tl, "matmul_kernels.py"))):
    run_matmul(mod, a, b, c, (128, 256, 64, 8, 8, 3))
    torch.cuda.synchronize()
