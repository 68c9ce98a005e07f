"""Where the host time of a launch goes, piece by piece, on a GPU host (``bench_nvidia.py``'s
launch row gives the whole; this splits it).

    python bench/probe_launch.py [--rounds 15] [--batch 200]

Every row times ``batch`` calls of one piece back to back and stops the clock *before* the
``torch.cuda.synchronize()`` that follows (untimed): with fewer launches queued than the driver's
queue holds, the figure is the host's cost alone, not the GPU's rate of running tiny kernels.
Rows are interleaved round by round; the table gives the median over rounds and the minimum, in
microseconds per call.

Rows: the whole ``kernel[grid](x, y, out, n, alpha, BLOCK=128)``; the direct launcher alone
(``Direct``: thread, device and stream checks, slot writes, ``cuLaunchKernel``) with the values
already read; a bare ``cuda.bindings`` ``cuLaunchKernel`` on the same function and parameter
array; ``torch.add``; and the pieces with no launch: the three tensors' ``data_ptr()`` /
``dtype`` / ``get_device()``, and torch's stream and device queries.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_files import load_kernels  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--batch", type=int, default=200)
    args = ap.parse_args()
    import torch

    import tritium
    import tritium.language as tl
    from cuda.bindings import driver as cu

    kern = load_kernels("probe_launch_k", tritium, tl).axpy_kernel
    n = 1024
    x = torch.randn(n, device="cuda")
    y, out = torch.randn_like(x), torch.full_like(x, float("nan"))
    for _ in range(3):
        kern[(8,)](x, y, out, n, 2.0, BLOCK=128)
    torch.cuda.synchronize()
    err = (out - (2.0 * x + y)).abs().max().item()
    if err > 1e-5:
        print(f"wrong result: max error {err}")
        return 1

    from tritium.runtime import torch_reader
    reader = torch_reader.wait(120)   # the steady state: tensor fields read in C++ once built
    binder = kern._direct
    entry = next(iter(binder.cache.values()))
    direct = entry[0]
    values = (x.data_ptr(), y.data_ptr(), out.data_ptr(), n, 2.0)
    compiled = entry[1]
    launcher = compiled._launchers[x.device.index]
    f, params, block = launcher.function, launcher.params.address, launcher.state.block
    f = f if isinstance(f, cu.CUfunction) else cu.CUfunction(int(f))
    stream = cu.CUstream(torch.cuda.current_stream().cuda_stream)
    raw, getdev = torch._C._cuda_getCurrentRawStream, torch._C._cuda_getDevice

    def tensors():
        x.data_ptr(), x.dtype, x.get_device()
        y.data_ptr(), y.dtype, y.get_device()
        out.data_ptr(), out.dtype, out.get_device()

    rows = {
        "kernel[grid](x, y, out, n, alpha, BLOCK=128)": lambda: kern[(8,)](x, y, out, n, 2.0, BLOCK=128),
        "binder alone: kern.run-free call of the C Binder": None,
        "direct launcher alone (values read)": lambda: direct((8,), *values),
        "bare cuda.bindings cuLaunchKernel": lambda: cu.cuLaunchKernel(f, 8, 1, 1, block, 1, 1, 0, stream, params, 0),
        "torch.add(x, y, out=out)": lambda: torch.add(x, y, out=out),
        "3 tensors: data_ptr(), dtype, get_device() (no launch)": tensors,
        "stream + device queries (no launch)": lambda: (raw(0), getdev()),
        "empty Python call (loop floor)": lambda: None,
    }
    bound = kern[(8,)]
    rows["binder alone: kern.run-free call of the C Binder"] = lambda: bound(x, y, out, n, 2.0, BLOCK=128)
    per = {name: [] for name in rows}
    names = list(rows)
    for r in range(args.rounds):
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            fn = rows[name]
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(args.batch):
                fn()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            per[name].append((t1 - t0) / args.batch * 1e6)
    out.fill_(float("nan"))
    kern[(8,)](x, y, out, n, 2.0, BLOCK=128)
    torch.cuda.synchronize()
    err = (out - (2.0 * x + y)).abs().max().item()
    print(f"host {os.uname().nodename}, {torch.cuda.get_device_name()}, python {sys.version.split()[0]}, "
          f"torch {torch.__version__}; tensor fields {'in C++' if reader else 'through Python'}; batches of {args.batch}, {args.rounds} rounds; final check max error {err:.1e}")
    print(f"{'piece':60s} {'median us':>10s} {'min us':>8s}")
    for name, v in per.items():
        print(f"{name:60s} {statistics.median(v):10.2f} {min(v):8.2f}")
    return 0 if err <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
