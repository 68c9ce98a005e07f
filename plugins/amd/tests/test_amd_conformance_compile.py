"""CPU-only: the whole conformance suite compiles to hsaco for gfx942 (wave64, MFMA) and gfx1100
(wave32, WMMA), no device or ROCm needed; every case is built to its code object and checked by
the driver's ``check_binary`` (ELF machine AMDGPU, amdhsa metadata naming the kernel, kernarg
layout of the signature, wavefront size, LDS size equal to the allocation pass's); the error cases
must be rejected.  Same as ``tritium conformance --backend amd --target hip:gfx942 --compile-only``."""
import json
import subprocess
import sys

import pytest


@pytest.mark.parametrize("target", ["hip:gfx942", "hip:gfx1100"])
def test_conformance_compiles(target, tmp_path):
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "conformance", "--backend", "amd", "--target", target, "--compile-only",
           "-j", "2", "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    results = json.loads(out.read_text())["results"]
    statuses = {r["status"] for r in results}
    assert statuses <= {"compiled", "passed", "excluded"}, statuses
    assert sum(r["status"] == "compiled" for r in results) > 1000
    # the exclusions (docs/amd.md): fp64 transcendental math and device-library calls (no ocml),
    # PTX inline assembly, two tiles needing more than 64 KiB of LDS
    assert sum(r["status"] == "excluded" for r in results) < 125
