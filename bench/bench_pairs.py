"""Paired programs (``pair_programs``) on and off, against Triton: the tutorial matmul's configs and
the attention forward kernels, each launched paired and plain by Tritium and by Triton, interleaved.

    python bench/bench_pairs.py [--sizes 8192,4096] [--dtypes fp16,bf16] [--parts matmul,fwd]
                                [--rounds 5] [--reps 10]

Two copies of Tritium's kernels are loaded: one whose launchers were made with
``knobs.nvidia.pair_programs`` off (every launch plain) and one with it on (the default), so one
process times the same compiled kernel both ways.  Every side's output is checked first
(matmul: against float64, relative error < 1e-2; attention: against float64 softmax at N <= 4096,
finite everywhere above), NaN-poisoned before each side runs.  Prints, per row, TFLOP/s of the
three and the ratios paired / plain and paired / Triton.  Needs an sm_90 GPU, torch and Triton.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_matmul as bm  # noqa: E402
from interleave import host_line, interleaved, sm_clock_mhz  # noqa: E402
from kernel_files import load_kernels  # noqa: E402

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="8192,4096")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--parts", default="matmul,fwd")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    import tritium
    import tritium.language as ttl
    import triton
    import triton.language as tl
    from tritium import knobs
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    sides = {"paired": ("tritium", True), "plain": ("tritium", False), "triton": ("triton", None)}
    frameworks = {"tritium": (tritium, ttl), "triton": (triton, tl)}
    mods = {n: load_kernels(f"pairs_{n}", *frameworks[fw], "matmul_kernels.py") for n, (fw, _) in sides.items()}
    for n, (fw, _) in sides.items():
        bm.ATTN_DESC[id(mods[n])] = load_kernels(f"pairs_attn_{n}", *frameworks[fw], "attention_kernels.py")
    failures = []

    def row(label, run, poison, error, flops):
        fns = {}
        for name, (_, paired) in sides.items():
            poison()
            before = knobs.nvidia.pair_programs
            knobs.nvidia.pair_programs = bool(paired)  # read when the kernel's launcher is made
            try:
                run(mods[name])
                torch.cuda.synchronize()
            finally:
                knobs.nvidia.pair_programs = before
            err = error()
            if not err < 1e-2:
                failures.append(f"{label} {name}: error {err:.3g}")
                continue
            fns[name] = lambda m=mods[name]: run(m)
        t = interleaved(fns, reps=args.reps, rounds=args.rounds)
        tf = {k: flops / (x.median_ms * 1e-3) / 1e12 for k, x in t.items()}

        def ratio(a, b):
            return f"{tf[a] / tf[b]:.3f}" if a in tf and b in tf else "-"
        print(f"| {label} | " + " | ".join(f"{tf[k]:.0f}" if k in tf else "-" for k in sides)
              + f" | {ratio('paired', 'plain')} | {ratio('paired', 'triton')} |", flush=True)

    print(host_line(), sm_clock_mhz())
    print("\n| row | paired | plain | Triton | paired / plain | paired / Triton |\n| --- | --- | --- | --- | --- | --- |")
    parts = set(args.parts.split(","))
    for size in [int(s) for s in args.sizes.split(",")] if "matmul" in parts else ():
        for dname in args.dtypes.split(","):
            dt = DTYPES[dname]
            a = torch.randn(size, size, device="cuda", dtype=dt)
            b = torch.randn(size, size, device="cuda", dtype=dt)
            ref = a.double() @ b.double()
            c = torch.empty((size, size), device="cuda", dtype=dt)
            for cfg in bm.CONFIGS:
                row(f"matmul {dname} {size}^3 {'x'.join(map(str, cfg[:3]))} w{cfg[4]} s{cfg[5]}",
                    lambda m, cfg=cfg: bm.run_matmul(m, a, b, c, cfg), lambda: c.fill_(float("nan")),
                    lambda: bm.rel_err(c, ref), 2 * size ** 3)
            del ref
    for d in (64, 128) if "fwd" in parts else ():
        for n_ctx in (4096, 16384):
            for causal in (False, True):
                z, h = 2 * 16384 // n_ctx, 16
                q, k, v = (torch.randn(z, h, n_ctx, d, device="cuda", dtype=torch.float16) for _ in range(3))
                o = torch.empty_like(q)
                ref = bm.attn_ref(q[:1, :2], k[:1, :2], v[:1, :2], causal) if n_ctx <= 4096 else None

                def error(ref=ref):
                    if ref is None:
                        return 0.0 if torch.isfinite(o).all() else float("inf")
                    return ((o[:1, :2].double() - ref).abs().max() / ref.abs().max()).item()
                for cfg in bm.attn_configs(d):
                    row(f"attention d{d} N{n_ctx} {'causal' if causal else 'full'} {cfg}",
                        lambda m, cfg=cfg: bm.attn_run(m, q, k, v, o, causal, *cfg), lambda: o.fill_(float("nan")),
                        error, 4 * z * h * n_ctx * n_ctx * d * (0.5 if causal else 1.0))
    print(f"\nclock after: {sm_clock_mhz()}")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
