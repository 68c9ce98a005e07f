"""CPU-only: the conformance suite compiles to cubin for cuda:90 and cuda:80 (no device needed).

A dozen categories per target keep this to a few minutes on a 2-core machine; the full matrix is
``python -m conformance --backend nvidia --target cuda:90 --compile-only``."""
import subprocess
import sys

import pytest

CATEGORIES = {
    "cuda:90": ["elementwise", "reductions", "scans", "dot", "shapes", "control_flow", "functions", "masks",
                "grids", "atomics", "tutorials", "block_ptr"],
    "cuda:80": ["casts", "math", "reductions", "dot", "atomics", "tutorials"],
}


@pytest.mark.parametrize("target", sorted(CATEGORIES))
def test_conformance_compiles(target, tmp_path):
    cmd = [sys.executable, "-m", "conformance", "--backend", "nvidia", "--target", target, "--compile-only",
           "-j", "2", "--json", str(tmp_path / "r.json")]
    for c in CATEGORIES[target]:
        cmd += ["--category", c]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "failed" not in proc.stdout.split("TOTAL")[-1]
