"""Errors a kernel run on the interpreter can raise; each names the kernel, its source line and
the program id."""
from __future__ import annotations

import re

from ...errors import TritonError


class InterpreterError(TritonError, RuntimeError):
    """A kernel did something undefined on real hardware (out-of-bounds or misaligned access, an
    unsupported op); the message names the kernel, ``file:line`` and the program id."""

    def __init__(self, message: str, *, kernel: str = "", where: str = "", pid: tuple = ()):
        self.kernel, self.where, self.pid, self.detail = kernel, where, tuple(pid), message
        head = f"kernel {kernel!r}" if kernel else "kernel"
        loc = f" at {where}" if where else ""
        prog = f", program id {tuple(int(p) for p in pid)}" if pid else ""
        super().__init__(f"{head}{loc}{prog}: {message}")


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
