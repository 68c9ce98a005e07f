"""The table from op name to its translator ``(translator, op) -> closure``; each ``ops_*`` module
fills it with :func:`translates`."""
from __future__ import annotations

from typing import Callable

from .errors import InterpreterError

TRANSLATORS: dict[str, Callable] = {}


def translates(*names: str):
    def deco(fn):
        for n in names:
            TRANSLATORS[n] = fn
        return fn
    return deco


def emit(tr, op, fn: Callable):
    """The closure computing ``op``'s single result as ``fn(*operands)``."""
    regs = [tr.r(v) for v in op.operands]
    o = tr.out(op.results[0])
    if len(regs) == 1:
        (a,) = regs

        def f(fr):
            fr[o] = fn(fr[a])
    elif len(regs) == 2:
        a, b = regs

        def f(fr):
            fr[o] = fn(fr[a], fr[b])
    elif len(regs) == 3:
        a, b, c = regs

        def f(fr):
            fr[o] = fn(fr[a], fr[b], fr[c])
    else:
        def f(fr):
            fr[o] = fn(*[fr[r] for r in regs])
    return f


def run_block(body, fr) -> None:
    """Run closures in order; an error is reported at the innermost op that raised it."""
    try:
        for f in body:
            f(fr)
    except InterpreterError:
        raise
    except Exception as exc:
        raise fr[0].error(f, exc) from exc
