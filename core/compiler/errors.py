"""``tritium.compiler.errors``: the errors a kernel's compilation raises (Triton's
``triton.compiler.errors``).  ``CompileTimeAssertionFailure`` is a failed ``tl.static_assert``;
``UnsupportedLanguageConstruct`` Python the kernel language does not have.  All are
``CompilationError``s, which are ``tritium.TritonError``s."""
from ..frontend.errors import (CompilationError, CompileTimeAssertionFailure,  # noqa: F401
                               UnsupportedLanguageConstruct)

__all__ = ["CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"]
