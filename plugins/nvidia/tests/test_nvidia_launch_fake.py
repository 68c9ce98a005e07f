"""CPU-only: the launch fast path with torch tensors through the real cuda.bindings, against the fake
two-device libcuda.so.1 (fakecuda/), in a subprocess that sees no other CUDA driver.  torch must be
a CPU build: its CPU tensors pose as CUDA tensors there (fakecuda/cases_torch_launch.py)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fakecuda  # noqa: E402

torch = pytest.importorskip("torch", reason="the cases launch torch tensors")

_BOOT = """
import sys
import fakecuda
fakecuda.load()
import torch
if torch.version.cuda is not None:
    print("torch is a CUDA build here (its CUDA runtime would load beside the fake driver)")
    sys.exit(77)
other = fakecuda.foreign_drivers()
if other:
    print("another CUDA driver is loaded with the fake:", ", ".join(other))
    sys.exit(77)
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


@pytest.mark.skipif(fakecuda.compiler() is None, reason="no C compiler to build the fake libcuda")
def test_torch_launch_cases_on_the_fake_driver(tmp_path):
    path = fakecuda.build()
    env = dict(os.environ, TRITIUM_FAKECUDA="1", TRITIUM_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    env.pop("TRITIUM_BACKEND", None)
    env = fakecuda.isolated_env(env, path)
    proc = subprocess.run([sys.executable, "-c", _BOOT, "-q", "-p", "no:cacheprovider",
                           os.path.join(HERE, "fakecuda", "cases_torch_launch.py")],
                          capture_output=True, text=True, env=env, timeout=900)
    if proc.returncode == 77:
        pytest.skip(f"the fake driver cannot be isolated here: {proc.stdout.strip()}")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout
