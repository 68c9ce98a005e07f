"""Triton's own fused-attention tutorial, unedited, run by both compilers.

    python bench/bench_tutorial_attention.py PATH/06-fused-attention.py [--configs LIST|all]
        [--heads-dim 64,128] [--n-ctx 4096,16384] [--ws 0,1] [--rounds 3] [--reps 10]

``PATH/06-fused-attention.py`` is the tutorial file of a Triton checkout (``python/tutorials/``,
release/3.6.x for Triton 3.6); it is not part of this repository.  It is imported twice: as it
is (Triton), and with its three ``triton`` imports rebound to ``tritium`` (the only change, as a
user would make it).  Each side then runs the tutorial's own ``attention(q, k, v, causal,
sm_scale, warp_specialize)``, with its autotuner over the same config list (by default six
128-row configs of the tutorial's list, which its autotuner picks from on an H200; ``all`` keeps
the tutorial's whole list, and takes minutes to tune), its host tensor descriptors (or, with
``warp_specialize``, the descriptors it builds in the kernel), and its own launch.

First each (head dim, causal, warp_specialize) is checked against float64 attention at N 1024
(max error, "OK" under 2e-2); then each case is timed interleaved (``interleave.py``) and
printed with TFLOP/s, Tritium/Triton and the configs each autotuner chose.  A side that fails to
compile or gives a wrong result is reported as such and the case's ratio left out (Triton 3.6 on
the H200: ``warp_specialize=True`` compiles to NaN without causal masking and fails in
``NVGPUWarpSpecialization`` with it, which is why the tutorial enables it only on Blackwell)."""
from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

#: the 128-row configs of the tutorial's Hopper list: (BLOCK_M, BLOCK_N, num_stages, num_warps)
DEFAULT_CONFIGS = "128x64s2w4,128x64s3w4,128x128s2w8,128x128s3w8,128x128s2w4,128x128s3w4"


def load_tutorial(path: str, framework: str):
    """The tutorial module, its ``triton`` imports bound to ``framework``."""
    src = open(path).read()
    if framework == "tritium":
        rebound = (src.replace("import triton.language as tl", "import tritium.language as tl")
                      .replace("from triton.tools.tensor_descriptor", "from tritium.tools.tensor_descriptor")
                      .replace("import triton\n", "import tritium as triton\n"))
        if rebound.count("tritium") < 3:
            raise SystemExit(f"{path}: did not find the tutorial's three triton imports")
        src = rebound
    name = f"fused_attention_{framework}"
    # a file of its own: the @jit functions are compiled from their source text
    folder = tempfile.mkdtemp(prefix="tutorial-attention-")
    file = os.path.join(folder, name + ".py")
    with open(file, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(name, file)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def config_name(c) -> str:
    return f"{c.kwargs['BLOCK_M']}x{c.kwargs['BLOCK_N']}s{c.num_stages}w{c.num_warps}"


def keep_configs(mod, wanted: str) -> None:
    if wanted == "all":
        return
    names = set(wanted.split(","))
    mod._attn_fwd.configs = [c for c in mod._attn_fwd.configs if config_name(c) in names]
    if not mod._attn_fwd.configs:
        raise SystemExit(f"none of {wanted} is in the tutorial's config list")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tutorial", help="path of Triton's python/tutorials/06-fused-attention.py")
    ap.add_argument("--configs", default=DEFAULT_CONFIGS, help="BMxBNsSwW,... or 'all' (the tutorial's list)")
    ap.add_argument("--head-dims", default="64,128")
    ap.add_argument("--n-ctx", default="4096,16384")
    ap.add_argument("--ws", default="0,1", help="warp_specialize values to run (0, 1 or both)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args(argv)

    import torch
    from bench_matmul import attn_ref
    from interleave import host_line, interleaved
    if not torch.cuda.is_available():
        print("no CUDA device: this benchmark runs the tutorial on a GPU")
        return 0
    mods = {"triton": load_tutorial(args.tutorial, "triton"), "tritium": load_tutorial(args.tutorial, "tritium")}
    for m in mods.values():
        keep_configs(m, args.configs)
    print(host_line())
    print("configs:", args.configs)
    dims = [int(x) for x in args.head_dims.split(",")]
    sizes = [int(x) for x in args.n_ctx.split(",")]
    wss = [bool(int(x)) for x in args.ws.split(",")]
    torch.manual_seed(0)

    bad = set()
    for d in dims:
        for causal in (False, True):
            for ws in wss:
                q, k, v = (torch.randn(2, 4, 1024, d, device="cuda", dtype=torch.float16) for _ in range(3))
                sm_scale = 1 / math.sqrt(d)
                ref = attn_ref(q, k, v, causal)  # float64, scaled by 1 / sqrt(d) as sm_scale is
                for name, m in mods.items():
                    try:
                        err = (m.attention(q, k, v, causal, sm_scale, ws).double() - ref).abs().max().item()
                        verdict = "OK" if err < 2e-2 else "WRONG"
                        print(f"check d{d} causal={causal} ws={ws} {name}: max error {err:.2e} {verdict}")
                    except Exception as e:  # noqa: BLE001 (a failing side is reported, not fatal)
                        verdict = "ERROR"
                        print(f"check d{d} causal={causal} ws={ws} {name}: {type(e).__name__}: {str(e)[:160]}")
                    if verdict != "OK":
                        bad.add((name, d, causal, ws))

    print(f"\n| case | Triton TFLOP/s | Tritium TFLOP/s | Tritium/Triton [range] | configs (Triton / Tritium) |")
    print("| --- | --- | --- | --- | --- |")
    for d in dims:
        for causal in (False, True):
            for n_ctx in sizes:
                for ws in wss:
                    case = f"d{d} {'causal' if causal else 'full'} N {n_ctx} ws={int(ws)}"
                    z, h = max(1, 16384 * 4 // n_ctx), 32 * 64 // d // 2
                    q, k, v = (torch.randn(z, h, n_ctx, d, device="cuda", dtype=torch.float16) for _ in range(3))
                    sm_scale = 1 / math.sqrt(d)
                    fns, skipped = {}, []
                    for name, m in mods.items():
                        if (name, d, causal, ws) in bad:
                            skipped.append(f"{name}: failed its check")
                            continue
                        m.attention(q, k, v, causal, sm_scale, ws)
                        fns[name] = (lambda m=m: m.attention(q, k, v, causal, sm_scale, ws))
                    torch.cuda.synchronize()
                    flops = 4 * z * h * n_ctx * n_ctx * d * (0.5 if causal else 1.0)
                    t = interleaved(fns, reps=args.reps, rounds=args.rounds) if fns else {}
                    tf = {n: f"{flops / (x.median_ms * 1e-3) / 1e12:.0f}" for n, x in t.items()}
                    if len(t) == 2:
                        tr, tt = t["triton"], t["tritium"]
                        ratio = (f"{tr.median_ms / tt.median_ms:.3f} "
                                 f"[{tr.low_ms / tt.high_ms:.2f}-{tr.high_ms / tt.low_ms:.2f}]")
                    else:
                        ratio = "; ".join(skipped) or "-"
                    cfg = " / ".join(config_name(m._attn_fwd.best_config)
                                     if n in t and getattr(m._attn_fwd, "best_config", None) else "-"
                                     for n, m in mods.items())
                    print(f"| {case} | {tf.get('triton', '-')} | {tf.get('tritium', '-')} | {ratio} | {cfg} |",
                          flush=True)
                    del q, k, v
    print(host_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
