"""Triton's persistent tutorial matmul with its tile loop marked ``flatten=`` and
``warp_specialize=`` (``persistent_flatten_kernels.py``, host descriptors, 128x256x64, 8 warps,
3 stages, fp16), every combination on Tritium and Triton 3.6, interleaved:

    python bench/bench_flatten.py [--sizes 4096,8192] [--rounds 3] [--reps 6]

Each version's output is checked against torch first.  Prints TFLOP/s per version and
Tritium/Triton of the same version (median of the rounds)."""
from __future__ import annotations

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from interleave import host_line, interleaved, sm_clock_mhz  # noqa: E402
from kernel_files import descriptor_frameworks  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="4096,8192")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=6)
    args = p.parse_args()
    impls = descriptor_frameworks("pf", "persistent_flatten_kernels.py")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(host_line())
    print(f"SM clock before: {sm_clock_mhz()}")
    print("| size | flatten | warp_specialize | Tritium TFLOP/s | Triton TFLOP/s | Tritium/Triton |")
    print("| --- | --- | --- | --- | --- | --- |")
    failures = 0
    for size in [int(s) for s in args.sizes.split(",")]:
        a = torch.randn(size, size, device="cuda", dtype=torch.float16)
        b = torch.randn(size, size, device="cuda", dtype=torch.float16)
        ref = a.float() @ b.float().T
        fns = {}
        for name, (mod, Desc) in impls.items():
            for flat in (True, False):
                for ws in (False, True):
                    c = torch.full((size, size), float("nan"), device="cuda", dtype=torch.float16)
                    da, db, dc = Desc.from_tensor(a, [128, 64]), Desc.from_tensor(b, [256, 64]), Desc.from_tensor(c, [128, 256])

                    def run(mod=mod, da=da, db=db, dc=dc, flat=flat, ws=ws):
                        mod.persistent_flat[(sms,)](da, db, dc, size, size, size, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64,
                                                    GROUP_M=8, NUM_SMS=sms, FLATTEN=flat, WS=ws, num_warps=8, num_stages=3)
                    try:
                        run()
                        torch.cuda.synchronize()
                    except Exception as e:  # noqa: BLE001 - report and go on
                        print(f"{name} flatten={flat} ws={ws}: {type(e).__name__}: {str(e)[:200]}")
                        continue
                    err = ((c.float() - ref).norm() / ref.norm()).item()
                    if not err < 1e-2:
                        print(f"FAIL {name} flatten={flat} ws={ws}: relative error {err:.2e}")
                        failures += 1
                        continue
                    fns[(name, flat, ws)] = run
        t = interleaved(fns, reps=args.reps, rounds=args.rounds)
        tf = {k: 2.0 * size ** 3 / (v.median_ms * 1e-3) / 1e12 for k, v in t.items()}
        for flat in (True, False):
            for ws in (False, True):
                mine, theirs = tf.get(("tritium", flat, ws)), tf.get(("triton", flat, ws))
                ratio = f"{mine / theirs:.3f}" if mine and theirs else "-"
                print(f"| {size} | {flat} | {ws} | {mine or 0:.0f} | {theirs or 0:.0f} | {ratio} |", flush=True)
    print(f"SM clock after: {sm_clock_mhz()}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
