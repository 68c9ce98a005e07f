"""One matmul launch each for Tritium and Triton (after two warm-up launches each), for Nsight
Compute: ``ncu --clock-control none -k regex:matmul_kernel --launch-skip 4 --launch-count 2
python bench/ncu_matmul.py [dtype size BM BN BK warps stages]`` profiles Tritium's then Triton's.
``dtype`` is fp16, bf16, tf32 (fp32 inputs, B row-major: N-contiguous, as ``a @ b`` of two plain
torch tensors) or tf32kb (B K-contiguous, as bench_matmul.py's tf32 row)."""
from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_files import load_kernels  # noqa: E402
from bench_matmul import run_matmul, rel_err  # noqa: E402


def main(argv) -> int:
    import tritium
    import tritium.language as ttl
    import triton
    import triton.language as tl
    name = argv[0] if argv else "fp16"
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32, "tf32kb": torch.float32}[name]
    size = int(argv[1]) if len(argv) > 1 else 4096
    cfg = tuple(int(x) for x in argv[2:7]) if len(argv) > 6 else (128, 256, 64, 8, 3)
    cfg = cfg[:3] + (8,) + cfg[3:]
    impls = [load_kernels("mm_tritium", tritium, ttl, "matmul_kernels.py"),
             load_kernels("mm_triton", triton, tl, "matmul_kernels.py")]
    a = torch.randn(size, size, device="cuda", dtype=dt)
    b = torch.randn(size, size, device="cuda", dtype=dt)
    if name == "tf32kb":
        b = b.T  # (K, N) view, K contiguous
    ref = (a.float() @ b.float()).double()
    c = torch.empty((size, size), device="cuda", dtype=dt)
    for k in impls:
        for _ in range(2):
            c.fill_(float("nan"))
            run_matmul(k, a, b, c, cfg)
        torch.cuda.synchronize()
        assert rel_err(c, ref) < 1e-2
    for k in impls:
        run_matmul(k, a, b, c, cfg)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
