"""Persistent matmul (Triton's persistent-matmul tutorial style) under Tritium and Triton 3.6.

    python bench/bench_persistent.py [--check] [--sizes 4096,8192] [--dtypes fp16,bf16]

Four versions of one kernel (``persistent_kernels.py``, the same source for both compilers):
pointer arithmetic, block pointers, tensor descriptors made in the kernel, and host
``TensorDescriptor`` arguments, twice: ``host_desc`` on Tritium's TMA path (sm_90's default),
``host_desc_no_tma`` with it switched off (``TRITIUM_TMA=0``: block-pointer loads); Triton uses
TMA for both.  Each side keeps its best config of
the same list; the best configs are then timed interleaved (A,B,B,A per round,
``bench/interleave.py``), and the table gives the median of the rounds, the ratio's range, and the
SM clock before and after.  ``--check`` only checks every version against torch on a ragged shape.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_files import descriptor_frameworks  # noqa: E402
from interleave import host_line, interleaved, ratio_cell, sm_clock_mhz  # noqa: E402

CONFIGS = [  # (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages): the tutorial's fp16 choice first
    (128, 256, 64, 8, 8, 3), (128, 128, 64, 8, 4, 3), (128, 128, 64, 8, 8, 4),
]
VERSIONS = ("plain", "block_ptr", "device_desc", "host_desc", "host_desc_no_tma")
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def frameworks():
    return descriptor_frameworks("pm", "persistent_kernels.py")


def launcher(k, Desc, version, a, b, c, cfg, sms):
    bm, bn, bk, g, w, s = cfg
    m, kk = a.shape
    n = b.shape[0]
    grid = (min(sms, ((m + bm - 1) // bm) * ((n + bn - 1) // bn)),)
    meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g, NUM_SMS=sms, num_warps=w, num_stages=s)
    if version.startswith("host_desc"):
        da = Desc.from_tensor(a, [bm, bk])
        db = Desc.from_tensor(b, [bn, bk])
        dc = Desc.from_tensor(c, [bm, bn])
        def run():  # Tritium's TMA path (the default) or its block-pointer loads; Triton: TMA
            before = os.environ.get("TRITIUM_TMA")
            os.environ["TRITIUM_TMA"] = "0" if version == "host_desc_no_tma" else "1"
            try:
                k.persistent_host_desc[grid](da, db, dc, m, n, kk, **meta)
            finally:
                if before is None:
                    del os.environ["TRITIUM_TMA"]
                else:
                    os.environ["TRITIUM_TMA"] = before
        return run
    fn = getattr(k, f"persistent_{version}")
    return lambda: fn[grid](a, b, c, m, n, kk, a.stride(0), b.stride(0), c.stride(0), **meta)


def launch_cost(fn, n: int = 30) -> tuple[float, float]:
    """(host microseconds a launch, GPU microseconds a launch with ``n`` launches queued back to
    back): the first is what the launch path costs the CPU, the second the kernel alone once the
    host runs ahead of it (the interleaved table's single launches after an L2 flush show the host
    cost too, whenever it exceeds the flush)."""
    import time
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    host = (time.perf_counter() - t0) / n * 1e6
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()  # queued first, so the host is ahead before the timed launches start
    s.record()
    for _ in range(n):
        fn()
    e.record()
    e.synchronize()
    return host, s.elapsed_time(e) / n * 1e3


def check(impls, sms) -> list[str]:
    failures = []
    m, n, kk = 1000, 1112, 1000  # ragged against every tile; strides still multiples of 16 bytes
    for dname, dt in DTYPES.items():
        a = torch.randn(m, kk, device="cuda", dtype=dt)
        b = torch.randn(n, kk, device="cuda", dtype=dt)
        ref = a.double() @ b.double().T
        for name, (k, Desc) in impls.items():
            for version in VERSIONS:
                for cfg in CONFIGS[:2]:
                    c = torch.full((m, n), float("nan"), device="cuda", dtype=dt)
                    try:
                        launcher(k, Desc, version, a, b, c, cfg, sms)()
                        torch.cuda.synchronize()
                    except Exception as e:  # noqa: BLE001 - report and go on
                        failures.append(f"{name} {version} {dname} {cfg}: {type(e).__name__}: {e}")
                        continue
                    err = ((c.double() - ref).norm() / ref.norm()).item()
                    if not err < 1e-2:
                        failures.append(f"{name} {version} {dname} {cfg}: relative error {err:.2e}")
    return failures


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--check", action="store_true")
    p.add_argument("--sizes", default="4096,8192")
    p.add_argument("--dtypes", default="fp16")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--launch-cost", action="store_true",
                   help="also print each winner's host time a launch and its GPU time a launch back to back")
    args = p.parse_args()
    impls = frameworks()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(host_line())
    print("host_desc: Tritium's TMA path (the default); host_desc_no_tma: TRITIUM_TMA=0, block-pointer loads")
    failures = check(impls, sms)
    for f in failures:
        print("FAIL", f)
    if args.check:
        return 1 if failures else 0
    clock_before = sm_clock_mhz()
    print(f"| version | dtype | size | config T / t | Tritium TFLOP/s | Triton TFLOP/s | Tritium/Triton [range] |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for dname in args.dtypes.split(","):
        dt = DTYPES[dname]
        for size in [int(s) for s in args.sizes.split(",")]:
            a = torch.randn(size, size, device="cuda", dtype=dt)
            b = torch.randn(size, size, device="cuda", dtype=dt)
            c = torch.empty(size, size, device="cuda", dtype=dt)
            flops = 2.0 * size ** 3
            for version in VERSIONS:
                best = {}
                for name, (k, Desc) in impls.items():
                    fns = {}
                    for i, cfg in enumerate(CONFIGS):
                        try:
                            fns[i] = launcher(k, Desc, version, a, b, c, cfg, sms)
                            fns[i]()
                        except Exception as e:  # noqa: BLE001 - a config that does not fit is skipped
                            print(f"  {name} {version} {cfg}: {type(e).__name__}: {str(e)[:120]}")
                            fns.pop(i, None)
                    if fns:
                        t = interleaved(fns, reps=args.reps, rounds=1)
                        i = min(t, key=lambda j: t[j].median_ms)
                        best[name] = (i, fns[i])
                if not best:
                    continue
                if args.launch_cost:
                    for n, (_, f) in best.items():
                        host, gpu = launch_cost(f)
                        print(f"  launch cost {n} {version}: host {host:.1f} us a launch, "
                              f"GPU {gpu:.1f} us a launch back to back", flush=True)
                t = interleaved({n: f for n, (_, f) in best.items()}, reps=args.reps, rounds=args.rounds)
                tf = {n: flops / (t[n].median_ms * 1e-3) / 1e12 for n in t}
                cfgs = " / ".join(str(CONFIGS[best[n][0]][:3] + CONFIGS[best[n][0]][4:]) for n in best)
                print(f"| {version} | {dname} | {size}^3 | {cfgs} | {tf.get('tritium', float('nan')):.0f} | "
                      f"{tf.get('triton', float('nan')):.0f} | {ratio_cell(t)} |", flush=True)
    print(f"SM clock before: {clock_before}; after: {sm_clock_mhz()}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
