"""Where a matmul's time goes: the main loop's rate and the fixed cost, from time against K.

    python bench/bench_loop_rate.py [--dtypes fp16,bf16,fp8] [--ks 1024,2048,4096,8192] [--mn 4096]
                                    [--configs 128x256x64w8s3,...] [--rounds 5] [--reps 10]

M = N stay fixed and K grows, so every program of the tutorial's matmul (``matmul_kernels.py``)
does the same tiles with a longer main loop.  A GEMM's time is then ``fixed + rate * K``: the
slope is what the main loop costs over the whole GPU (the tensor cores' and shared memory's share),
the intercept what does not grow with K (launch, pipeline fill, epilogue, the last wave's
idle SMs).  Tritium, Triton (the same source and config) and cuBLAS (``torch.matmul``;
``torch._scaled_mm`` for fp8) are timed interleaved at each K (``interleave.py``), outputs checked
against float64 first (NaN-poisoned), then each side's line is fitted by least squares.

The last table says how far a compiler could go on that kernel: "loop-only" is Triton's time at the
largest K over Tritium's main loop alone (``rate * K``: Tritium with no fixed cost at all), the
ceiling of Tritium / Triton for a faster fixed part with the same main loop.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_matmul import peer_if_runs, rel_err, run_matmul  # noqa: E402
from interleave import host_line, interleaved, sm_clock_mhz  # noqa: E402
from kernel_files import load_kernels  # noqa: E402

DEFAULT_CONFIGS = {"fp16": "128x256x64w8s3", "bf16": "128x256x64w8s3", "fp8": "128x256x128w8s3,256x128x128w8s4"}
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp8": getattr(torch, "float8_e4m3fn", None)}


def parse_config(text: str) -> tuple:
    """``128x256x64w8s3`` -> (128, 256, 64, 8, 8, 3): BM x BN x BK, warps, stages; GROUP_M 8."""
    tile, rest = text.split("w")
    warps, stages = rest.split("s")
    bm, bn, bk = (int(x) for x in tile.split("x"))
    return bm, bn, bk, 8, int(warps), int(stages)


def fit(points: list) -> tuple:
    """Least squares ``t = a + b * K`` over ``[(K, t_us)]``: (a in us, b in us per 1000 K)."""
    n = len(points)
    mx = sum(k for k, _ in points) / n
    my = sum(t for _, t in points) / n
    b = sum((k - mx) * (t - my) for k, t in points) / sum((k - mx) ** 2 for k, _ in points)
    return my - b * mx, b * 1000


def operands(name: str, mn: int, k: int):
    if name == "fp8":
        a = torch.randn(mn, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(mn, k, device="cuda").to(torch.float8_e4m3fn).T  # (K, N), K contiguous
        c = torch.empty(mn, mn, device="cuda", dtype=torch.float16)
        one = torch.ones((), device="cuda")
        return a, b, c, (lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.float16)), 2e-2
    dt = DTYPES[name]
    a = torch.randn(mn, k, device="cuda", dtype=dt)
    b = torch.randn(k, mn, device="cuda", dtype=dt)
    c = torch.empty(mn, mn, device="cuda", dtype=dt)
    return a, b, c, (lambda: torch.matmul(a, b)), 1e-2


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtypes", default="fp16,bf16,fp8")
    ap.add_argument("--ks", default="1024,2048,4096,8192")
    ap.add_argument("--mn", type=int, default=4096)
    ap.add_argument("--configs", default=None, help="for every dtype, e.g. 128x256x64w8s3 (default: per dtype)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: this benchmark times GPU kernels")
        return 0
    import tritium
    import tritium.language as ttl
    impls = {"tritium": load_kernels("loop_rate_tritium", tritium, ttl, "matmul_kernels.py")}
    try:
        import triton
        import triton.language as tl
        impls["triton"] = load_kernels("loop_rate_triton", triton, tl, "matmul_kernels.py")
    except ImportError:
        print("triton is not installed: Tritium and cuBLAS only")
    print(host_line(), "| SM clock, max, temperature:", sm_clock_mhz())
    ks = sorted(int(k) for k in args.ks.split(","))
    wrong = []
    fits = []
    for name in args.dtypes.split(","):
        if DTYPES.get(name) is None:
            print(f"{name}: not in this torch")
            continue
        for cfg_text in (args.configs or DEFAULT_CONFIGS[name]).split(","):
            cfg = parse_config(cfg_text)
            points = {}
            print(f"\n{name} {args.mn}x{args.mn}xK, {cfg_text}: microseconds (TFLOP/s)\n")
            print("| K | " + " | ".join(list(impls) + ["cuBLAS"]) + " |")
            print("| --- " * (len(impls) + 2) + "|")
            for k in ks:
                a, b, c, peer, tol = operands(name, args.mn, k)
                ref = (a.float() @ b.float()).double()
                fns = {}
                for side, mod in impls.items():
                    c.fill_(float("nan"))
                    run_matmul(mod, a, b, c, cfg)
                    torch.cuda.synchronize()
                    err = rel_err(c, ref)
                    if err < tol:
                        fns[side] = (lambda mod=mod: run_matmul(mod, a, b, c, cfg))
                    else:
                        wrong.append(f"{side} {name} {cfg_text} K={k}: relative error {err:.3g}")
                        print("WRONG:", wrong[-1])
                if "peer" in peer_if_runs(peer):  # a torch build may lack the kernel (fp8 off Hopper)
                    fns["cuBLAS"] = peer
                t = interleaved(fns, reps=args.reps, rounds=args.rounds)
                flop = 2 * args.mn * args.mn * k
                cells = []
                for side in list(impls) + ["cuBLAS"]:
                    if side in t:
                        us = t[side].median_ms * 1e3
                        points.setdefault(side, []).append((k, us))
                        cells.append(f"{us:.1f} ({flop / us / 1e6:.0f})")
                    else:
                        cells.append("-")
                print(f"| {k} | " + " | ".join(cells) + " |", flush=True)
                del a, b, c, ref
            print("SM clock after:", sm_clock_mhz())
            fits.append((name, cfg_text, {side: (fit(p), p[-1]) for side, p in points.items() if len(p) >= 2}))
    kmid = ks[len(ks) // 2]
    print(f"\nFits, t = fixed + rate * K ({args.mn}x{args.mn}xK):\n")
    print(f"| dtype | config | side | fixed (us) | us per 1000 K | main loop TFLOP/s | fixed share at K {kmid} |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, cfg_text, sides in fits:
        for side, ((a0, rate), _) in sides.items():
            tf = 2 * args.mn * args.mn * 1000 / rate / 1e6
            share = a0 / (a0 + rate * kmid / 1000)
            print(f"| {name} | {cfg_text} | {side} | {a0:.1f} | {rate:.2f} | {tf:.0f} | {share:.1%} |")
    print("\nCeiling for Tritium with the same main loop (largest K): Triton's time / Tritium's main loop alone\n")
    print("| dtype | config | Tritium / Triton | loop-only / Triton | Tritium / cuBLAS | loop-only / cuBLAS |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, cfg_text, sides in fits:
        if "tritium" not in sides:
            continue
        (_, rate), (kmax, t_ours) = sides["tritium"]
        loop_only = rate * kmax / 1000
        cells = []
        for peer in ("triton", "cuBLAS"):
            if peer in sides and sides[peer][1][0] == kmax:  # the same K on both (a wrong side has none)
                t_peer = sides[peer][1][1]
                cells += [f"{t_peer / t_ours:.3f}", f"{t_peer / loop_only:.3f}"]
            else:
                cells += ["-", "-"]
        print(f"| {name} | {cfg_text} | " + " | ".join(cells) + " |")
    for line in wrong:
        print("WRONG:", line)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
