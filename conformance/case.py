"""The case format: a few lines of data around a kernel.

A :class:`Case` names a kernel, how to make its arguments (``inputs``), which arguments are
outputs (``outputs``), the grid, the constexprs, and a numpy ``reference``.  The runner binds
inputs, outputs and constexprs to the kernel's parameters by name, in the kernel's order.

``reference`` receives, by parameter name, the values of the inputs (and of outputs that have an
``init``): float dtypes as exact float64 arrays, integer dtypes as arrays of their own fixed-width
numpy type (so arithmetic wraps like the device's), scalars as Python numbers.  It returns the
expected outputs: one array, a tuple in ``outputs`` order, or a dict by name.  A case whose
outputs cannot be predicted element by element (atomic exchange, ...) gives ``check`` instead:
``check(out, inp) -> None | str`` gets the decoded outputs and inputs and returns a complaint.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from . import dtypes


@dataclass(frozen=True)
class Rand:
    """Random values of ``dtype`` in [low, high], never zero (values within ``min_abs`` of zero
    are pushed away).  Integers default to the dtype's whole range; floats to [-4, 4]."""

    dtype: str
    shape: tuple = (1024,)
    low: float | None = None
    high: float | None = None
    min_abs: float = 1.0 / 64

    def values(self, rng: np.random.Generator) -> np.ndarray:
        shape = tuple(self.shape)
        if dtypes.is_int(self.dtype):
            lo, hi = dtypes.int_range(self.dtype)
            lo = lo if self.low is None else max(lo, int(self.low))
            hi = hi if self.high is None else min(hi, int(self.high))
            v = rng.integers(lo, hi, size=shape, dtype=dtypes.STORAGE[self.dtype], endpoint=True)
            if np.any(v == 0):  # replace zeros by an end of the range that is not zero
                v[v == 0] = hi if hi != 0 else lo
            return v
        lo = -4.0 if self.low is None else float(self.low)
        hi = 4.0 if self.high is None else float(self.high)
        v = rng.uniform(lo, hi, size=shape)
        small = np.abs(v) < self.min_abs
        if lo < 0 < hi:
            v = np.where(small, np.copysign(self.min_abs, v) * (1 + rng.random(shape)), v)
        else:
            v = np.where(small, max(lo, self.min_abs) if hi > 0 else min(hi, -self.min_abs), v)
        return dtypes.round_to(v, self.dtype)


@dataclass(frozen=True)
class Gen:
    """Values made by ``fn(rng, shape)`` (exact values; floats are rounded to ``dtype``)."""

    dtype: str
    shape: tuple
    fn: Callable[[np.random.Generator, tuple], Any]

    def values(self, rng: np.random.Generator) -> np.ndarray:
        v = np.asarray(self.fn(rng, tuple(self.shape)))
        if dtypes.is_float(self.dtype):
            return dtypes.round_to(v.astype(np.float64), self.dtype)
        return v.astype(dtypes.STORAGE[self.dtype])


@dataclass(frozen=True)
class CopyOf:
    """The same values as another argument's initial values (an input, or an output's ``init``)."""

    name: str
    dtype: str
    shape: tuple


@dataclass(frozen=True)
class Scalar:
    """A random scalar argument of ``dtype`` (passed as a Python int/float), never zero."""

    dtype: str = "int32"
    low: float = 1
    high: float = 100

    def values(self, rng: np.random.Generator):
        if dtypes.is_int(self.dtype):
            v = int(rng.integers(int(self.low), int(self.high), endpoint=True))
            return v if v != 0 else int(self.high)
        v = float(rng.uniform(self.low, self.high))
        return v if v != 0.0 else float(self.high)


@dataclass(frozen=True)
class Out:
    """An output argument: poisoned before launch (``poison`` "nan" or "sentinel") unless it has
    an ``init`` spec, in which case it starts with those values and the reference sees them."""

    dtype: str
    shape: tuple = (1024,)
    init: Any = None
    poison: str = "nan"


@dataclass(frozen=True)
class Err:
    """An expected compilation error: ``tritium.CompilationError`` whose message contains every
    fragment (a string, or a tuple of alternatives any one of which may appear) and, when
    ``line`` is given, that piece of the offending source line; with ``kind``, the error is of the
    ``CompilationError`` subclass of that name (e.g. ``"CompileTimeAssertionFailure"``)."""

    fragments: tuple = ()
    line: str | None = None
    kind: str | None = None

    def __init__(self, *fragments, line: str | None = None, kind: str | None = None):
        object.__setattr__(self, "fragments", fragments)
        object.__setattr__(self, "line", line)
        object.__setattr__(self, "kind", kind)

    def mismatch(self, message: str, exc: BaseException | None = None) -> str | None:
        if self.kind is not None and exc is not None and self.kind not in (c.__name__ for c in type(exc).__mro__):
            return f"expected a {self.kind}, got a {type(exc).__name__}"
        for frag in self.fragments:
            alts = frag if isinstance(frag, tuple) else (frag,)
            if not any(a.lower() in message.lower() for a in alts):
                return f"message lacks {' or '.join(repr(a) for a in alts)}"
        if self.line is not None and self.line not in message:
            return f"message does not quote the source line {self.line!r}"
        return None


@dataclass
class Case:
    id: str
    kernel: Any
    inputs: Mapping[str, Any] = field(default_factory=dict)
    outputs: Mapping[str, Out] = field(default_factory=dict)
    grid: Any = (1,)
    constexprs: Mapping[str, Any] = field(default_factory=dict)
    reference: Callable | None = None
    check: Callable | None = None
    rtol: float | None = None
    atol: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    expect_error: Err | None = None
    doc: str = ""
    #: ``stdout(text, inputs) -> None | message``: checks what the launch printed (device printf);
    #: the runner captures the process's standard output around the launch and synchronize
    stdout: Callable | None = None

    @property
    def category(self) -> str:
        return self.id.split("/", 1)[0]

    def __post_init__(self):
        if "/" not in self.id:
            raise ValueError(f"case id {self.id!r} must read 'category/name'")
        if self.expect_error is None and self.reference is None and self.check is None:
            raise ValueError(f"case {self.id} has neither a reference nor a check")
        if self.expect_error is None and not self.outputs:
            raise ValueError(f"case {self.id} has no outputs: it could not fail")

    def tolerance(self, tag: str) -> tuple[float, float]:
        rtol, atol = dtypes.TOLERANCE.get(tag, (0.0, 0.0))
        return (rtol if self.rtol is None else self.rtol, atol if self.atol is None else self.atol)


def tol(table: dict, tag: str) -> dict:
    """``rtol``/``atol`` keywords for a :class:`Case` from one of the tables in :mod:`dtypes`."""
    rtol, atol = table.get(tag, dtypes.TOLERANCE.get(tag, (0.0, 0.0)))
    return {"rtol": rtol, "atol": atol}
