"""The root of the errors a kernel author can cause (Triton's ``triton.errors.TritonError``):
``except tritium.TritonError`` catches compile-time errors (``CompilationError``) and the
interpreter's run-time ones alike."""
from __future__ import annotations


class TritonError(Exception):
    """Base class of every error Tritium raises for a kernel or its launch."""
