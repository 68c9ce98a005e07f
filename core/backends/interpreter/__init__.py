"""The reference interpreter backend: executes TTIR with numpy, vectorised over each block."""
from .errors import InterpreterError, KernelAssertionError

__all__ = ["InterpreterError", "KernelAssertionError"]
