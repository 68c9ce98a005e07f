"""Errors a kernel author can cause, pointing at their own source line."""
from __future__ import annotations

import ast
import os

from ..errors import TritonError, StaticAssertionFailed


class CompilationError(TritonError):
    """A kernel could not be compiled.  The message quotes the offending source line with a caret
    under the column, then says what was expected and what was found.

    The first line reads ``file:line:col: in fn at L:C: message``: ``file:line:col`` is the place in
    the user's file (column 1-based), ``at L:C:`` the same place counted as Triton counts it, from
    the function's ``def`` line (line 1) and its dedented text (column 0-based).  An error inside a
    called @jit function is raised again at each call site: that error's ``__cause__`` is the
    callee's, and its message adds, per call, ``called from file:line:col in caller at L:C:`` and
    the quoted call line."""

    def __init__(self, message: str, *, filename: str = "<unknown>", lineno: int | None = None,
                 col: int | None = None, source_line: str | None = None, fn_name: str | None = None,
                 notes: list[str] | None = None, position: tuple[int, int] | None = None,
                 calls: list[tuple] | None = None):
        self.error_message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.source_line = source_line
        self.fn_name = fn_name
        self.notes = notes or []
        self.position = tuple(position) if position is not None else None  # (line from def, 1-based; col, 0-based)
        self.calls = list(calls or [])  # call sites, innermost first: (filename, lineno, col, source_line, fn_name, position)
        super().__init__(self._format())

    @staticmethod
    def _quote(source_line: str | None, col: int | None) -> list[str]:
        if source_line is None:
            return []
        line = source_line.rstrip("\n")
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        return ["    " + stripped, "    " + " " * max((col or 0) - indent, 0) + "^"]

    @staticmethod
    def _where(filename, lineno, col, fn_name, position) -> str:
        where = f"{filename}:{lineno}:{(col or 0) + 1}" if lineno else filename
        at = f"at {position[0]}:{position[1]}" if position else ""
        if fn_name:
            return f"{where}: in {fn_name}" + (f" {at}" if at else "")
        return f"{where}: {at}" if at else where

    def _format(self) -> str:
        parts = [f"{self._where(self.filename, self.lineno, self.col, self.fn_name, self.position)}: "
                 f"{self.error_message}"]
        parts += self._quote(self.source_line, self.col)
        for filename, lineno, col, source_line, fn_name, position in self.calls:
            where = self._where(filename, lineno, col, fn_name, position).replace(": in ", " in ", 1)
            parts.append(f"  called from {where}:")
            parts += self._quote(source_line, col)
        parts.extend(self.notes)
        return "\n".join(parts)

    def add_note(self, note: str) -> None:
        self.notes.append(note)
        self.args = (self._format(),)

    def called_from(self, filename: str, lineno: int | None, col: int | None, source_line: str | None,
                    fn_name: str | None, position: tuple[int, int] | None) -> "CompilationError":
        """This error as seen at a call of the function it happened in: same kind, place and words,
        with the call site added (raise it ``from`` this one)."""
        return _rebuild(self.error_message, self.filename, self.lineno, self.col, self.source_line, self.fn_name,
                        self.notes, type(self), self.position,
                        self.calls + [(filename, lineno, col, source_line, fn_name, position)])

    def __reduce__(self):  # a pickled error (e.g. from a compile worker) keeps its class
        return (_rebuild, (self.error_message, self.filename, self.lineno, self.col, self.source_line,
                           self.fn_name, self.notes, type(self), self.position, self.calls))


def _rebuild(message, filename, lineno, col, source_line, fn_name, notes, cls=None, position=None, calls=None):
    return (cls or CompilationError)(message, filename=filename, lineno=lineno, col=col, source_line=source_line,
                                     fn_name=fn_name, notes=list(notes), position=position, calls=calls)


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
    if isinstance(exc, StaticAssertionFailed):
        return None  # the assertion is the whole story: ``raise ... from None``
    exc.__suppress_context__ = True
    return exc.with_traceback(_past_the_code_generator(exc.__traceback__))


#: the code generator's files: a cause's traceback leaves out their frames (and ``ast.py``'s
#: ``NodeVisitor.visit``), so what remains starts where the kernel called a language function
_WALKER_FILES = ("codegen.py", "codegen_control.py", "generator.py")


def _in_code_generator(tb) -> bool:
    path = tb.tb_frame.f_code.co_filename
    name = os.path.basename(path)
    return name == "ast.py" or (name in _WALKER_FILES and os.path.dirname(path) == os.path.dirname(__file__))


def _past_the_code_generator(tb):
    """``tb`` from its first frame outside the code generator: an error raised inside a language
    function (``tl.expand_dims``) keeps the frames from that function down to the raise, which
    name the function's own files, as Triton's tracebacks do; one raised by the code generator
    itself keeps none."""
    while tb is not None and _in_code_generator(tb):
        tb = tb.tb_next
    return tb


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
