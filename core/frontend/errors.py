"""Errors a kernel author can cause, pointing at their own source line."""
from __future__ import annotations

import ast

from ..errors import TritonError


class CompilationError(TritonError):
    """A kernel could not be compiled.  The message quotes the offending source line with a caret
    under the column, then says what was expected and what was found."""

    def __init__(self, message: str, *, filename: str = "<unknown>", lineno: int | None = None,
                 col: int | None = None, source_line: str | None = None, fn_name: str | None = None,
                 notes: list[str] | None = None):
        self.error_message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.source_line = source_line
        self.fn_name = fn_name
        self.notes = notes or []
        super().__init__(self._format())

    def _format(self) -> str:
        where = f"{self.filename}:{self.lineno}:{(self.col or 0) + 1}" if self.lineno else self.filename
        head = f"{where}: in {self.fn_name}: {self.error_message}" if self.fn_name else f"{where}: {self.error_message}"
        parts = [head]
        if self.source_line is not None:
            line = self.source_line.rstrip("\n")
            stripped = line.lstrip()
            indent = len(line) - len(stripped)
            parts.append("    " + stripped)
            parts.append("    " + " " * max((self.col or 0) - indent, 0) + "^")
        parts.extend(self.notes)
        return "\n".join(parts)

    def add_note(self, note: str) -> None:  # keep the call chain visible for errors in callees
        self.notes.append(note)
        self.args = (self._format(),)

    def __reduce__(self):  # a pickled error (e.g. from a compile worker) keeps its class
        return (_rebuild, (self.error_message, self.filename, self.lineno, self.col, self.source_line,
                           self.fn_name, self.notes, type(self)))


def _rebuild(message, filename, lineno, col, source_line, fn_name, notes, cls=None):
    return (cls or CompilationError)(message, filename=filename, lineno=lineno, col=col, source_line=source_line,
                                     fn_name=fn_name, notes=notes)


class UnsupportedLanguageConstruct(CompilationError):
    pass


class CompileTimeAssertionFailure(CompilationError):
    """A ``tl.static_assert`` whose condition was false when the kernel was compiled."""


class KernelArgumentError(CompilationError, TypeError):
    """A launch whose arguments do not fit the kernel's parameters (count, names, types).  It is
    also a ``TypeError``, as Python raises for a bad call."""


class KernelArgumentOverflowError(CompilationError, OverflowError):
    """An integer launch argument no kernel parameter can hold (outside [-2**63, 2**64)).  It is
    also an ``OverflowError``, as Triton's launcher raises."""


def error_class(exc_or_msg) -> type[CompilationError]:
    """The located error that reports ``exc_or_msg`` (an exception or a message)."""
    from ..errors import StaticAssertionFailed
    if isinstance(exc_or_msg, StaticAssertionFailed):
        return CompileTimeAssertionFailure
    if isinstance(exc_or_msg, str) and exc_or_msg.startswith("unsupported"):
        return UnsupportedLanguageConstruct
    return CompilationError


def describe(exc: BaseException) -> str:
    """A user-facing description of an exception raised while emitting IR."""
    msg = str(exc)
    if isinstance(exc, (TypeError, ValueError, AssertionError, NameError, NotImplementedError)) and msg:
        return msg
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def original(exc: BaseException) -> BaseException | None:
    """``exc`` to be kept as a located error's ``__cause__``: its own type and words stay readable
    (``exc_info.value.__cause__``, as Triton's tests read them) while the compiler frames it was
    raised through are dropped, so a traceback shows the cause's message and then the user's line."""
    from ..errors import StaticAssertionFailed
    if isinstance(exc, StaticAssertionFailed):
        return None  # the assertion is the whole story: ``raise ... from None``
    exc.__suppress_context__ = True
    return exc.with_traceback(None)


def error_at_op(op, message: str) -> CompilationError:
    """A :class:`CompilationError` at the kernel line an IR op came from (its ``loc``)."""
    import linecache
    loc = getattr(op, "location", None)
    filename = getattr(getattr(loc, "filename", None), "data", None)
    line = getattr(getattr(loc, "line", None), "data", None)
    col = getattr(getattr(loc, "column", None), "data", None)
    if not filename or not line:
        return CompilationError(message)
    source = linecache.getline(filename, line) or None
    return CompilationError(message, filename=filename, lineno=line, col=col, source_line=source)


def node_position(node: ast.AST | None) -> tuple[int | None, int | None]:
    if node is None:
        return None, None
    return getattr(node, "lineno", None), getattr(node, "col_offset", None)
