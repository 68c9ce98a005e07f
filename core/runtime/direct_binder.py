"""The launch fast path for one argument pattern: generated Python that reads each torch
tensor's address, dtype and device once, looks the launch up by a flat key, and hands the
addresses to the driver's direct launcher (``Driver.make_direct_launcher``).

A ``@jit`` function gets this binder after its first launch whose arguments are torch tensors on
a device, ints, floats, bools, ``None`` and constexprs (the *pattern*: which parameter is which).
Every launch computes the key from the pattern; one the key does not find (other argument
kinds, a launch option not passed before (the binder then takes it too: ``num_warps``,
``num_stages``, ``num_ctas`` and ``maxnreg``, what an autotuner's ``Config`` passes, together;
any other one by itself), an unhashable option value, a first launch, an error) goes
to the general binder (``binder.py``) and from there to ``JITFunction.run``, which compiles,
reports errors and, after launching, files the key here (:func:`fill`).

Where a C compiler is at hand the launch step runs in C (``c_binder.py``: the same key, built
part for part, in the same cache), with the generated Python as its fallback.

The key holds, per parameter: a tensor's dtype and device index (and, unless alignment is not
specialised, its address modulo 16, all tensors in one element: 0 when all are aligned); an
int's type, its class (multiple of 16, equal to 1, other) and whether it fits 32 bits; a float's,
bool's or None's type; a constexpr's type and value; and those launch options.  A key the
general path could tell apart from another is told apart here too; the
converse need not hold (a key may split one specialization, never merge two).
"""
from __future__ import annotations

import inspect
import sys

from .binder import _ENV_GET, _ENV_KEY, _MISSING, _WITH_FAST, named_as, _ENV_DATA
from .specialize import int_type_str
from ..language.dtypes import dtype
from .interface import grid3
from .driver import Driver
from ._allocation import make_direct_launcher

#: launch options every binder that takes options takes by keyword; a binder takes any other
#: option (``enable_fp_fusion``, ``debug``, a backend's own) once a launch has passed it
FAST_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def _wide(v: int) -> str:
    """The class of an integer outside 32 bits (``OverflowError`` outside 64: the general path
    reports it)."""
    return int_type_str(v)


def pattern_of(fn, bound, key_parts) -> tuple | None:
    """Per parameter, its kind for this launch: ``"tensor"``, ``"int"``, ``"float"``, ``"bool"``,
    ``"none"`` or ``"constexpr"``; None when an argument has no fast form (the launch keeps the
    general path)."""
    torch = sys.modules.get("torch")
    tensor = getattr(torch, "Tensor", None)
    kinds = []
    for p, v, k in zip(fn.params, bound, key_parts):
        if p.is_constexpr:
            if not _plain_constexpr(v):
                return None
            kinds.append("constexpr")
        elif getattr(p, "annotation_type", ""):
            return None  # passed as its annotated dtype: the general path packs it
        elif v is None:
            kinds.append("none")
        elif type(v) is bool:
            kinds.append("bool")
        elif type(v) is int:
            kinds.append("int")
        elif type(v) is float:
            kinds.append("float")
        elif tensor is not None and isinstance(v, tensor) and len(k) == 4 and type(k[3]) is int:
            kinds.append("tensor")
        else:
            return None
    return tuple(kinds)


def _plain_constexpr(v) -> bool:
    """Whether ``(type(v), v)`` tells constexprs apart as finely as ``constexpr_key`` does: plain
    values, dtypes, and objects equal only to themselves (functions, ``@jit`` functions)."""
    t = type(v)
    return t in (int, float, bool, str, type(None), tuple) or isinstance(v, dtype) or t.__eq__ is object.__eq__


class DirectBinder:
    """The generated binder of one ``@jit`` function for one pattern, and its cache
    (key -> ``(direct launcher, compiled kernel)``)."""

    def __init__(self, fn, pattern: tuple, options: tuple = ()):
        self.fn = fn
        self.pattern = pattern
        # the launch options the binder takes (keyword-only, in the key): none until a launch
        # passes one, so that launches without options do not pay for them
        self.options = options
        self.cache: dict = {}
        self._directs: dict = {}
        # the parameters whose values reach the direct launcher
        self.values = [i for i, kind in enumerate(pattern) if kind in ("tensor", "int", "float", "bool")]
        self.launch, self.key = self._generate()

    # -- generated code --------------------------------------------------------------------------
    def _key_source(self) -> tuple[list[str], str]:
        """Statements reading tensor addresses, and the key tuple's text."""
        fn, reads, parts, aligned = self.fn, [], ["_t_env(_t_envkey)"], []
        for i, (p, kind) in enumerate(zip(fn.params, self.pattern)):
            n = p.name
            if kind == "tensor":
                reads.append(f"_t_a{i} = {n}.data_ptr()")
                parts += [f"{n}.dtype", f"{n}.get_device()"]
                if not (p.do_not_specialize or p.do_not_specialize_on_alignment):
                    aligned.append(f"_t_a{i}")
            elif kind == "int":
                parts.append(f"_t_type({n})")
                if not p.do_not_specialize:
                    parts.append(f"{n} == 1" if p.do_not_specialize_on_alignment else f"{n} & 15 == 0 or {n} == 1 and 2")
                parts.append(f"-0x80000000 <= {n} <= 0x7fffffff or _t_wide({n})")
            elif kind == "constexpr":
                parts += [f"_t_type({n})", n]
            else:  # float, bool, None: the type says it all
                parts.append(f"_t_type({n})")
        if aligned:
            parts.append(f"({' | '.join(aligned)}) & 15 and ({''.join(a + ' & 15, ' for a in aligned)})")
        parts += self.options
        return reads, "(" + "".join(x + ", " for x in parts) + ")"

    def _generate(self):
        fn = self.fn
        names = [p.name for p in fn.params]
        options = self.options
        reads, key = self._key_source()
        values = "".join(f"_t_a{i}, " if self.pattern[i] == "tensor" else f"{names[i]}, " for i in self.values)
        every = "(" + "".join(n + ", " for n in names) + ")"
        defaults = [f"    if {p.name} is _t_M: {p.name} = _t_defaults[{p.num}]" for p in fn.params
                    if p.default is not inspect.Parameter.empty]
        params = "".join(n + "=_t_M, " for n in names)
        kw_options = "".join(f", {o}=_t_M" for o in options)
        opts = "".join(f"{o}, " for o in options)
        src = f"""
def _t_launch(_t_grid, {params}*_t_extra{kw_options}, **_t_kw):
{chr(10).join(defaults)}
    try:
{''.join('        ' + r + chr(10) for r in reads)}        _t_go, _t_kernel = _t_get({key}, _t_none)
    except Exception:  # an argument outside the pattern: the general path says what is wrong
        _t_go = None
    if _t_go is None or _t_extra or _t_kw:
        return _t_miss(_t_grid, {every}, _t_extra, _t_kw, ({opts}))
    if _t_type(_t_grid) is not _t_tuple:
        _t_grid = _t_grid_of(_t_grid, _t_kernel, {every}, ({opts}))
    _t_go(_t_grid, {values})
    return _t_kernel


def _t_key({''.join(n + ', ' for n in names)}{opts}):
{''.join('    ' + r + chr(10) for r in reads)}    return {key}
"""
        scope = {"_t_M": _MISSING, "_t_defaults": {p.num: p.default for p in fn.params}, "_t_env": _ENV_GET,
                 "_t_envkey": _ENV_KEY, "_t_get": self.cache.get, "_t_none": (None, None), "_t_wide": _wide,
                 "_t_miss": self._miss, "_t_grid_of": self._grid_of,
                 "_t_type": type, "_t_tuple": tuple}
        exec(compile(src, f"<tritium direct binder of {fn.__name__}>", "exec"), scope)  # noqa: S102 - generated binder
        launch, key = named_as(scope["_t_launch"], fn.__name__), scope["_t_key"]
        launch.source = src
        return self.in_c(launch) or launch, key

    def in_c(self, python_launch):
        """The same launch step in C (``c_binder.py``) with ``python_launch`` (the generated
        binder) as its fallback; None where the extension is not available."""
        from . import c_binder
        mod = c_binder.load()
        if mod is None or not isinstance(_ENV_DATA, dict):
            return None
        kinds, flags = [], []
        for p, kind in zip(self.fn.params, self.pattern):
            kinds.append({"tensor": "t", "int": "i", "float": "f", "bool": "b", "none": "n", "constexpr": "c"}[kind])
            if kind == "tensor":
                flags.append("-" if p.do_not_specialize or p.do_not_specialize_on_alignment else "a")
            elif kind == "int":
                flags.append("-" if p.do_not_specialize else "o" if p.do_not_specialize_on_alignment else "s")
            else:
                flags.append("-")
        defaults = tuple(_MISSING if p.default is inspect.Parameter.empty else p.default for p in self.fn.params)
        launch = mod.Binder(tuple(p.name for p in self.fn.params), "".join(kinds), "".join(flags), tuple(self.values),
                            tuple(self.options), defaults, _MISSING, self.cache, _ENV_DATA, _ENV_KEY, _wide,
                            self._grid_of, python_launch)
        launch.source = ("# c_binder.Binder: this binder's steps in C, the same key; where it declines:\n"
                         + getattr(python_launch, "source", ""))
        return launch

    # -- the general path ------------------------------------------------------------------------
    def _given(self, opts: tuple) -> dict:
        """The launch options passed (``opts`` in :attr:`options`' order), by name."""
        return {n: v for n, v in zip(self.options, opts) if v is not _MISSING}

    def _miss(self, grid, values, extra, kw, opts):
        kw.update(self._given(opts))
        general = self.fn._fast[0]
        return general(grid, *values, *extra, **kw)

    def _grid_of(self, grid, kernel, values, opts):
        if callable(grid):
            meta = dict(zip(self.fn.arg_names, values))
            meta.update(self._given(opts))
            meta.setdefault("num_warps", kernel.metadata.get("num_warps", 4))
            meta.setdefault("num_stages", kernel.metadata.get("num_stages", 3))
            return grid3(grid(meta), self.fn.__name__, grid)
        return grid3(grid, self.fn.__name__)

    # -- filling ---------------------------------------------------------------------------------
    def fill(self, kernel, bound, key_parts, opts: dict, device: int, driver) -> bool:
        """File the launch just made (``bound`` arguments, ``opts`` launch options) when it fits
        the pattern: its key -> the driver's direct launcher for ``device``.  Returns whether
        it was filed."""
        if pattern_of(self.fn, bound, key_parts) != self.pattern:
            return False
        launcher = kernel._launchers.get(device)
        if launcher is None:
            return False
        positions = tuple(j for j, i in enumerate(self.values) if key_parts[i][0] == "a")
        direct_key = (id(launcher), positions)
        held = self._directs.get(direct_key)
        if held is None or held[0] is not launcher:
            direct = make_direct_launcher(driver, launcher, device, len(self.values), positions)
            if direct is None:
                # no direct form (cluster, cooperative launchers): the kernel's launches on this
                # device keep the general path, without a binder generated for each of them
                kernel.no_direct.add(device)
                return False
            held = self._directs[direct_key] = (launcher, direct)
        options = [opts.get(o, _MISSING) for o in self.options]
        try:
            key = self.key(*bound, *options)
        except Exception:
            return False
        self.cache[key] = (held[1], kernel)
        return True


def fill(fn, kernel, bound, key_parts, opts: dict, device: int, driver) -> None:
    """After a launch through ``JITFunction.run`` on ``device`` with no explicit backend, target
    or stream: give ``fn`` its direct binder if it has none and the launch has a pattern, and
    file the launch's key."""
    if type(driver).make_direct_launcher is _NO_DIRECT or not _hashable(opts):
        return
    binder = fn._direct
    # a launch option the binder does not take yet (one of the backend's, ``enable_fp_fusion``,
    # ``debug``, ...): a binder that takes it too, as it takes FAST_OPTIONS
    more = type(binder) is DirectBinder and any(o not in binder.options for o in opts)
    if binder is None or (opts and not binder.options) or more:
        if device in kernel.no_direct:
            return
        if binder is None:
            pattern = pattern_of(fn, bound, key_parts)
            if pattern is None or "tensor" not in pattern:
                return
        else:
            pattern = binder.pattern
        options = binder_options(fn, opts, binder.options if binder is not None else ()) if opts else ()
        binder = DirectBinder(fn, pattern, options)
        if not binder.fill(kernel, bound, key_parts, opts, device, driver):
            return  # no direct launcher for this kernel: keep the general binder alone
        fn._direct = binder
        _WITH_FAST.add(fn)  # forgotten when a knob changes (binder.forget_fast_paths)
        fn._by_grid.clear()  # kernel[grid] now binds the new binder
        # Keys the general binder already holds would be found there first: start it afresh,
        # so that each of them comes through run() once more and is filed here.
        if fn._fast is not None:
            fn._fast[1].clear()
        return
    binder.fill(kernel, bound, key_parts, opts, device, driver)


def binder_options(fn, opts, held=()) -> tuple:
    """The launch options a binder of ``fn`` takes by keyword once a launch has passed ``opts``
    and its binder took ``held``: :data:`FAST_OPTIONS` and every other option either saw, in a
    fixed order; a parameter of the same name stays a parameter."""
    others = {o for o in (*opts, *held) if o not in FAST_OPTIONS}
    return tuple(o for o in FAST_OPTIONS + tuple(sorted(others)) if o not in fn.arg_names)


def _hashable(opts: dict) -> bool:
    """Whether the launch options can be part of a key (a list passed as an option cannot)."""
    try:
        hash(tuple(opts.values()))
    except TypeError:
        return False
    return True


def _no_direct():
    return Driver.make_direct_launcher


_NO_DIRECT = _no_direct()
