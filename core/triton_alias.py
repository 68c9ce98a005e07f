"""``tritium.install_as_triton()``: make ``import triton`` (and every ``triton.*`` module) resolve
to Tritium for the rest of the process, so code and libraries written against Triton run on
Tritium without editing their imports.

``triton`` itself is a small module of its own that forwards every attribute to ``tritium`` and
reports ``__version__`` as the Triton API version Tritium implements (:data:`TRITON_API_VERSION`);
libraries choose code paths by it, while ``tritium.__version__`` stays Tritium's own.  Every
other name is the Tritium module itself: ``sys.modules["triton.language"] is tritium.language``.

For a process started by someone else, see :mod:`tritium.run_as_triton`.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
import tritium

#: The Triton release whose Python API Tritium implements: ``triton.__version__`` under the alias.
TRITON_API_VERSION = "3.6.0"

#: The folder holding the ``triton`` package that installs the alias when imported; on
#: ``sys.path`` / ``PYTHONPATH`` it makes ``import triton`` mean Tritium (see run_as_triton).
SHIM_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_triton_shim")


class _TritonAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``triton.X`` as ``tritium.X`` (the same module object)."""

    def find_spec(self, name, path=None, target=None):
        if name.startswith("triton."):
            real = "tritium" + name[len("triton"):]
            try:
                spec = importlib.util.find_spec(real)
            except (ImportError, ValueError):
                return None
            if spec is None:
                return None  # no such Tritium module: the import fails as usual
            return importlib.util.spec_from_loader(name, self, is_package=spec.submodule_search_locations is not None)
        return None

    def create_module(self, spec):
        module = importlib.import_module("tritium" + spec.name[len("triton"):])
        # the import system stamps the alias's spec on the module it is given; keep the real one
        module.__dict__.setdefault("__tritium_spec__", module.__spec__)
        return module

    def exec_module(self, module):
        real = module.__dict__.pop("__tritium_spec__", None)
        if real is not None:
            module.__spec__ = real


def _triton_module() -> types.ModuleType:
    m = types.ModuleType("triton", "Tritium under Triton's name (tritium.install_as_triton()).")
    m.__version__ = TRITON_API_VERSION
    m.__path__ = []  # a package: ``import triton.language`` goes through the alias finder
    # a spec, as every imported module has: importlib.util.find_spec("triton") (PyTorch's probe
    # for a Triton) raises ValueError on a module without one
    m.__spec__ = importlib.machinery.ModuleSpec("triton", None, is_package=True)
    m.__spec__.submodule_search_locations = []
    m.__file__ = tritium.__file__
    m.__tritium__ = tritium
    m.__all__ = list(getattr(tritium, "__all__", ()))

    def __getattr__(name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        try:
            return getattr(tritium, name)
        except AttributeError:
            raise AttributeError(f"module 'triton' (Tritium) has no attribute {name!r}") from None

    def __dir__():
        return sorted(set(dir(tritium)) | set(m.__dict__))

    m.__getattr__ = __getattr__
    m.__dir__ = __dir__
    return m


def install_as_triton() -> types.ModuleType:
    """From now on, in this process, ``import triton`` / ``import triton.language as tl`` /
    ``from triton.language.math import tanh`` resolve to Tritium, and ``triton.__version__`` is
    :data:`TRITON_API_VERSION`.  Returns the ``triton`` module.  Call it before anything imports
    ``triton``: a real Triton already imported in this process cannot be replaced (a
    ``RuntimeError`` says so).  An installed Triton that was not imported yet is hidden for this
    process only, since the call asks for that."""
    current = sys.modules.get("triton")
    if current is not None and getattr(current, "__tritium__", None) is not None:
        _ensure_finder()
        return current
    if current is not None and not _is_shim(current):
        where = getattr(current, "__file__", None) or "?"
        raise RuntimeError(f"tritium.install_as_triton(): a real Triton is already imported in this process (from "
                           f"{where}); call install_as_triton() before anything imports triton")
    stale = [n for n in sys.modules if n.startswith("triton.")]
    if stale:
        raise RuntimeError("tritium.install_as_triton(): modules of a real Triton are already imported "
                           f"({', '.join(sorted(stale)[:3])}...); call it before anything imports triton")
    _ensure_finder()
    module = _triton_module()
    sys.modules["triton"] = module
    return module


def _ensure_finder() -> None:
    if not any(isinstance(f, _TritonAlias) for f in sys.meta_path):
        sys.meta_path.insert(0, _TritonAlias())


def _is_shim(module) -> bool:
    """The ``triton`` package of SHIM_PATH while it runs (it calls install_as_triton)."""
    f = getattr(module, "__file__", None) or ""
    return os.path.dirname(os.path.dirname(os.path.abspath(f))) == SHIM_PATH if f else False
