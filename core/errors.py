"""The root of the errors a kernel author can cause (Triton's ``triton.errors.TritonError``):
``except tritium.TritonError`` catches compile-time errors (``CompilationError``) and the
interpreter's run-time ones alike."""
from __future__ import annotations


class TritonError(Exception):
    """Base class of every error Tritium raises for a kernel or its launch."""


class StaticAssertionFailed(AssertionError):
    """What ``tl.static_assert`` raises when its condition is false; the compiler reports it as a
    ``CompileTimeAssertionFailure`` at the assert's line (no other error is its cause)."""
