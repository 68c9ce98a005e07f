"""One persistent-matmul launch each for Tritium and Triton (after two checked warm-up launches
each), for Nsight Compute, which locks the clocks and flushes the caches before each profiled
kernel, so the two kernels' cycles compare without the power cap's clock changes:

    ncu --clock-control base --cache-control all -k regex:persistent --launch-skip 4 --launch-count 2 \\
        --metrics gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__inst_executed.sum \\
        python bench/ncu_persistent.py [version size]

``version`` is one of ``bench_persistent.VERSIONS`` (default ``plain``), ``size`` the square
problem (default 4096); config 128x256x64, 8 warps, 3 stages, fp16.  Tritium is profiled first."""
from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_persistent import frameworks, launcher  # noqa: E402


def main(argv) -> int:
    version = argv[0] if argv else "plain"
    size = int(argv[1]) if len(argv) > 1 else 4096
    cfg = (128, 256, 64, 8, 8, 3)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    impls = frameworks()
    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    ref = a.float() @ b.float().T
    c = torch.empty(size, size, device="cuda", dtype=torch.float16)
    runs = []
    for name in ("tritium", "triton"):
        k, desc = impls[name]
        run = launcher(k, desc, version, a, b, c, cfg, sms)
        for _ in range(2):
            c.fill_(float("nan"))
            run()
            torch.cuda.synchronize()
            err = ((c.float() - ref).norm() / ref.norm()).item()
            assert err < 1e-2, f"{name} {version}: relative error {err}"
        runs.append(run)
    for run in runs:
        run()
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
