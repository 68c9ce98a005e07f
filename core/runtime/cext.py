"""Small C extensions built on first use with the system C compiler, for the launch path's hot
steps (the core's argument binder, ``c_binder.py``; a backend's slot writer and launch call;
torch's tensor fields read in C++, ``torch_reader.py``).

:func:`load` compiles ``source`` (one C file defining ``PyInit_<name>``) into Tritium's cache
directory, once per source, Python version and headers, and imports it.  Where that cannot be
done (no compiler, no Python headers, a failed build or import) it returns None and the caller
keeps its pure-Python path: the extensions only ever make launches cheaper, never possible.
``load(..., cxx=True)`` builds C++ (``torch_reader.py`` calls it on a thread of its own: a build
against torch's headers takes seconds, which no launch waits for)."""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sysconfig
import threading
from .. import knobs
from .cache import cache_dir

_lock = threading.Lock()
_locks: dict = {}    # (name, source) -> the lock its build is made under
_loaded: dict = {}   # (name, source) -> module or None, once tried


def _compiler(cxx: bool) -> str | None:
    if cxx:
        return shutil.which(knobs.build.cxx or "c++") or shutil.which("g++")
    return shutil.which(knobs.build.cc or "cc") or shutil.which("gcc")


def _target(directory: str, name: str, source: str, cxx: bool = False, flags: tuple = (),
            flag_sets: tuple = ((),)):
    """``(compiler, Python's include directory, the built module's path)``, or None where this
    machine has no compiler or no Python headers."""
    cc = _compiler(cxx)
    include = sysconfig.get_paths().get("include")
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    if cc is None or not include or not os.path.exists(os.path.join(include, "Python.h")):
        return None
    digest = hashlib.sha256("\0".join([source, suffix, include, cc, *flags, *map(" ".join, flag_sets)])
                            .encode()).hexdigest()[:16]
    return cc, include, os.path.join(directory, name, digest, name + suffix)


def _build(directory: str, name: str, source: str, cxx: bool = False, flags: tuple = (),
           flag_sets: tuple = ((),)) -> str | None:
    """Build ``source`` (C, or C++ with ``cxx``) with ``flags`` and the first of ``flag_sets``
    that compiles (for example the C++ standard a header set needs), into ``directory``."""
    target = _target(directory, name, source, cxx, flags, flag_sets)
    if target is None:
        return None
    cc, include, path = target
    if os.path.exists(path):
        return path
    if os.path.exists(path + ".failed"):   # this source did not compile here: not again in every process
        return None
    out_dir = os.path.dirname(path)
    os.makedirs(out_dir, exist_ok=True)
    tag = f"{os.getpid()}.{threading.get_ident()}"
    src = os.path.join(out_dir, f"{name}.{tag}.{'cpp' if cxx else 'c'}")
    tmp = f"{path}.{tag}.tmp"
    with open(src, "w") as f:
        f.write(source)
    try:
        errors = []
        for extra in flag_sets:
            proc = subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{include}", *extra, "-o", tmp, src, *flags],
                                  capture_output=True, text=True, timeout=300)
            if proc.returncode == 0:
                break
            errors.append(proc.stderr[-4000:])
        else:
            with open(path + ".failed", "w") as f:   # the compiler's last words, for whoever looks
                f.write("\n".join(errors))
            return None
        os.replace(tmp, path)   # atomic: a concurrent builder's identical file may win
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        for p in (src, tmp):
            if os.path.exists(p):
                os.remove(p)
    return path


def _import(name: str, path: str):
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def load(name: str, source: str, **build):
    """The extension module ``name`` built from ``source`` (``build``: ``_build``'s ``cxx``,
    ``flags``, ``flag_sets``), or None where it cannot be built or imported here."""
    key = (name, source)
    if key in _loaded:
        return _loaded[key]
    with _lock:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:  # one build per extension; others' builds go on meanwhile
        if key not in _loaded:
            mod = None
            try:
                path = _build(str(cache_dir()), name, source, **build)
                if path is not None:
                    mod = _import(name, path)
            except (OSError, ImportError):
                mod = None
            _loaded[key] = mod
    return _loaded[key]


def built(name: str, source: str, **build) -> bool:
    """Whether :func:`load` would return at once, with no compile: the module is built, or
    this process has loaded or tried it already."""
    if (name, source) in _loaded:
        return True
    try:
        target = _target(str(cache_dir()), name, source, **build)
        return target is not None and os.path.exists(target[2])
    except OSError:
        return False
