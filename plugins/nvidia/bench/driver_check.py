"""Check and time the NVIDIA driver on a real GPU, in one process.

1. compile the hand-written vector-add LLVM IR for sm_90 (nvJitLink and ptxas), load it;
2. launch it on torch tensors, CuPy arrays, a pure DLPack producer, a DeviceArray and raw
   addresses, with 1-D and 3-D grids, and a libdevice kernel; compare with torch on fresh random
   inputs, the output poisoned with NaN first;
3. time host launch overhead (median over rounds of many launches; synchronise after each round):
   Tritium's launcher variants vs a 5-argument Triton kernel vs torch.add.

Run: ``python3 plugins/nvidia/bench/driver_check.py``; the table is printed last.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np
import torch

from tritium_nvidia.toolchain import binary, elf, kernels
from tritium_nvidia.runtime.driver import CudaDriver
from tritium_nvidia.runtime.device_pointers import DeviceArray

SIG = {0: "*fp32", 1: "*fp32", 2: "*fp32", 3: "i32", 4: "fp32"}
BLOCK = 128  # num_warps=4
failures: list[str] = []


def check(label: str, ok: bool, detail: str = ""):
    print(f"[{'PASS' if ok else 'FAIL'}] {label} {detail}")
    if not ok:
        failures.append(label)


class DLPackOnly:
    """A producer exposing only the DLPack protocol (no data_ptr, no CUDA array interface)."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, stream=None):
        return self._t.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def compile_add(arch, assembler):
    md = {"num_warps": 4}
    ptx = binary.llir_to_ptx(kernels.VECTOR_ADD_LLIR, arch)
    t0 = time.perf_counter()
    cubin = binary.ptx_to_cubin(ptx, arch, "add_kernel", metadata=md, assembler=assembler)
    info = elf.read_cubin(cubin)
    print(f"  {assembler}: {len(cubin)} B cubin, sm_{info.arch}, funcs={info.functions}, "
          f"regs={md.get('n_regs')} in {1e3 * (time.perf_counter() - t0):.1f} ms")
    return cubin, md


def verify_add(drv, launch, stream, make, n, grid, label, alpha=0.75):
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    ref = x + alpha * y
    launch(grid, stream, (make(x), make(y), make(out), n, alpha))
    drv.synchronize()
    err = (out - ref).abs().max().item()
    ok = bool(torch.isfinite(out).all()) and err <= 1e-5
    check(label, ok, f"(n={n}, grid={grid}, max|err|={err:.2e})")


def main():
    drv = CudaDriver()
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # torch's primary context first, as in a user program
    props = drv.get_device_properties(0)
    print("device:", props)
    print("target:", drv.get_current_target(), "cuda-bindings:", __import__("cuda.bindings").bindings.__version__,
          "torch:", torch.__version__)

    print("compile:")
    cubin, md = compile_add(90, "nvjitlink")
    cubin_ptxas, md_ptxas = compile_add(90, "ptxas") if binary.toolchain.find_ptxas() else (None, None)
    h = drv.load_binary("add_kernel", cubin, md, 0)
    print("  handle:", h.n_regs, "regs,", h.n_spills, "spills, max threads", h.max_threads)
    launch = drv.make_launcher(h, md, SIG)
    stream = drv.get_current_stream()
    print("  stream:", stream, "launcher impl:", launch.impl)

    n = 1_000_003
    g1 = ((n + BLOCK - 1) // BLOCK, 1, 1)
    verify_add(drv, launch, stream, lambda t: t, n, g1, "torch tensors, 1-D grid")
    verify_add(drv, launch, stream, lambda t: t.data_ptr(), n, g1, "raw int pointers")
    verify_add(drv, launch, stream, DLPackOnly, n, g1, "DLPack producers")
    verify_add(drv, launch, stream, lambda t: t, 5000, (7, 3, 2), "3-D grid (7,3,2)")
    try:
        import cupy
        verify_add(drv, launch, stream, lambda t: cupy.asarray(t), n, g1, "CuPy arrays")
        check("owns(cupy)", drv.owns(cupy.zeros(4)) and drv.device_of(cupy.zeros(4)) == 0)
    except ImportError:
        print("  (no CuPy)")
    check("owns(torch cuda)", drv.owns(torch.zeros(1, device="cuda")))
    check("not owns(torch cpu)", not drv.owns(torch.zeros(1)))
    check("owns(DLPack)", drv.owns(DLPackOnly(torch.zeros(1, device="cuda"))))

    # DeviceArray (no torch on the path)
    xh = np.random.randn(4096).astype(np.float32)
    yh = np.random.randn(4096).astype(np.float32)
    xa, ya = DeviceArray(4096, "fp32").copy_from_host(xh), DeviceArray(4096, "fp32").copy_from_host(yh)
    oa = DeviceArray(4096, "fp32").copy_from_host(np.full(4096, np.nan, np.float32))
    launch((32, 1, 1), 0, (xa, ya, oa, 4096, 2.0))
    drv.synchronize()
    check("DeviceArray + stream 0", np.allclose(oa.copy_to_host(), xh + 2.0 * yh, rtol=1e-6, atol=1e-6))
    launch((0, 1, 1), stream, (xa, ya, oa, 4096, 2.0))
    check("empty grid is a no-op", True)
    try:
        launch(g1, stream, (torch.zeros(4), ya, oa, 4, 1.0))
        check("CPU tensor rejected", False)
    except ValueError as e:
        check("CPU tensor rejected", "not on a CUDA device" in str(e))

    if cubin_ptxas is not None:
        hp = drv.load_binary("add_kernel", cubin_ptxas, md_ptxas, 0)
        verify_add(drv, drv.make_launcher(hp, md_ptxas, SIG), stream, lambda t: t, n, g1, "ptxas cubin")

    # libdevice
    md_exp = {"num_warps": 4}
    ptx = binary.llir_to_ptx(kernels.EXP_LIBDEVICE_LLIR, 90)
    he = drv.load_binary("exp_kernel", binary.ptx_to_cubin(ptx, 90, "exp_kernel", metadata=md_exp), md_exp, 0)
    le = drv.make_launcher(he, md_exp, {0: "*fp32", 1: "*fp32", 2: "i32"})
    x = torch.randn(100_000, device="cuda")
    o = torch.full_like(x, float("nan"))
    le(((x.numel() + 127) // 128, 1, 1), stream, (x, o, x.numel()))
    drv.synchronize()
    rel = ((o.double() - x.double().exp()).abs() / x.double().exp()).max().item()
    check("libdevice __nv_expf", rel < 1e-6, f"(max rel err {rel:.2e})")

    # thread-block clusters and cooperative launch (cuLaunchKernelEx path)
    for extra in ({"num_ctas": 2}, {"launch_cooperative_grid": True}):
        try:
            lx = drv.make_launcher(h, {**md, **extra}, SIG)
            grid = ((n + BLOCK - 1) // BLOCK // extra.get("num_ctas", 1) + 1, 1, 1)
            if "launch_cooperative_grid" in extra:
                grid = (props["multiprocessor_count"] * 4, 1, 1)
                nn = grid[0] * BLOCK
            else:
                nn = n
            verify_add(drv, lx, stream, lambda t: t, nn, grid, f"launch {extra}")
        except Exception as e:
            check(f"launch {extra}", False, repr(e))

    # another thread: own parameter buffers
    import threading
    res = {}
    def worker():
        drv.set_current_device(0)
        try:
            verify_add(drv, launch, 0, lambda t: t, 10_000, (79, 1, 1), "launch from a second thread")
        except Exception as e:
            res["e"] = e
    th = threading.Thread(target=worker); th.start(); th.join()
    check("second thread raised nothing", "e" not in res, repr(res.get("e", "")))

    timing_table(drv, h, md, stream)
    print("FAILURES:", failures or "none")


def timed(fn, rounds=15, per_round=4000):
    for _ in range(500):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(per_round):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        samples.append((t1 - t0) / per_round * 1e6)
    return statistics.median(samples), min(samples)


def timing_table(drv, h, md, stream):
    n = 1024
    x, y, out = (torch.randn(n, device="cuda") for _ in range(3))
    rows = []
    launchers = {impl: drv.make_launcher(h, md, SIG, impl=impl) for impl in ("bindings", "ctypes")}
    for impl, la in launchers.items():
        args = (x, y, out, n, 0.5)
        rows.append((f"tritium launcher [{impl}] torch args", timed(lambda: la((8, 1, 1), stream, args))))
        rows.append((f"tritium [{impl}] + get_current_stream/call",
                     timed(lambda: la((8, 1, 1), drv.get_current_stream(), args))))
        iargs = (x.data_ptr(), y.data_ptr(), out.data_ptr(), n, 0.5)
        rows.append((f"tritium launcher [{impl}] int ptrs", timed(lambda: la((8, 1, 1), stream, iargs))))
    from cuda.bindings import driver as cu
    params = launchers["bindings"].params.address
    f = h.function
    rows.append(("bare cuLaunchKernel, int stream", timed(
        lambda: cu.cuLaunchKernel(f, 8, 1, 1, 128, 1, 1, 0, stream, params, 0))))
    s_obj = cu.CUstream(stream)
    rows.append(("bare cuLaunchKernel, CUstream object", timed(
        lambda: cu.cuLaunchKernel(f, 8, 1, 1, 128, 1, 1, 0, s_obj, params, 0))))
    rows.append(("get_current_stream() alone", timed(lambda: drv.get_current_stream())))
    try:
        import triton
        import triton.language as tl

        @triton.jit
        def add5(x_ptr, y_ptr, o_ptr, n, alpha, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) + alpha * tl.load(y_ptr + offs, mask=m), mask=m)

        rows.append(("triton 3.6 kernel, 5 args", timed(lambda: add5[(8,)](x, y, out, n, 0.5, BLOCK=128))))
    except Exception as e:
        print("triton timing skipped:", e)
    rows.append(("torch.add(x, y, out=out)", timed(lambda: torch.add(x, y, out=out))))
    print(f"\n{'host launch overhead (5-arg kernel)':48s} {'median us':>10s} {'min us':>8s}")
    for label, (med, mn) in rows:
        print(f"{label:48s} {med:10.2f} {mn:8.2f}")


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
