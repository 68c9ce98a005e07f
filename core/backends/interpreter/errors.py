"""Errors a kernel run on the interpreter can raise; each names the kernel, its source line and
the program id."""
from __future__ import annotations

import re

from ...errors import TritonError
from ...frontend.errors import CompilationError


class InterpreterError(TritonError, RuntimeError):
    """A kernel did something undefined on real hardware (out-of-bounds or misaligned access, an
    unsupported op); the message names the kernel, ``file:line`` and the program id."""

    def __init__(self, message: str, *, kernel: str = "", where: str = "", pid: tuple = ()):
        self.kernel, self.where, self.pid, self.detail = kernel, where, tuple(pid), message
        head = f"kernel {kernel!r}" if kernel else "kernel"
        loc = f" at {where}" if where else ""
        prog = f", program id {tuple(int(p) for p in pid)}" if pid else ""
        super().__init__(f"{head}{loc}{prog}: {message}")


_INTERPRETED: dict[type, type] = {}


def interpreted_compilation_error(original: CompilationError) -> CompilationError:
    """A compile error met by a launch on the interpreter, as Triton's interpreter raises it: also
    an ``InterpreterError`` (its interpreter runs the kernel's Python and reports every error in it
    so).  It stays an instance of the original's class (``CompileTimeAssertionFailure``, ...) with
    the same message and fields; raise it ``from`` the original's cause."""
    cls = type(original)
    sub = _INTERPRETED.get(cls)
    if sub is None:
        sub = _INTERPRETED[cls] = type(cls.__name__, (cls, InterpreterError),
                                       {"__str__": cls.__str__, "__module__": cls.__module__,
                                        "__qualname__": cls.__qualname__})
    err = sub.__new__(sub)
    Exception.__init__(err, *original.args)
    err.__dict__.update(original.__dict__)
    err.kernel, err.where, err.pid = getattr(original, "fn_name", "") or "", "", ()
    err.detail = getattr(original, "error_message", str(original))
    return err


class KernelAssertionError(InterpreterError, AssertionError):
    """``tl.device_assert`` failed (``tt.assert``); carries the message and the failing indices."""


def location_of(op) -> str:
    """``file:line`` of an xDSL op's ``loc`` (empty when unknown)."""
    loc = getattr(op, "location", None)
    if loc is None:
        return ""
    if hasattr(loc, "filename") and hasattr(loc, "line"):
        return f"{loc.filename.data}:{loc.line.data}"
    # callsite / fused / name locations print one or more "file":line:col inside
    m = re.search(r'"([^"]*)":(\d+)', str(loc))
    return f"{m.group(1)}:{m.group(2)}" if m else ""
