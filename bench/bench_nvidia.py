"""NVIDIA benchmarks: the tutorial kernels under Tritium and Triton, side by side in one process.

    python bench/bench_nvidia.py [--quick]

Rows: vector add fp32 (2^12, 2^20, 2^28), fused softmax fp32 (4096x1024, 8192x4096, 4096x16384),
layer-norm forward fp32 (4096^2, 8192^2): Tritium and Triton timed interleaved (A, B, B, A per round,
``bench/interleave.py``), the median of the rounds' medians (CUDA events) with the rounds' range,
GB/s, Tritium/Triton and fraction of the measured device-to-device copy bandwidth; host launch overhead of a 5-argument
kernel (Tritium, Triton, a bare cuda-python cuLaunchKernel, torch.add) and the same launches replayed
from CUDA graphs (``--launch-only``: only these); cold compile time to cubin per kernel (empty caches).
Every output is checked against torch on fresh random inputs (outputs poisoned with NaN) first.
The table is printed last.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from interleave import host_line, interleaved, ratio_cell, sm_clock_mhz, time_once  # noqa: E402
from kernel_files import load_kernels  # noqa: E402

failures: list[str] = []


def bench(fn, reps: int = 50) -> float:
    """Median milliseconds of ``fn`` with CUDA events (L2 flushed between runs), after warm-up."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    return time_once(fn, reps)


def check(name, out, ref, tol=1e-5):
    if torch.isnan(out).any():
        failures.append(f"{name}: NaN (unwritten?) in output")
        return False
    err = ((out.double() - ref.double()).norm() / ref.double().norm()).item()
    if err > tol:
        failures.append(f"{name}: relative error {err:.2e} > {tol}")
        return False
    return True


def next_pow2(n):
    return 1 << (n - 1).bit_length()


# --- the three tutorial drivers (same launch parameters for both compilers) -----------------------
def run_add(k, x, y, out):
    n = x.numel()
    k.add_kernel[(triton_cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)


def triton_cdiv(a, b):
    return (a + b - 1) // b


def softmax_cfg(n_cols):
    block = next_pow2(n_cols)
    return block, (4 if block <= 1024 else 8 if block <= 4096 else 16)


def run_softmax(k, x, out):
    m, n = x.shape
    block, warps = softmax_cfg(n)
    k.softmax_kernel[(m,)](out, x, x.stride(0), out.stride(0), m, n, BLOCK_SIZE=block, num_warps=warps)


def ln_cfg(n):
    block = min(65536 // x_elem_bytes, next_pow2(n))
    return block, min(max(block // 256, 1), 8)


x_elem_bytes = 4


def run_ln(k, x, w, b, y, mean, rstd):
    m, n = x.shape
    block, warps = ln_cfg(n)
    k.layer_norm_fwd[(m,)](x, y, w, b, mean, rstd, x.stride(0), n, 1e-5, BLOCK_SIZE=block, num_warps=warps)


def copy_bandwidth() -> float:
    x = torch.randn(1 << 28, device="cuda")
    y = torch.empty_like(x)
    ms = bench(lambda: y.copy_(x), 30)
    return 2 * x.numel() * 4 / ms / 1e6


def _launcher(k, x, y, out):
    if k == "torch":
        return lambda: torch.add(x, y, out=out)
    kern = k.axpy_kernel
    return lambda: kern[(8,)](x, y, out, 1024, 2.0, BLOCK=128)


def _bare_launch(tritium_kernels, x, y, out):
    """``cuda.bindings.driver.cuLaunchKernel`` alone, on Tritium's loaded axpy with its parameter
    array already filled and the stream wrapper built: the floor of any cuda-python launcher."""
    from cuda.bindings import driver as cu
    compiled = tritium_kernels.axpy_kernel[(8,)](x, y, out, 1024, 2.0, BLOCK=128)
    launcher = compiled._launchers[x.device.index]
    f, params, block = launcher.function, launcher.params.address, launcher.state.block
    stream = cu.CUstream(torch.cuda.current_stream().cuda_stream)
    return lambda: cu.cuLaunchKernel(f, 8, 1, 1, block, 1, 1, 0, stream, params, 0)


def graph_replay_row(gos: dict, x, y, out, per_graph=200, replays=20) -> str:
    """Each side's launch captured ``per_graph`` times into one CUDA graph (torch.cuda.graph, as a
    user would), checked, replayed: microseconds per captured launch."""
    cells = []
    for name, go in gos.items():
        out.fill_(float("nan"))
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            go()  # warm on the side stream, as torch's docs ask
        torch.cuda.current_stream().wait_stream(s)
        out.fill_(float("nan"))
        with torch.cuda.graph(g):
            for _ in range(per_graph):
                go()
        if not torch.isnan(out).all():
            failures.append(f"{name}: the launch ran during capture instead of being captured")
        g.replay()
        torch.cuda.synchronize()
        ref = x + y if name == "torch.add" else 2.0 * x + y
        check(f"{name} launch replayed from a CUDA graph", out, ref)
        times = []
        for _ in range(3):
            t = time.perf_counter()
            for _ in range(replays):
                g.replay()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t) / (replays * per_graph) * 1e6)
        cells.append(f"{name} {statistics.median(times):.2f}")
    return f"CUDA graph replay, {per_graph} captured launches per graph (us/launch): " + ", ".join(cells)


def launch_row(impls, n_launch=4000, rounds=5) -> str:
    """Host launch overhead of a 5-argument kernel (Tritium, Triton, a bare cuda-python
    cuLaunchKernel, torch.add), microseconds per launch: each slot times ``n_launch`` back-to-back
    launches, the sides interleaved A,B,C,D,D,C,B,A; then the same launches replayed from CUDA
    graphs."""
    from interleave import slot_order
    x = torch.randn(1024, device="cuda")
    y, out = torch.randn_like(x), torch.empty_like(x)
    gos = {name: _launcher(k, x, y, out) for name, k in impls.items()}
    from tritium.runtime import torch_reader
    gos["tritium"]()
    reader = torch_reader.wait(120)   # torch's tensor fields read in C++: built on a thread at the first launch
    gos["bare cuLaunchKernel"] = _bare_launch(impls["tritium"], x, y, out)
    gos["torch.add"] = _launcher("torch", x, y, out)
    for name, go in gos.items():
        out.fill_(float("nan"))
        go()
        torch.cuda.synchronize()
        if name != "bare cuLaunchKernel":
            check(f"{name} launch", out, x + y if name == "torch.add" else 2.0 * x + y)
    per = {name: [] for name in gos}
    for order in slot_order(list(gos), rounds):
        for name in order:
            t = time.perf_counter()
            for _ in range(n_launch):
                gos[name]()
            torch.cuda.synchronize()
            per[name].append((time.perf_counter() - t) / n_launch * 1e6)
    t = {name: statistics.median(v) for name, v in per.items()}
    text = (f"host launch overhead, 5-argument kernel (tensor fields {'in C++' if reader else 'through Python'}; "
            "us/launch, interleaved, median [range]): ") + ", ".join(
        f"{k} {v:.2f} [{min(per[k]):.2f}-{max(per[k]):.2f}]" for k, v in t.items())
    if "triton" in t:
        text += f"; tritium/triton {t['tritium'] / t['triton']:.2f}"
    text += (f", tritium/torch.add {t['tritium'] / t['torch.add']:.2f}, "
             f"tritium - bare cuLaunchKernel {t['tritium'] - t['bare cuLaunchKernel']:.2f} us")
    graph_gos = {name: go for name, go in gos.items() if name != "bare cuLaunchKernel"}
    return text + "\n" + graph_replay_row(graph_gos, x, y, out)


COMPILE_SIGS = {
    "add_kernel": ({"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}, {"BLOCK_SIZE": 1024}),
    "softmax_kernel": ({"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32", "output_row_stride": "i32",
                        "n_rows": "i32", "n_cols": "i32"}, {"BLOCK_SIZE": 1024}),
    "layer_norm_fwd": ({"X": "*fp32", "Y": "*fp32", "W": "*fp32", "B": "*fp32", "Mean": "*fp32", "Rstd": "*fp32",
                        "stride": "i32", "N": "i32", "eps": "fp32"}, {"BLOCK_SIZE": 1024}),
}


def cold_compile_tritium(k, name, target="cuda:90") -> float:
    import tritium
    sig, consts = COMPILE_SIGS[name]
    times = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as d:
            os.environ["TRITIUM_CACHE_DIR"] = d
            t = time.perf_counter()
            tritium.compile(getattr(k, name), target=target, signature=sig, constexprs=consts)
            times.append(time.perf_counter() - t)
    os.environ.pop("TRITIUM_CACHE_DIR", None)
    return statistics.median(times)


def cold_compile_triton(k, name) -> float:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    sig, consts = COMPILE_SIGS[name]
    sig = dict(sig, **{c: "constexpr" for c in consts})
    times = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as d:
            os.environ["TRITON_CACHE_DIR"] = d
            t = time.perf_counter()
            triton.compile(ASTSource(getattr(k, name), sig, consts), target=GPUTarget("cuda", 90, 32))
            times.append(time.perf_counter() - t)
    os.environ.pop("TRITON_CACHE_DIR", None)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--launch-only", action="store_true", help="only the launch-overhead row")
    args = ap.parse_args()
    import tritium
    import tritium.language as ttl
    impls = {"tritium": load_kernels("bench_k_tritium", tritium, ttl)}
    try:
        import triton
        import triton.language as tl
        impls["triton"] = load_kernels("bench_k_triton", triton, tl)
    except ImportError:
        print("Triton is not installed: Tritium only")
    if args.launch_only:
        print(host_line())
        print(launch_row(impls))
        if failures:
            print("\nCORRECTNESS FAILURES:\n  " + "\n  ".join(failures))
            return 1
        return 0
    reps = 10 if args.quick else 20
    rounds = 3 if args.quick else 5
    torch.manual_seed(0)
    print(host_line())
    clock_before = sm_clock_mhz()
    copy_bw = copy_bandwidth()
    rows = []

    def row(kernel, size, nbytes, fns):
        rows.append((kernel, size, nbytes, interleaved(fns, reps=reps, rounds=rounds)))

    for p in (12, 20, 28):
        n = 1 << p
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        fns = {}
        for name, k in impls.items():
            out = torch.full_like(x, float("nan"))
            run_add(k, x, y, out)
            check(f"{name} add 2^{p}", out, x + y)
            fns[name] = (lambda k=k, out=out: run_add(k, x, y, out))
        row("add", f"2^{p}", 3 * n * 4, fns)
    for m, n in ((4096, 1024), (8192, 4096), (4096, 16384)):
        x = torch.randn(m, n, device="cuda")
        fns = {}
        for name, k in impls.items():
            out = torch.full_like(x, float("nan"))
            run_softmax(k, x, out)
            check(f"{name} softmax {m}x{n}", out, torch.softmax(x.double(), dim=1).float(), 1e-5)
            fns[name] = (lambda k=k, out=out: run_softmax(k, x, out))
        row("softmax", f"{m}x{n}", 2 * m * n * 4, fns)
    for m, n in ((4096, 4096), (8192, 8192)):
        x = torch.randn(m, n, device="cuda")
        w, b = torch.rand(n, device="cuda") + 0.5, torch.randn(n, device="cuda")
        ref = torch.nn.functional.layer_norm(x.double(), (n,), w.double(), b.double(), 1e-5).float()
        fns = {}
        for name, k in impls.items():
            y = torch.full_like(x, float("nan"))
            mean, rstd = torch.empty(m, device="cuda"), torch.empty(m, device="cuda")
            run_ln(k, x, w, b, y, mean, rstd)
            check(f"{name} layer_norm {m}x{n}", y, ref, 1e-5)
            fns[name] = (lambda k=k, y=y, mean=mean, rstd=rstd: run_ln(k, x, w, b, y, mean, rstd))
        row("layer_norm", f"{m}x{n}", 2 * m * n * 4, fns)
    launch_text = launch_row(impls)
    compile_t = {}
    for kname in COMPILE_SIGS:
        compile_t[kname] = {"tritium": cold_compile_tritium(impls["tritium"], kname)}
        if "triton" in impls:
            compile_t[kname]["triton"] = cold_compile_triton(impls["triton"], kname)

    print(f"\ndevice-to-device copy bandwidth: {copy_bw:.0f} GB/s; SM clock before the table: {clock_before}, "
          f"after: {sm_clock_mhz()}")
    print(f"interleaved A,B,B,A x {rounds} rounds of {reps} launches; median of round medians [range]")
    print(f"{'kernel':<11} {'size':<11} {'tritium ms':>10} {'GB/s':>7} {'triton ms':>10} {'GB/s':>7} "
          f"{'tritium/triton [range]':>24} {'tritium/copy':>12}")
    for kernel, size, nbytes, t in rows:
        tr = t["tritium"].median_ms
        gt = nbytes / tr / 1e6
        tn = t["triton"].median_ms if "triton" in t else None
        gn = nbytes / tn / 1e6 if tn else float("nan")
        print(f"{kernel:<11} {size:<11} {tr:10.4f} {gt:7.0f} {tn or float('nan'):10.4f} {gn:7.0f} "
              f"{ratio_cell(t):>24} {gt / copy_bw:12.3f}")
    print("\n" + launch_text)
    print("cold compile to cubin, empty cache (s): " + "; ".join(
        f"{k}: tritium {v['tritium']:.3f}" + (f", triton {v['triton']:.3f}, ratio {v['tritium'] / v['triton']:.2f}"
                                              if "triton" in v else "") for k, v in compile_t.items()))
    if failures:
        print("\nCORRECTNESS FAILURES:\n  " + "\n  ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
