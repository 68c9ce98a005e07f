"""Host cost of a launch, measured without a GPU: the NVIDIA plugin's real launch path (generated
binder, device and stream choice, generated launcher, the ``cuda.bindings`` call) against a fake
libcuda.so.1 (``plugins/nvidia/tests/fakecuda``, built with the system C compiler) whose
cuLaunchKernel records the launch and returns.

    python bench/bench_launch_cpu.py [--rounds 15] [--per-round 20000]

What it cannot show: the real driver's own time inside cuLaunchKernel (about 2.5 us of the
2.8 us "bare cuda-python launch" measured on the H200 host; here the bare call is a few hundred
ns).  torch here is a CPU build: CPU tensors stand in for CUDA tensors (the bench tells the
plugin to treat them as device 0's memory; attribute costs are the same), and the torch stream
query is replaced by the driver's own query.  Compare figures from one machine only.
"""
from __future__ import annotations

import argparse
import ctypes
import importlib.util
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "plugins", "nvidia", "tests"))


def timed(fn, rounds: int, per_round: int) -> tuple[float, float]:
    for _ in range(1000):
        fn()
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(per_round):
            fn()
        samples.append((time.perf_counter() - t0) / per_round * 1e6)
    return statistics.median(samples), min(samples)


def pretend_cpu_tensors_are_cuda(torch) -> None:
    """Let CPU tensors through the plugin as CUDA tensors of device 0: ``is_cuda`` reads True (a
    Python property: about 40 ns slower than torch's own attribute, so the figures err high)
    and the plugin places them on device 0."""
    from tritium_nvidia import memory

    torch.Tensor.is_cuda = property(lambda self: True)
    memory._torch_device = lambda t: 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--per-round", type=int, default=20000)
    args = ap.parse_args()
    import fakecuda
    fake = fakecuda.load()
    if fake is None:
        print("no C compiler: cannot build the fake libcuda; nothing measured")
        return 1
    os.environ["TRITIUM_BACKEND"] = "nvidia"
    import torch

    import tritium
    import tritium.language as tl
    from cuda.bindings import driver as cu
    pretend_cpu_tensors_are_cuda(torch)
    # As torch does in a CUDA program: device 0's primary context current on this thread.
    from tritium_nvidia.plugin import nvidia_plugin as plugin
    plugin.tritium_driver("nvidia").set_current_device(0)

    spec = importlib.util.spec_from_file_location("bench_k_cpu", os.path.join(HERE, "tutorial_kernels.py"))
    k = importlib.util.module_from_spec(spec)
    k.triton, k.tl = tritium, tl
    spec.loader.exec_module(k)
    kern = k.axpy_kernel
    n = 1024
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    kern[(8,)](x, y, out, n, 2.0, BLOCK=128)  # compile (cubin through the real toolchain), load, launch
    before = fake.count.value
    kern[(8,)](x, y, out, n, 2.0, BLOCK=128)
    assert fake.count.value == before + 1, "the fast path did not reach cuLaunchKernel"
    assert fake.last.params[0] == x.data_ptr() and fake.last.params[3] & 0xFFFFFFFF == n

    compiled = next(iter(kern.kernel_cache.values()))
    compiled = compiled[0] if isinstance(compiled, tuple) else compiled
    device = 0
    launch = compiled._launchers[device]
    params = launch.params.address
    fn = getattr(launch, "function", None)
    rows = []
    rounds, per = args.rounds, args.per_round
    rows.append(("kernel[grid](x, y, out, n, alpha, BLOCK=128)",
                 timed(lambda: kern[(8,)](x, y, out, n, 2.0, BLOCK=128), rounds, per)))
    grid = (8, 1, 1)
    a = (x, y, out, n, 2.0)
    rows.append(("launcher(grid, stream, args) alone", timed(lambda: launch(grid, 0, a), rounds, per)))
    if fn is not None:
        s = cu.CUstream(0)
        f = cu.CUfunction(int(fn)) if not isinstance(fn, cu.CUfunction) else fn
        rows.append(("bare cuda.bindings cuLaunchKernel (fake driver)",
                     timed(lambda: cu.cuLaunchKernel(f, 8, 1, 1, 128, 1, 1, 0, s, params, 0), rounds, per)))
    drv = compiled.backend.driver()
    if hasattr(drv, "stream_and_current_device"):
        rows.append(("driver.stream_and_current_device(0)",
                     timed(lambda: drv.stream_and_current_device(0), rounds, per)))
    else:
        rows.append(("driver.current_device_and_stream()", timed(drv.current_device_and_stream, rounds, per)))
    from tritium.runtime.specialize import specialize_arg
    p0 = kern.params[0]
    rows.append(("specialize_arg(tensor) (one key part)", timed(lambda: specialize_arg(x, p0), rounds, per)))
    print(f"python {sys.version.split()[0]}, torch {torch.__version__}, "
          f"cuda-bindings {__import__('cuda.bindings').bindings.__version__}, fake libcuda")
    print(f"{'host path (5-argument kernel, CPU, fake driver)':52s} {'median us':>10s} {'min us':>8s}")
    for label, (med, mn) in rows:
        print(f"{label:52s} {med:10.2f} {mn:8.2f}")
    return 0


if __name__ == "__main__":
    ctypes  # noqa: B018 - imported for fakecuda's users
    sys.exit(main())
