"""``tritium examples``: run Triton's tutorial kernels on a backend and check them against numpy.

On a machine without a GPU the default backend is the interpreter, so this is what the README's
first command runs.  Each example draws fresh random inputs, poisons its outputs, launches the
kernel unchanged from the tutorial, and compares with a float64 numpy reference.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from .checks import EXAMPLES
from ..hooks import manager


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="tritium examples", description=__doc__.splitlines()[0])
    p.add_argument("--backend", help="backend name (default: the one a plain launch would pick)")
    p.add_argument("--seed", type=int, default=None, help="input seed (default: fresh)")
    p.add_argument("-k", dest="only", action="append", default=[], help="run only examples whose name contains this")
    args = p.parse_args(argv)

    try:
        backend = manager.get_backend(args.backend) if args.backend else manager.select_backend(None, ())
    except ValueError as exc:
        p.error(str(exc))  # one line, exit status 2
    names = [name for name, _ in EXAMPLES]
    unknown = [o for o in args.only if not any(o in name for name in names)]
    if unknown:
        p.error(f"-k {unknown[0]!r} matches no example (examples: {', '.join(names)})")
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % 2**31)
    rng = np.random.default_rng(seed)
    print(f"backend: {backend.name} ({backend.default_target()}), seed {seed}")
    print(f"{'example':<28}{'problem':<26}{'max rel err':>12}{'tolerance':>11}{'seconds':>9}  result")
    failures = 0
    for name, fn in EXAMPLES:
        if args.only and not any(o in name for o in args.only):
            continue
        t0 = time.perf_counter()
        try:
            problem, err, tol = fn(backend, rng)
            ok = bool(np.isfinite(err) and err <= tol)
            status = "ok" if ok else "MISMATCH"
        except Exception as e:  # noqa: BLE001 - report and go on with the other examples
            problem, err, tol, ok = "", float("nan"), float("nan"), False
            status = f"ERROR: {type(e).__name__}: {e}"
        failures += not ok
        dt = time.perf_counter() - t0
        print(f"{name:<28}{problem:<26}{err:>12.2e}{tol:>11.0e}{dt:>9.2f}  {status}")
    print(f"{'all examples match their references' if not failures else f'{failures} example(s) failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
