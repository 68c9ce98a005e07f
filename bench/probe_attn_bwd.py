"""The attention backward's three launches timed one by one, Tritium against Triton (interleaved,
``bench/interleave.py``): which of preprocess, dK/dV and dQ holds a gap that
``bench/bench_matmul.py --parts bwd`` shows for the whole pass.  Same kernels, shapes and configs
as that table (64x64 tiles, 4 warps, 3 stages; 32 heads of N_CTX 4096).

    python bench/probe_attn_bwd.py [--d 64,128] [--causal 0,1] [--n 4096] \\
        [--variant merged=tritium_nvidia.async_dot:MERGE_ACCUMULATOR_WAITS=1 --variant ...]

With ``--variant`` (``bench/probe_variants.py``'s spelling) each variant compiles under its switches
in a cache directory of its own, its gradients are checked against Triton's, and every variant is
timed against Triton."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_matmul import attn_bwd_inputs, triton_cdiv  # noqa: E402
from interleave import host_line, interleaved, ratio_cell, sm_clock_mhz  # noqa: E402
from kernel_files import load_kernels  # noqa: E402
from probe_variants import parse  # noqa: E402


def launches(k, q, kk, v, do, o, lse, delta, dq, dk, dv, causal, bm=64, bn=64, w=4, s=3):
    bh, n_ctx, d = q.shape
    scale = 1.0 / d ** 0.5
    return {
        "preprocess": lambda: k.attn_bwd_preprocess[(triton_cdiv(n_ctx, 128), bh)](o, do, delta, n_ctx, HEAD_DIM=d,
                                                                                   BLOCK_M=128),
        "dkdv": lambda: k.attn_bwd_dkdv[(triton_cdiv(n_ctx, bn), bh)](
            q, kk, v, do, lse, delta, dk, dv, scale, n_ctx, HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
            num_warps=w, num_stages=s),
        "dq": lambda: k.attn_bwd_dq[(triton_cdiv(n_ctx, bm), bh)](
            q, kk, v, do, lse, delta, dq, scale, n_ctx, HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
            num_warps=w, num_stages=s),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", default="64,128")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--parts", default="preprocess,dkdv,dq")
    ap.add_argument("--variant", action="append", default=[])
    args = ap.parse_args()
    import tritium
    import tritium.language as ttl
    import triton
    import triton.language as tl
    variants = [parse(v) for v in args.variant] or [("tritium", [])]
    originals = {(m, a): getattr(m, a) for _, settings in variants for m, a, _ in settings}
    impls = {name: load_kernels(f"pb_{name}", tritium, ttl, "matmul_kernels.py") for name, _ in variants}
    impls["triton"] = load_kernels("pb_triton", triton, tl, "matmul_kernels.py")
    dirs = {name: tempfile.mkdtemp(prefix=f"tritium-{name}-") for name, _ in variants}
    names = [name for name, _ in variants]
    print(host_line())
    print("| d | causal | launch | " + " | ".join(f"{n} ms" for n in names) + " | Triton ms | "
          + " | ".join(f"{n}/Triton [range]" for n in names) + " |")
    print("| --- " * (3 + 2 * len(names) + 1) + "|")
    bad = 0
    for d in (int(x) for x in args.d.split(",")):
        for causal in (bool(int(x)) for x in args.causal.split(",")):
            q, kk, v, do, o, lse, _ = attn_bwd_inputs(args.heads, args.n, d, causal)
            delta = torch.empty_like(lse)
            grads = {n: [torch.full_like(q, float("nan")) for _ in range(3)] for n in impls}
            per = {n: launches(m, q, kk, v, do, o, lse, delta, *grads[n], causal) for n, m in impls.items()}
            for n in per:  # compile (each variant under its switches and in its own cache), and the delta
                for (mod, attr), value in originals.items():
                    setattr(mod, attr, value)
                for vname, settings in variants:
                    if vname == n:
                        for mod, attr, value in settings:
                            setattr(mod, attr, value)
                        os.environ["TRITIUM_CACHE_DIR"] = dirs[n]
                for f in per[n].values():
                    f()
            torch.cuda.synchronize()
            for n in names:
                for g, ref, what in zip(grads[n], grads["triton"], ("dq", "dk", "dv")):
                    err = ((g.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
                    if not err < 2e-2:
                        print(f"WRONG {n} d{d} causal={causal} {what}: max rel err {err:.2e}")
                        bad += 1
            for part in args.parts.split(","):
                t = interleaved({n: per[n][part] for n in impls}, reps=10, rounds=3)
                print(f"| {d} | {int(causal)} | {part} | " + " | ".join(f"{t[n].median_ms:.3f}" for n in names)
                      + f" | {t['triton'].median_ms:.3f} | " + " | ".join(ratio_cell(t, n) for n in names) + " |",
                      flush=True)
    print(f"SM clock after: {sm_clock_mhz()}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
