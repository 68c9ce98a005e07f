"""Split-K and stream-K matmul (``splitk_kernels.py``) under Tritium and Triton 3.6, with cuBLAS
beside: shapes with few output tiles and a long K, where one program a tile leaves most of the GPU
idle.

    python bench/bench_splitk.py [--check] [--shapes 1024x1024x16384,512x512x32768] [--rounds 3]

Each side keeps its best (tile config, way) of one list, a way being SPLIT_K 1/2/4/8 (1 is the
plain one-program-a-tile matmul) or stream-K with one or two programs an SM, found as
``bench_matmul.py`` finds its configs; the winners and ``torch.matmul`` (cuBLAS, fp16 in and out,
its own split-K choice) are then timed interleaved (A,B,B,A per round, ``bench/interleave.py``).  A launch includes the
zeroing of the fp32 output the partial sums are added to (the same ``torch.zero_`` on both sides).
``--check`` only checks every config against torch on ragged shapes; without a CUDA device it runs
the kernel on the interpreter (small shapes) instead.
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from kernel_files import load_kernels  # noqa: E402
from bench_matmul import rel_err  # noqa: E402

CONFIGS = [  # (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)
    (128, 128, 64, 8, 4, 3), (128, 256, 64, 8, 8, 3), (64, 128, 64, 8, 4, 4),
]
SPLITS = (1, 2, 4, 8)
#: stream-K launches: programs per SM
STREAMK_PER_SM = (1, 2)


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def run(k, a, b, c, cfg, split) -> None:
    bm, bn, bk, g, w, s = cfg
    m, kk = a.shape
    n = b.shape[1]
    c.zero_()
    k.matmul_splitk[(cdiv(m, bm) * cdiv(n, bn), split)](
        a, b, c, m, n, kk, a.stride(0), b.stride(0), c.stride(0), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g,
        SPLIT_K=split, num_warps=w, num_stages=s)


def run_streamk(k, a, b, c, cfg, programs) -> None:
    bm, bn, bk, g, w, s = cfg
    m, kk = a.shape
    n = b.shape[1]
    total = cdiv(m, bm) * cdiv(n, bn) * cdiv(kk, bk)
    programs = min(programs, total)
    c.zero_()
    k.matmul_streamk[(programs,)](
        a, b, c, m, n, kk, a.stride(0), b.stride(0), c.stride(0), total // programs, total % programs,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g, num_warps=w, num_stages=s)


def launch(k, a, b, c, cfg, how) -> None:
    """``how``: ("split", SPLIT_K) or ("stream", programs)."""
    if how[0] == "split":
        run(k, a, b, c, cfg, how[1])
    else:
        run_streamk(k, a, b, c, cfg, how[1])


def ways(sms: int) -> list:
    return [("split", s) for s in SPLITS] + [("stream", p * sms) for p in STREAMK_PER_SM]


def check_on_interpreter() -> list[str]:
    """No CUDA device: the kernel on Tritium's interpreter, ragged shapes, every SPLIT_K."""
    import torch
    os.environ["TRITON_INTERPRET"] = "1"
    import tritium
    import tritium.language as tl
    k = load_kernels("splitk_interp", tritium, tl, "splitk_kernels.py")
    failures = []
    # stream-K with 5 and 7 programs: pieces of tiles split across programs, whole tiles, both
    for (m, n, kk), how in [((48, 40, 200), w) for w in [("split", s) for s in SPLITS] + [("stream", 5), ("stream", 7)]]:
        a = torch.randn(m, kk, dtype=torch.float16)
        b = torch.randn(kk, n, dtype=torch.float16)
        c = torch.full((m, n), float("nan"))
        launch(k, a, b, c, (16, 16, 32, 2, 1, 1), how)
        err = rel_err(c, a.double() @ b.double())
        if not err < 1e-3:
            failures.append(f"interpreter {m}x{n}x{kk} {how}: relative error {err:.2e}")
    return failures


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true")
    p.add_argument("--shapes", default="1024x1024x16384,512x512x32768,2048x2048x8192")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    import torch
    if not torch.cuda.is_available():
        if not args.check:
            print("no CUDA device: only --check runs here (on the interpreter)")
            return 1
        failures = check_on_interpreter()
        for f in failures:
            print("FAIL", f)
        print("interpreter check:", "failed" if failures else "ok")
        return 1 if failures else 0
    from bench_nvidia import bench
    from interleave import host_line, interleaved, ratio_cell, search_order, sm_clock_mhz
    import tritium
    import tritium.language as ttl
    impls = {"tritium": load_kernels("splitk_tritium", tritium, ttl, "splitk_kernels.py")}
    try:
        import triton
        import triton.language as tl
        impls["triton"] = load_kernels("splitk_triton", triton, tl, "splitk_kernels.py")
    except ImportError:
        print("triton is not installed: Tritium only")
    print(host_line())
    failures = []
    # correctness of every candidate on a ragged shape first (poisoned output: zeroed by the launch)
    a = torch.randn(1000, 3000, device="cuda", dtype=torch.float16)
    b = torch.randn(3000, 520, device="cuda", dtype=torch.float16)
    ref = a.double() @ b.double()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for name, k in impls.items():
        for cfg in CONFIGS:
            for how in ways(sms):
                c = torch.full((1000, 520), float("nan"), device="cuda")
                try:
                    launch(k, a, b, c, cfg, how)
                    torch.cuda.synchronize()
                except Exception as e:  # noqa: BLE001 - report and go on
                    failures.append(f"{name} {cfg} {how}: {type(e).__name__}: {str(e)[:200]}")
                    continue
                err = rel_err(c, ref)
                if not err < 1e-3:
                    failures.append(f"{name} {cfg} {how}: relative error {err:.2e}")
    for f in failures:
        print("FAIL", f)
    if args.check:
        return 1 if failures else 0
    clock_before = sm_clock_mhz()
    print("| shape | Tritium TFLOP/s (config, split) | Triton TFLOP/s (config, split) | Tritium/Triton [range] | "
          "cuBLAS TFLOP/s | Tritium/cuBLAS |")
    print("| --- | --- | --- | --- | --- | --- |")
    for shape in args.shapes.split(","):
        m, n, kk = (int(x) for x in shape.split("x"))
        a = torch.randn(m, kk, device="cuda", dtype=torch.float16)
        b = torch.randn(kk, n, device="cuda", dtype=torch.float16)
        c = torch.empty((m, n), device="cuda")
        # the search: the two sides' candidates config by config, twice, the second pass reversed
        # (``search_order``: a drifting clock favours none), each keeping its faster pass
        candidates = [(name, cfg, how) for cfg in CONFIGS for how in ways(sms) for name in impls]
        searched: dict = {}
        for name, cfg, how in search_order(candidates):
            try:
                t = bench(lambda k=impls[name], cfg=cfg, how=how: launch(k, a, b, c, cfg, how),
                          max(3, args.reps // 3))
            except Exception:  # noqa: BLE001 - reported by the check above
                continue
            searched[(name, cfg, how)] = min(t, searched.get((name, cfg, how), t))
        best = {}
        for (name, cfg, how), t in searched.items():
            if name not in best or t < best[name][0]:
                best[name] = (t, cfg, how)
        fns = {name: (lambda k=impls[name], cfg=cfg, how=how: launch(k, a, b, c, cfg, how))
               for name, (_, cfg, how) in best.items()}
        fns["peer"] = lambda: torch.matmul(a, b)
        timed = interleaved(fns, reps=args.reps, rounds=args.rounds)
        tf = {name: 2 * m * n * kk / (t.median_ms * 1e-3) / 1e12 for name, t in timed.items()}
        cells = [f"{tf[nm]:.1f} ({best[nm][1][:3]}, {'SPLIT_K' if best[nm][2][0] == 'split' else 'stream-K'} "
                 f"{best[nm][2][1]})" if nm in tf else "-" for nm in ("tritium", "triton")]
        ratio = ratio_cell(timed) if "triton" in timed else "-"
        print(f"| {shape} | {cells[0]} | {cells[1]} | {ratio} | {tf['peer']:.1f} | {tf['tritium'] / tf['peer']:.3f} |")
    print(f"SM clock before and after: {clock_before}; {sm_clock_mhz()}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
