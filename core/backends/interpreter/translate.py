"""Translation of a TTIR module into Python closures, once, and their execution over a grid.

Every SSA value gets a slot in a per-function register file (a list; slot 0 holds the launch
context).  Every op becomes one closure ``f(fr)`` that reads its operands' slots and writes its
results' (regions become nested closure lists run by the op's closure).  Constants are written
into the frame template instead of becoming closures, and the entry function's grid-invariant pure
ops (those depending only on arguments and constants: splats of arguments, ``make_range``...)
run once per launch in a prologue rather than once per program.  Nothing touches xDSL while a
kernel runs.
"""
from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue
from xdsl.traits import Pure

from . import (ops_arith, ops_control, ops_dot_scaled, ops_math, ops_memory, ops_reduce,  # noqa: F401 (fill the table)
               ops_tensor, ops_ttgir)
from .errors import InterpreterError, location_of
from .address_space import AccessError
from .numerics import TypeInfo, type_info
from .registry import TRANSLATORS, run_block

_NOT_HOISTED = {"tt.get_program_id"}


class Context:
    """What a running program can see: its id, the grid, the memory, the kernel's name."""

    __slots__ = ("pid", "grid", "space", "kernel", "origin")

    def __init__(self, kernel: str, grid, space, origin):
        self.kernel, self.grid, self.space, self.origin = kernel, grid, space, origin
        self.pid = (np.int32(0),) * 3

    def error(self, closure, exc: BaseException) -> InterpreterError:
        name, where = self.origin.get(closure, ("?", ""))
        msg = str(exc) if isinstance(exc, AccessError) else f"{name} failed: {type(exc).__name__}: {exc}"
        return InterpreterError(msg, kernel=self.kernel, where=where, pid=self.pid)


class Function:
    """A translated ``tt.func``: its frame template, argument and return slots and closures."""

    def __init__(self, name: str):
        self.name = name
        self.template: list = []
        self.arg_regs: list[int] = []
        self.prologue: list = []
        self.body: list = []
        self.ret_regs: list[int] = []

    def call(self, fr_caller, args):
        fr = self.template.copy()
        fr[0] = fr_caller[0]
        for r, v in zip(self.arg_regs, args):
            fr[r] = v
        run_block(self.prologue, fr)
        run_block(self.body, fr)
        return [fr[r] for r in self.ret_regs]


class Translator:
    def __init__(self, module: ModuleOp):
        self.funcs = {op.sym_name.data: op for op in module.ops if op.name == "tt.func"}
        self.translated: dict[str, Function] = {}
        self.origin: dict = {}
        self._regs: dict[SSAValue, int] = {}
        self._consts: list[tuple[int, object]] = []

    # -- register file --------------------------------------------------------------------------
    def r(self, value: SSAValue) -> int:
        reg = self._regs.get(value)
        if reg is None:
            reg = self._regs[value] = len(self._regs) + 1
        return reg

    out = r

    def const(self, value: SSAValue, data) -> None:
        self._consts.append((self.r(value), data))

    @staticmethod
    def info(t) -> TypeInfo:
        return type_info(t)

    # -- functions and blocks -------------------------------------------------------------------
    def function(self, name: str, hoist: bool = False) -> Function:
        fn = self.translated.get(name)
        if fn is not None:
            return fn
        if name not in self.funcs:
            raise InterpreterError(f"call to unknown function @{name}")
        fn = self.translated[name] = Function(name)
        saved = self._regs, self._consts
        self._regs, self._consts = {}, []
        entry = self.funcs[name].body.blocks[0]
        fn.arg_regs = [self.r(a) for a in entry.args]
        invariant = set(fn.arg_regs) if hoist else None
        body, term = self.block(entry, invariant=invariant)
        if hoist:
            fn.prologue = [f for f in body if getattr(f, "_hoisted", False)]
            body = [f for f in body if not getattr(f, "_hoisted", False)]
        fn.body = body
        fn.ret_regs = [self.r(v) for v in term.operands] if term is not None else []
        fn.template = [None] * (len(self._regs) + 1)
        for reg, data in self._consts:
            fn.template[reg] = data
        self._regs, self._consts = saved
        return fn

    def block(self, block: Block, invariant: set | None = None):
        """Closures of ``block``'s ops but its terminator, which is returned for the parent op
        to read (``scf.yield``, ``tt.return``, ``tt.reduce.return``...)."""
        for a in block.args:
            self.r(a)
        closures, term = [], None
        for op in block.ops:
            if op.has_trait(_IsTerminator):
                term = op
                continue
            translate = TRANSLATORS.get(op.name)
            if translate is None:
                raise InterpreterError(f"the interpreter does not support {op.name}", where=location_of(op))
            n_consts = len(self._consts)
            f = translate(self, op)
            if f is None:  # a constant: lives in the frame template
                if invariant is not None:
                    invariant.update(reg for reg, _ in self._consts[n_consts:])
                continue
            self.origin[f] = (op.name, location_of(op))
            if (invariant is not None and op.name not in _NOT_HOISTED and not op.regions
                    and op.has_trait(Pure) and all(self.r(v) in invariant for v in op.operands)):
                f = _mark_hoisted(f, self.origin)
                invariant.update(self.r(v) for v in op.results)
            closures.append(f)
        return closures, term


def _mark_hoisted(f, origin):
    def hoisted(fr, f=f):
        f(fr)
    hoisted._hoisted = True
    origin[hoisted] = origin[f]
    return hoisted


from xdsl.traits import IsTerminator as _IsTerminator  # noqa: E402


class Kernel:
    """A kernel ready to launch: the translated entry function and its name."""

    def __init__(self, module: ModuleOp, name: str | None = None):
        tr = Translator(module)
        if name is None or name not in tr.funcs:
            public = [n for n, f in tr.funcs.items() if not f.sym_visibility or f.sym_visibility.data == "public"]
            if not public:
                raise InterpreterError("the module has no public tt.func to launch")
            name = public[0] if name is None or name not in tr.funcs else name
        self.name = name
        self.entry = tr.function(name, hoist=True)
        self.arg_types = [type_info(t) for t in tr.funcs[name].function_type.inputs.data]
        self.origin = tr.origin

    def run(self, grid, args, space) -> None:
        gx, gy, gz = (tuple(grid) + (1, 1, 1))[:3]
        if gx * gy * gz == 0:
            return
        ent = self.entry
        ctx = Context(self.name, (np.int32(gx), np.int32(gy), np.int32(gz)), space, self.origin)
        fr = ent.template.copy()
        fr[0] = ctx
        for r, v in zip(ent.arg_regs, args):
            fr[r] = v
        body = ent.body
        xs = [np.int32(i) for i in range(gx)]
        with np.errstate(all="ignore"):
            run_block(ent.prologue, fr)
            f = None
            try:
                for z in range(gz):
                    pz = np.int32(z)
                    for y in range(gy):
                        py = np.int32(y)
                        for px in xs:
                            ctx.pid = (px, py, pz)
                            for f in body:
                                f(fr)
            except InterpreterError:
                raise
            except Exception as exc:
                raise ctx.error(f, exc) from exc
