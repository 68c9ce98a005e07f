"""Probe: the matmul loop's schedule, ``spare`` (a spare slot, refill before the wgmma) or
``after-wait`` (Triton's: refill after the wait retiring the previous wgmma), against Triton,
interleaved A,B,B,A.  Each variant is compiled in its own cache directory (the on-disk key does not
see the module flag).  ``python bench/probe_pipeline_order.py [--sizes 4096,8192]``"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_files import load_kernels  # noqa: E402
from interleave import host_line, interleaved, ratio_cell, sm_clock_mhz  # noqa: E402
from bench_matmul import run_matmul, rel_err  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    import tritium
    import tritium.language as ttl
    import tritium_nvidia.async_dot as AD
    import triton
    import triton.language as tl
    variants = {"spare": "spare", "afterwait": "after-wait"}
    impls = {name: load_kernels(f"mm_{name}", tritium, ttl, "matmul_kernels.py") for name in variants}
    impls["triton"] = load_kernels("mm_triton", triton, tl, "matmul_kernels.py")
    dirs = {name: tempfile.mkdtemp(prefix=f"tritium-{name}-") for name in variants}
    print(host_line())
    bad = 0
    cases = []
    for size in [int(s) for s in args.sizes.split(",")]:
        cases += [(torch.float16, size, (128, 256, 64, 8, 8, 3)), (torch.float16, size, (128, 256, 64, 8, 8, 4)),
                  (torch.float16, size, (128, 128, 64, 8, 4, 4)), (torch.float16, size, (128, 128, 64, 8, 4, 3))]
        cases += [(torch.bfloat16, size, (128, 256, 64, 8, 8, 3))]
    rows = []
    for dt, size, cfg in cases:
        a = torch.randn(size, size, device="cuda", dtype=dt)
        b = torch.randn(size, size, device="cuda", dtype=dt)
        ref = (a.float() @ b.float()).double()
        c = torch.empty((size, size), device="cuda", dtype=dt)
        fns = {}
        for name, k in impls.items():
            if name in variants:  # compile now, with this variant's flag and cache
                AD.MATMUL_SCHEDULE = variants[name]
                os.environ["TRITIUM_CACHE_DIR"] = dirs[name]
            c.fill_(float("nan"))
            run_matmul(k, a, b, c, cfg)
            torch.cuda.synchronize()
            err = rel_err(c, ref)
            if not err < 1e-2:
                print(f"WRONG {name} {dt} {size} {cfg}: rel err {err:.2e}")
                bad += 1
            fns[name] = (lambda k=k: run_matmul(k, a, b, c, cfg))
        t = interleaved(fns, reps=args.reps, rounds=args.rounds)
        flops = 2 * size ** 3
        tf = {n: flops / (x.median_ms * 1e-3) / 1e12 for n, x in t.items()}
        rows.append((f"{str(dt)[6:]} {size}^3 {cfg}", tf, ratio_cell(t, "spare"), ratio_cell(t, "afterwait"),
                     ratio_cell(t, "afterwait", "spare")))
    print(f"SM clock after: {sm_clock_mhz()}")
    print(f"{'case':<40} {'spare':>7} {'afterw':>7} {'triton':>7}  spare/triton  afterwait/triton  afterwait/spare")
    for name, tf, r1, r2, r3 in rows:
        print(f"{name:<40} {tf['spare']:>7.0f} {tf['afterwait']:>7.0f} {tf['triton']:>7.0f}  {r1}  {r2}  {r3}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
