"""Host cost of a launch, measured without a GPU: the NVIDIA plugin's real launch path (binders,
device and stream choice, generated launchers, the ``cuda.bindings`` call) against a fake
libcuda.so.1 (``plugins/nvidia/tests/fakecuda``, built with the system C compiler) whose
cuLaunchKernel records the launch and returns.

    python bench/bench_launch_cpu.py [--rounds 15] [--per-round 20000]

Rows, interleaved round by round (median over rounds, and the minimum), microseconds of the
thread's CPU time per call:
``kernel[grid](x, y, out, n, alpha, BLOCK=128)`` as on a GPU host where torch has initialised
CUDA, the same kernel under ``@autotune`` (one config, so the row is the launch, not the search;
the autotuner passes the config's ``num_warps``, ``num_stages``, ``num_ctas``), a copy kernel whose
tensor map is built on the device (it takes a global-scratch buffer from the allocator each
launch), the first kernel before torch has initialised CUDA (the driver answers the stream and
device questions), a
``cuda.bindings`` ``cuLaunchKernel`` with a prebuilt parameter array (the floor any Python
launcher sits on), and the launchers alone.

What it cannot show: the real driver's own time inside cuLaunchKernel (about 2.5 us of the
2.8 us "bare cuda-python launch" measured on an H200 host; here the bare call is a few hundred
ns), so compare the *difference* to the bare call, from one machine only.  torch here is a CPU
build: CPU tensors stand in for CUDA tensors of device 0, and torch's CUDA queries are stood in
for, each by a C-level callable of about the same cost (see ``pretend_cuda``).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "plugins", "nvidia", "tests"))


def interleaved(fns: dict, rounds: int, per_round: int, clock=time.thread_time) -> dict:
    """``{name: (median us, min us)}``, every round timing each function once in turn.  The clock
    is this thread's CPU time: on a shared machine, time spent descheduled is not counted."""
    for fn in fns.values():
        for _ in range(1000):
            fn()
    samples: dict = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = clock()
            for _ in range(per_round):
                fn()
            samples[name].append((clock() - t0) / per_round * 1e6)
    return {name: (statistics.median(v), min(v)) for name, v in samples.items()}


def pretend_cuda(torch) -> None:
    """CPU tensors as CUDA tensors of device 0, each attribute replaced by a C-level one of the
    same cost: ``is_cuda`` reads ``is_leaf`` (True for these tensors), ``get_device()`` calls
    ``storage_offset()`` (0 for them); the plugin places them on device 0."""
    from tritium_nvidia.runtime import device_pointers

    torch.Tensor.is_cuda = torch._C.TensorBase.is_leaf
    torch.Tensor.get_device = torch._C.TensorBase.storage_offset
    device_pointers._torch_device = lambda t: 0


def pretend_torch_initialised_cuda(torch) -> None:
    """As on a GPU host after torch's first CUDA call: the launch path asks torch for the current
    stream and device; here two C-level callables returning 0 answer (``_cuda_getCurrentRawStream``
    is a C function of about that cost)."""
    torch.cuda.is_initialized = lambda: True
    torch._C._cuda_getCurrentRawStream = (0).__mul__   # device -> 0: the legacy default stream
    torch._C._cuda_getDevice = int                      # () -> 0


def triton_autotune(tritium, fn):
    """``fn`` (the plain Python function of a kernel) as a fresh ``@jit`` under ``@autotune``."""
    return tritium.autotune(configs=[tritium.Config({"BLOCK": 128}, num_warps=4)], key=["n"])(tritium.jit(fn))


def device_map_kernel(tritium, tl):
    """A copy through ``tl.make_tensor_descriptor``: on sm_90 its map is built on the device, in
    the launch's global scratch."""
    @tritium.jit
    def copy_device_map(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        desc = tl.make_tensor_descriptor(x_ptr, shape=[n], strides=[1], block_shape=[BLOCK])
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, desc.load([tl.program_id(0) * BLOCK]), mask=offs < n)
    return copy_device_map


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
    # torch's C++ reader (runtime/torch_reader.py) would see these CPU tensors as the CPU's, not
    # as the CUDA tensors pretend_cuda makes of them: every launch would miss.  Off here; on a GPU
    # host it is on (bench_nvidia.py --launch-only measures that path).
    os.environ["TRITIUM_TORCH_READER"] = "0"
    import torch

    import tritium
    import tritium.language as tl
    from cuda.bindings import driver as cu
    pretend_cuda(torch)
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
    for _ in range(3):  # compile (cubin through the real toolchain), load, launch; then the fast paths
        kern[(8,)](x, y, out, n, 2.0, BLOCK=128)
    before = fake.count.value
    kern[(8,)](x, y, out, n, 2.0, BLOCK=128)
    assert fake.count.value == before + 1, "the fast path did not reach cuLaunchKernel"
    assert fake.last.params[0] == x.data_ptr() and fake.last.params[3] & 0xFFFFFFFF == n

    compiled = next(iter(kern.kernel_cache.values()))
    launch = compiled._launchers[0]
    params = launch.params.address
    f = launch.function
    f = f if isinstance(f, cu.CUfunction) else cu.CUfunction(int(f))
    s = cu.CUstream(0)
    grid, a = (8, 1, 1), (x, y, out, n, 2.0)
    fns = {
        "kernel[grid](x, y, out, n, alpha, BLOCK=128), driver queries":
            lambda: kern[(8,)](x, y, out, n, 2.0, BLOCK=128),
        "bare cuda.bindings cuLaunchKernel (fake driver)":
            lambda: cu.cuLaunchKernel(f, 8, 1, 1, 128, 1, 1, 0, s, params, 0),
        "launcher(grid, stream, args) alone": lambda: launch(grid, 0, a),
    }
    first = interleaved(fns, args.rounds, args.per_round)
    pretend_torch_initialised_cuda(torch)
    kern[(8,)](x, y, out, n, 2.0, BLOCK=128)
    tuned = triton_autotune(tritium, k.axpy_kernel.fn)
    maps = device_map_kernel(tritium, tl)
    # the fake driver encodes no tensor maps: the kernel builds its map without the template
    warnings.filterwarnings("ignore", message=".*tensor map template not encoded")
    tritium.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8))
    for _ in range(3):
        tuned[(8,)](x, y, out, n, 2.0)
        maps[(8,)](x, out, n, BLOCK=128)
    fns = {"kernel[grid](x, y, out, n, alpha, BLOCK=128)": lambda: kern[(8,)](x, y, out, n, 2.0, BLOCK=128),
           "the same under @autotune (one Config)": lambda: tuned[(8,)](x, y, out, n, 2.0),
           "copy with a device-built tensor map (global scratch)": lambda: maps[(8,)](x, out, n, BLOCK=128),
           "bare cuda.bindings cuLaunchKernel (fake driver)":
               lambda: cu.cuLaunchKernel(f, 8, 1, 1, 128, 1, 1, 0, s, params, 0)}
    second = interleaved(fns, args.rounds, args.per_round)
    print(f"python {sys.version.split()[0]}, torch {torch.__version__}, "
          f"cuda-bindings {__import__('cuda.bindings').bindings.__version__}, fake libcuda; "
          f"tritium from {os.path.dirname(tritium.__file__)}")
    print(f"{'host path (5-argument kernel, CPU, fake driver)':66s} {'median us':>10s} {'min us':>8s}")
    rows = [(name + " [torch queries]", v) for name, v in second.items()] + \
           [(name + ("" if name.startswith("kernel") else " [first set]"), v) for name, v in first.items()]
    for label, (med, mn) in rows:
        print(f"{label:66s} {med:10.2f} {mn:8.2f}")
    gap = second["kernel[grid](x, y, out, n, alpha, BLOCK=128)"][0] - \
        second["bare cuda.bindings cuLaunchKernel (fake driver)"][0]
    print(f"kernel[grid](...) minus the bare call (torch queries): {gap:.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
