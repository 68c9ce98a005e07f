"""``tritium.compiler``: compile a kernel ahead of time (``compile``, ``ASTSource``, ``IRSource``,
``CompiledKernel``), with the module layout of ``triton.compiler``: the front door is
:mod:`tritium.compiler.compiler`, the errors :mod:`tritium.compiler.errors`.  Beside them:
:mod:`~tritium.compiler.source` (what a compile starts from: ``ASTSource``, ``IRSource``),
:mod:`~tritium.compiler.kernel` (``CompiledKernel``, its metadata and launch),
:mod:`~tritium.compiler.stage_runner` (``build``: the stages through the on-disk cache) and
:mod:`~tritium.compiler.compile_ir` (which stages an IR source runs)."""
from . import compiler, errors  # noqa: F401
from .compiler import compile, compile_specialized, make_backend, triton_key  # noqa: F401
from .errors import CompilationError, CompileTimeAssertionFailure, UnsupportedLanguageConstruct  # noqa: F401
from .kernel import CompiledKernel, KernelMetadata  # noqa: F401
from .source import ASTSource, IRSource  # noqa: F401
from .stage_runner import build  # noqa: F401

__all__ = ["compile", "make_backend", "ASTSource", "IRSource", "CompiledKernel", "CompilationError",
           "CompileTimeAssertionFailure", "triton_key"]
