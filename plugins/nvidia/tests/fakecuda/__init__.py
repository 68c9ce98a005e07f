"""Build and load ``fake_libcuda.c``: a libcuda.so.1 with two fake devices and no GPU, so that the
NVIDIA driver's multi-device logic and its launch path run through the real ``cuda.bindings`` on a
CPU-only machine.  Load it in a process of its own (a subprocess): once loaded, every CUDA call of
that process goes to the fake.

    lib = fakecuda.load()           # None when there is no C compiler
    lib.fake_launch_count           # ctypes views of what the fake recorded

On a machine with a real driver the subprocess must see the fake only: :func:`isolated_env`
preloads it (every ``dlopen("libcuda.so.1")`` then finds it) and :func:`foreign_drivers` names any
other libcuda mapped into the process, which the cases check before and after using CUDA.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "fake_libcuda.c")


class LastLaunch(ctypes.Structure):
    _fields_ = [("function", ctypes.c_void_p), ("device", ctypes.c_int), ("stream", ctypes.c_void_p),
                ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint),
                ("params", ctypes.c_uint64 * 16), ("n_params", ctypes.c_int), ("cluster", ctypes.c_uint * 3)]


def compiler() -> str | None:
    return shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")


def build(directory: str | None = None) -> str | None:
    """Path of the built library (cached by the source's hash), or None without a C compiler."""
    cc = compiler()
    if cc is None:
        return None
    with open(SOURCE, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    out_dir = os.path.join(directory or tempfile.gettempdir(), f"tritium-fakecuda-{digest}")
    path = os.path.join(out_dir, "libcuda.so.1")
    if not os.path.exists(path):
        os.makedirs(out_dir, exist_ok=True)
        tmp = f"{path}.{os.getpid()}"
        subprocess.run([cc, "-O2", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", tmp, SOURCE],
                       check=True, capture_output=True)
        os.replace(tmp, path)
    return path


class Fake:
    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        self.count = ctypes.c_long.in_dll(lib, "fake_launch_count")
        self.last = LastLaunch.in_dll(lib, "fake_last_launch")
        self.n_params = ctypes.c_int.in_dll(lib, "fake_launch_params")

    def set_device_count(self, n: int) -> None:
        self.lib.fake_set_device_count(n)

    def current_context_device(self) -> int | None:
        """The device of the calling thread's current context, or None (read through the fake)."""
        from cuda.bindings import driver as cu
        err, dev = cu.cuCtxGetDevice()
        return int(dev) if err == cu.CUresult.CUDA_SUCCESS else None


def isolated_env(env: dict, path: str) -> dict:
    """``env`` for a subprocess whose only CUDA driver is the fake at ``path``: preloaded, and first
    on the library path, so a lookup by soname finds it whatever else is installed."""
    env = dict(env)
    here = os.path.dirname(path)
    env["LD_PRELOAD"] = " ".join(p for p in [path, env.get("LD_PRELOAD", "")] if p)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in [here, env.get("LD_LIBRARY_PATH", "")] if p)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # no third-party plugin brings its own CUDA in
    return env


def foreign_drivers(fake_path: str | None = None) -> list[str]:
    """Every libcuda mapped into this process that is not the fake (Linux; [] elsewhere)."""
    fake = os.path.realpath(fake_path or build() or "")
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}
    except OSError:
        return []
    return sorted(p for p in paths if os.path.basename(p).startswith("libcuda.so") and os.path.realpath(p) != fake)


def load() -> Fake | None:
    """Load the fake driver into this process (before anything else loads libcuda)."""
    path = build()
    if path is None:
        return None
    return Fake(ctypes.CDLL(path, mode=os.RTLD_GLOBAL))
