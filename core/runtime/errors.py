"""``tritium.runtime.errors``: the run-time errors under Triton's names (``triton.runtime.errors``).

``OutOfResources`` is what a launch raises when a kernel needs more of a per-block resource than
the device has (shared memory, registers); autotuners (Tritium's, Inductor's) skip such a
configuration rather than fail.  ``PTXASError`` is the NVIDIA assembler's refusal."""
from __future__ import annotations

from ..backends.interpreter.errors import InterpreterError  # noqa: F401  (what the interpreter raises)
from ..errors import TritonError  # noqa: F401  (the root of every Tritium error)


class OutOfResources(TritonError):
    """``OutOfResources(required, limit, name)``: ``name`` (e.g. ``"shared memory"``) needs
    ``required``, the hardware allows ``limit``; one string argument is taken as the message."""

    def __init__(self, required, limit=None, name: str | None = None):
        self.required, self.limit, self.name = required, limit, name
        if limit is None and name is None:
            message = str(required)
        else:
            message = (f"out of resource: {name}, Required: {required}, Hardware limit: {limit}. "
                       "Reducing block sizes or `num_stages` may help.")
        self.message = message
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.required, self.limit, self.name))


class PTXASError(TritonError):
    """``ptxas`` rejected the PTX of a kernel."""


class AutotunerError(TritonError):
    """The autotuner could not pick a configuration."""


__all__ = ["TritonError", "OutOfResources", "PTXASError", "InterpreterError", "AutotunerError"]
