"""CPU-only: the whole conformance suite compiles to cubin for cuda:90 and cuda:80 (no device
needed), every case built to its final binary and checked by the driver's ``check_binary``; the
error cases must be rejected.  Same as ``tritium conformance --backend nvidia --target cuda:90``."""
import json
import subprocess
import sys

import pytest


@pytest.mark.parametrize("target", ["cuda:80", "cuda:90"])
def test_conformance_compiles(target, tmp_path):
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "conformance", "--backend", "nvidia", "--target", target, "--compile-only",
           "-j", "2", "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    results = json.loads(out.read_text())["results"]
    statuses = {r["status"] for r in results}
    assert statuses <= {"compiled", "passed", "excluded"}, statuses
    assert sum(r["status"] == "compiled" for r in results) > 900
