"""Tritium: a plugin-based, multi-backend compiler for block-level GPU kernels in the Triton
programming model.  ``import tritium as triton`` runs Triton kernels unchanged.

Importing this package is cheap: the compiler (xDSL, llvmlite) and the plugins load on first use.
"""
from __future__ import annotations
from .hooks.types import GPUTarget

__version__ = "0.1.0"

from . import knobs  # noqa: F401  (process-wide settings; pure Python)
from . import language  # noqa: F401  (pure Python)
from .errors import TritonError  # noqa: F401
from .frontend.errors import CompilationError  # noqa: F401
from .language.core import constexpr_function, must_use_result  # noqa: F401
from .language.functions import cdiv, next_power_of_2  # noqa: F401
from .runtime.autotuner import Config, autotune, heuristics  # noqa: F401
from .runtime.interface import KernelInterface  # noqa: F401
from .runtime.jit import JITFunction, jit  # noqa: F401
from .runtime.specialize import TensorWrapper, reinterpret  # noqa: F401
from .runtime._allocation import set_allocator  # noqa: F401
from .runtime.errors import InterpreterError, OutOfResources  # noqa: F401


def compile(*args, **kwargs):
    from .compiler import compile as _compile
    return _compile(*args, **kwargs)


def install_as_triton():
    """Make ``import triton`` resolve to Tritium for the rest of this process (``triton.__version__``
    is the Triton API version Tritium implements); see :mod:`tritium.triton_alias`."""
    from .triton_alias import install_as_triton as _install
    return _install()


def __getattr__(name):
    if name in ("testing", "compiler", "examples"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    if name == "GPUTarget":
        return GPUTarget
    if name == "ASTSource":
        from .compiler import ASTSource
        return ASTSource
    if name == "IRSource":
        from .compiler import IRSource
        return IRSource
    raise AttributeError(f"module 'tritium' has no attribute {name!r}")


__all__ = ["jit", "autotune", "heuristics", "Config", "compile", "cdiv", "next_power_of_2", "CompilationError", "TritonError",
           "JITFunction", "KernelInterface", "reinterpret", "TensorWrapper", "language", "testing",
           "constexpr_function", "knobs", "set_allocator", "must_use_result", "InterpreterError", "OutOfResources",
           "install_as_triton"]
