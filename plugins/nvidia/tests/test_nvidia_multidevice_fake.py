"""CPU-only: the NVIDIA driver's multi-device launch logic through the real cuda.bindings,
against a fake two-device libcuda.so.1 built with the system C compiler (fakecuda/).  The cases
run in a subprocess: a process that loads the fake sees it as its CUDA driver."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fakecuda  # noqa: E402


# The subprocess sees no other CUDA: the fake is preloaded, torch (which would bring its own CUDA
# runtime and ask it for streams) cannot be imported, and pytest loads no third-party plugin.
_BOOT = """
import sys
sys.modules["torch"] = None
import fakecuda
fakecuda.load()
other = fakecuda.foreign_drivers()
if other:
    print("another CUDA driver is loaded with the fake:", ", ".join(other))
    sys.exit(77)
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


@pytest.mark.skipif(fakecuda.compiler() is None, reason="no C compiler to build the fake libcuda")
def test_multidevice_cases_on_the_fake_driver(tmp_path):
    path = fakecuda.build()
    env = dict(os.environ, TRITIUM_FAKECUDA="1", TRITIUM_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    env.pop("TRITIUM_BACKEND", None)
    env = fakecuda.isolated_env(env, path)
    proc = subprocess.run([sys.executable, "-c", _BOOT, "-q", "-p", "no:cacheprovider",
                           os.path.join(HERE, "fakecuda", "cases_multidevice.py")],
                          capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode == 77:
        pytest.skip(f"the fake driver cannot be isolated here: {proc.stdout.strip()}")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout
