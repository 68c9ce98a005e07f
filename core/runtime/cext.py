"""Small C extensions built on first use with the system C compiler, for the launch path's hot
steps (the core's argument binder, ``c_binder.py``; a backend's slot writer and launch call).

:func:`load` compiles ``source`` (one C file defining ``PyInit_<name>``) into Tritium's cache
directory, once per source, Python version and headers, and imports it.  Where that cannot be
done (no compiler, no Python headers, a failed build or import) it returns None and the caller
keeps its pure-Python path: the extensions only ever make launches cheaper, never possible."""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sysconfig
import threading

_lock = threading.Lock()
_loaded: dict = {}   # (name, source) -> module or None, once tried


def _build(directory: str, name: str, source: str) -> str | None:
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    include = sysconfig.get_paths().get("include")
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    if cc is None or not include or not os.path.exists(os.path.join(include, "Python.h")):
        return None
    digest = hashlib.sha256((source + suffix + include).encode()).hexdigest()[:16]
    out_dir = os.path.join(directory, name, digest)
    path = os.path.join(out_dir, name + suffix)
    if os.path.exists(path):
        return path
    os.makedirs(out_dir, exist_ok=True)
    src = os.path.join(out_dir, f"{name}.{os.getpid()}.c")
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(src, "w") as f:
        f.write(source)
    try:
        proc = subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{include}", "-o", tmp, src],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            return None
        os.replace(tmp, path)   # atomic: a concurrent builder's identical file may win
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        for p in (src, tmp):
            if os.path.exists(p):
                os.remove(p)
    return path


def load(name: str, source: str):
    """The extension module ``name`` built from ``source``, or None where it cannot be built or
    imported here."""
    key = (name, source)
    if key in _loaded:
        return _loaded[key]
    with _lock:
        if key not in _loaded:
            mod = None
            try:
                from .cache import cache_dir
                path = _build(str(cache_dir()), name, source)
                if path is not None:
                    loader = importlib.machinery.ExtensionFileLoader(name, path)
                    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
                    mod = importlib.util.module_from_spec(spec)
                    loader.exec_module(mod)
            except (OSError, ImportError):
                mod = None
            _loaded[key] = mod
    return _loaded[key]
