"""``tritium.compiler``: compile a kernel ahead of time (``compile``, ``ASTSource``, ``IRSource``,
``CompiledKernel``); the implementation is :mod:`tritium.compiler.compiler`, the errors
:mod:`tritium.compiler.errors` (the module layout of ``triton.compiler``)."""
from . import compiler, errors  # noqa: F401
from .compiler import (ASTSource, CompiledKernel, KernelMetadata, _fingerprint, build,  # noqa: F401
                       compile, compile_specialized, make_backend, triton_key)
from .errors import CompilationError, CompileTimeAssertionFailure, UnsupportedLanguageConstruct  # noqa: F401
from ..ir_source import IRSource  # noqa: F401

__all__ = ["compile", "make_backend", "ASTSource", "IRSource", "CompiledKernel", "CompilationError",
           "CompileTimeAssertionFailure", "triton_key"]
