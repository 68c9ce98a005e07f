"""Tritium's cross-backend conformance suite.

The same data-driven cases (``conformance/cases/``) run on every installed backend; each checks
a kernel's outputs against a reference computed independently in numpy.  Entry points:
``tritium conformance`` / ``python -m conformance`` (:mod:`conformance.cli`) and
``pytest conformance --tritium-backend NAME`` (:mod:`conformance.conftest`).
"""
from .case import Case, CopyOf, Err, Gen, Out, Rand, Scalar

__all__ = ["Case", "CopyOf", "Err", "Gen", "Out", "Rand", "Scalar"]


def compile_suite(backend: str, target: str, json_path, jobs: int = 2, timeout: float = 1800,
                  skip: tuple = ()) -> list:
    """Run ``tritium conformance --backend B --target T --compile-only`` in a subprocess (what a
    plugin's CI test does), leaving out the ``skip`` patterns; assert it exited 0 and return its
    results (a list of dicts with ``status``)."""
    import json
    import subprocess
    import sys
    cmd = [sys.executable, "-m", "conformance", "--backend", backend, "--target", target, "--compile-only",
           "-j", str(jobs), "--json", str(json_path), *(a for p in skip for a in ("--skip", p))]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return json.loads(open(json_path).read())["results"]
