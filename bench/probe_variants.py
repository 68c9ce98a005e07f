"""Probe: Tritium's matmul compiled under variants of a module-level switch, against Triton,
interleaved A,B,B,A.  Each variant is compiled in its own cache directory (the on-disk key does not
see the switch).

    python bench/probe_variants.py --variant base=tritium_nvidia.lowering_tc:DESCRIPTOR_ADD64=0 \\
        --variant add64=tritium_nvidia.lowering_tc:DESCRIPTOR_ADD64=1 [--sizes 4096,8192]

A variant may set several switches (``a=m:X=1,m:Y=2``); ``@none`` stands for a function that answers
None (``tritium_nvidia.toolchain:nvjitlink_version=@none`` assembles with ptxas, found as usual or
through ``TRITIUM_PTXAS_PATH``).

(run 22 used it for the matmul loop's refill order)."""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_files import load_kernels  # noqa: E402
from interleave import host_line, interleaved, ratio_cell, sm_clock_mhz  # noqa: E402
from bench_matmul import run_matmul, rel_err  # noqa: E402


def _value(text: str):
    if text == "@none":  # a function answering None (e.g. ``toolchain:nvjitlink_version=@none``: ptxas)
        return lambda *a, **k: None
    return int(text) if text.lstrip("-").isdigit() else text


def parse(spec: str):
    """``name=module:ATTR=value[,module:ATTR=value...]`` -> (name, [(module, attr, value)])."""
    name, rest = spec.split("=", 1)
    settings = []
    for one in rest.split(","):
        target, value = one.rsplit("=", 1)
        module, attr = target.split(":")
        settings.append((importlib.import_module(module), attr, _value(value)))
    return name, settings


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", action="append", required=True)
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    import tritium
    import tritium.language as ttl
    import triton
    import triton.language as tl
    variants = [parse(v) for v in args.variant]
    originals = {(m, a): getattr(m, a) for _, settings in variants for m, a, _ in settings}
    impls = {name: load_kernels(f"mm_{name}", tritium, ttl, "matmul_kernels.py") for name, _ in variants}
    impls["triton"] = load_kernels("mm_triton", triton, tl, "matmul_kernels.py")
    dirs = {name: tempfile.mkdtemp(prefix=f"tritium-{name}-") for name, _ in variants}
    print(host_line())
    bad, rows = 0, []
    cases = []
    for size in [int(s) for s in args.sizes.split(",")]:
        cases += [(torch.float16, size, (128, 256, 64, 8, 8, 3)), (torch.float16, size, (128, 256, 64, 8, 8, 4)),
                  (torch.float16, size, (128, 128, 64, 8, 4, 4)), (torch.bfloat16, size, (128, 256, 64, 8, 8, 3))]
    for dt, size, cfg in cases:
        a = torch.randn(size, size, device="cuda", dtype=dt)
        b = torch.randn(size, size, device="cuda", dtype=dt)
        ref = (a.float() @ b.float()).double()
        c = torch.empty((size, size), device="cuda", dtype=dt)
        fns = {}
        for name, k in impls.items():
            for (mod, attr), value in originals.items():  # every variant starts from the defaults
                setattr(mod, attr, value)
            for vname, settings in variants:
                if vname == name:  # compile now, with this variant's switches and cache
                    for mod, attr, value in settings:
                        setattr(mod, attr, value)
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
        tf = {n: 2 * size ** 3 / (x.median_ms * 1e-3) / 1e12 for n, x in t.items()}
        rows.append((f"{str(dt)[6:]} {size}^3 {cfg}", tf, [ratio_cell(t, name) for name, _ in variants]))
    print(f"SM clock after: {sm_clock_mhz()}")
    names = [name for name, _ in variants]
    print(f"{'case':<40} " + " ".join(f"{n:>9}" for n in names + ["triton"]) + "  " +
          "  ".join(f"{n}/triton" for n in names))
    for case, tf, ratios in rows:
        print(f"{case:<40} " + " ".join(f"{tf[n]:>9.0f}" for n in names + ["triton"]) + "  " + "  ".join(ratios))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
