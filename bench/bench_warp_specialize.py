"""Warp-specialized matmul (``tl.range(..., warp_specialize=True)``) under Tritium and Triton 3.6,
beside the same loop without it and cuBLAS (``torch.matmul``):

    python bench/bench_warp_specialize.py [--sizes 4096,8192] [--rounds 5]

One kernel source (``ws_kernels.py``: host descriptors, ``C = A @ B.T``,
fp16), each config of ``CONFIGS`` with and without warp specialization, on both compilers; every
version's output is checked against torch first.  Timed interleaved (A, B, B, A,
``bench/interleave.py``), L2 flushed before each launch; the table gives TFLOP/s (median of the
rounds) and ratios against Triton's same version and against cuBLAS."""
from __future__ import annotations

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from interleave import host_line, interleaved, sm_clock_mhz  # noqa: E402
from kernel_files import descriptor_frameworks  # noqa: E402

CONFIGS = [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 4, 4), (128, 128, 64, 8, 3)]


def launcher(mod, Desc, a, b, c, cfg, ws):
    bm, bn, bk, w, s = cfg
    m, k = a.shape
    n = b.shape[0]
    da, db, dc = Desc.from_tensor(a, [bm, bk]), Desc.from_tensor(b, [bn, bk]), Desc.from_tensor(c, [bm, bn])
    grid = ((m + bm - 1) // bm, (n + bn - 1) // bn)
    return lambda: mod.ws_matmul[grid](da, db, dc, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, WS=ws,
                                       num_warps=w, num_stages=s)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="4096,8192")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=10)
    args = p.parse_args()
    impls = descriptor_frameworks("ws", "ws_kernels.py")
    print(host_line())
    print(f"SM clock before: {sm_clock_mhz()}")
    print("| size | config | WS | Tritium TFLOP/s | Triton TFLOP/s | / Triton [range] | cuBLAS TFLOP/s | / cuBLAS |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    failures = 0
    for size in [int(s) for s in args.sizes.split(",")]:
        a = torch.randn(size, size, device="cuda", dtype=torch.float16)
        b = torch.randn(size, size, device="cuda", dtype=torch.float16)
        ref = (a.float() @ b.float().T)
        flops = 2.0 * size ** 3
        for cfg in CONFIGS:
            for ws in (True, False):
                fns = {}
                for name, (mod, Desc) in impls.items():
                    c = torch.full((size, size), float("nan"), device="cuda", dtype=torch.float16)
                    try:
                        fn = launcher(mod, Desc, a, b, c, cfg, ws)
                        fn()
                        torch.cuda.synchronize()
                    except Exception as e:  # noqa: BLE001 - report and go on
                        print(f"{name} {cfg} ws={ws}: {type(e).__name__}: {str(e)[:200]}")
                        continue
                    err = ((c.float() - ref).norm() / ref.norm()).item()
                    if not err < 1e-2:
                        print(f"FAIL {name} {cfg} ws={ws}: relative error {err:.2e}")
                        failures += 1
                        continue
                    fns[name] = fn
                fns["cublas"] = lambda: torch.matmul(a, b.T)
                t = interleaved(fns, reps=args.reps, rounds=args.rounds)
                tf = {n: flops / (v.median_ms * 1e-3) / 1e12 for n, v in t.items()}
                tri = t.get("tritium")
                if tri is None:
                    continue
                rt = [tri.rounds[i] for i in range(len(tri.rounds))]
                if "triton" in t:
                    ratios = sorted(t["triton"].rounds[i] / rt[i] for i in range(len(rt)))
                    vs = f"{t['triton'].median_ms / tri.median_ms:.3f} [{ratios[0]:.2f}-{ratios[-1]:.2f}]"
                    ttf = f"{tf['triton']:.0f}"
                else:
                    vs, ttf = "-", "-"
                print(f"| {size} | {'x'.join(map(str, cfg))} | {'yes' if ws else 'no'} | {tf['tritium']:.0f} | {ttf} | {vs} "
                      f"| {tf['cublas']:.0f} | {t['cublas'].median_ms / tri.median_ms:.3f} |", flush=True)
    print(f"SM clock after: {sm_clock_mhz()}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
