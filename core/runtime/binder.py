"""The launch fast path: per ``@jit`` function, generated Python that binds the arguments by
position, computes the specialization key inline and launches a kernel already compiled for it.

Anything unusual (launch options, an argument a key cannot be made for, a first launch) falls
back to ``JITFunction.run``, which compiles, fills the cache this path reads, and reports errors.
"""
from __future__ import annotations

import inspect
import operator
import os
import sys
import weakref

from .interface import grid3
from .specialize import _FAST, constexpr_key, specialize_arg, _TORCH_BY_DTYPE
from .. import knobs

_ENV_BACKEND = "TRITIUM_BACKEND"


class _Missing:
    def __repr__(self) -> str:
        return "<not given>"


_MISSING = _Missing()

# Reading os.environ costs about a microsecond (it encodes the key on every call); its
# underlying mapping gives the same answer, kept current by os.environ's own setters, for the
# price of a dict lookup.  The token only has to change when the variable does.
_ENV_DATA = getattr(os.environ, "_data", None)
if isinstance(_ENV_DATA, dict):
    _ENV_KEY = os.environ.encodekey(_ENV_BACKEND)
    _ENV_GET = _ENV_DATA.get
else:  # pragma: no cover - other Python implementations
    _ENV_KEY = _ENV_BACKEND
    _ENV_GET = os.environ.get


def env_token():
    return _ENV_GET(_ENV_KEY)


# The fast paths key their entries on TRITIUM_BACKEND as the environment holds it (a dict lookup
# per launch).  The other knobs that change a launch's backend or compiled code (runtime.interpret,
# runtime.backend assigned without propagating, debug, override_arch, language.*) are not read
# there: assigning one of them forgets every fast path, so the next launch of each function goes
# through JITFunction.run, which reads them.
_WITH_FAST = weakref.WeakSet()


def forget_fast_paths(group: str = "", name: str = "") -> None:
    if group not in ("runtime_knobs", "language_knobs", "") or name in ("jit_cache_hook", "jit_post_compile_hook"):
        return
    for fn in list(_WITH_FAST):
        fn._fast = None
        fn._direct = None
        fn._by_grid.clear()
        fn.__dict__.pop("_descriptor_binders", None)
    from . import descriptors
    descriptors._selections.clear()


def _watch_knobs() -> None:
    if forget_fast_paths not in knobs._listeners:
        knobs._listeners.append(forget_fast_paths)


_watch_knobs()


def _torch_tensor_type():
    torch = sys.modules.get("torch")
    return getattr(torch, "Tensor", None) if torch is not None else None


class _NoType:  # matches nothing: the binder was built before torch was imported
    pass


def build_fast_launch(fn):
    """Return ``fast(grid, *args, **kwargs)`` for ``fn`` (a JITFunction), the dict it reads
    (``(backend env value, *key parts) -> Entry``) and the torch tensor type it inlines (None
    when torch was not imported yet; ``JITFunction.run`` rebuilds it once torch is)."""
    names = [p.name for p in fn.params]
    tensor_type = _torch_tensor_type()
    _WITH_FAST.add(fn)

    def key(p):
        if p.is_constexpr:
            return f"('c', _t_ck({p.name}))"
        if p.do_not_specialize or p.do_not_specialize_on_alignment or getattr(p, "annotation_type", ""):
            return f"_t_specs[{p.num}]({p.name}, _t_params[{p.num}])"
        generic = f"(_t_fast_spec(type({p.name})) or _t_spec)({p.name}, _t_params[{p.num}])"
        # torch tensors, inline: the same tuple as specialize._tensor_key
        return (f"(('a', _t_TY[{p.name}.dtype], '' if {p.name}.data_ptr() & 15 else 'D', "
                f"{p.name}.get_device() if {p.name}.is_cuda else {p.name}.device) "
                f"if type({p.name}) is _t_T else {generic})")
    keys = [key(p) for p in fn.params]
    # Every parameter defaults to a sentinel so that a missing or extra argument, or a launch
    # option, reaches JITFunction.run, which reports it or handles it.
    call = "".join(n + ", " for n in names)  # a tuple's items, each with its comma: "" for no parameters
    fill = []
    for p in fn.params:
        if p.default is inspect.Parameter.empty:
            fill.append(f"    if {p.name} is _t_M: return _t_slow(_t_grid, ({call}), _t_extra, _t_kw)")
        else:
            fill.append(f"    if {p.name} is _t_M: {p.name} = _t_defaults[{p.num}]")
    params = "".join(n + "=_t_M, " for n in names)
    src = f"""
def _t_fast(_t_grid, {params}*_t_extra, **_t_kw):
    if _t_kw or _t_extra:
        return _t_slow(_t_grid, ({call}), _t_extra, _t_kw)
{chr(10).join(fill)}
    try:
        _t_entry = _t_cache_get((_t_env_get(_t_env_key), {''.join(k + ', ' for k in keys)}))
    except (TypeError, KeyError, OverflowError):
        _t_entry = None
    if _t_entry is None:
        return _t_run({call}grid=_t_grid, warmup=False)
    _t_kernel, _t_pick, _t_meta, _t_dev, _t_driver, _t_launchers, _t_select = _t_entry
    if type(_t_grid) is not tuple:
        if callable(_t_grid):
            _t_grid = _t_grid3(_t_grid({{{''.join(f'{n!r}: {n}, ' for n in names)}**_t_meta}}), _t_name, _t_grid)
        else:
            _t_grid = _t_grid3(_t_grid, _t_name)
    elif len(_t_grid) == 1:
        _t_grid = (int(_t_grid[0]), 1, 1)
    elif len(_t_grid) != 3:
        _t_grid = _t_grid3(_t_grid, _t_name)
    _t_rt = _t_pick(({call}))
    if _t_dev is None:  # a pointer whose device the key does not carry: ask the driver
        _t_dev = _t_select(_t_rt)
    _t_stream, _t_cur = _t_driver.stream_and_current_device(_t_dev)
    _t_launch = _t_launchers.get(_t_dev)
    if _t_launch is None or _t_cur != _t_dev or not (_t_grid[0] and _t_grid[1] and _t_grid[2]):
        _t_kernel.launch(_t_grid, None, _t_rt, _t_dev)  # another device, first launch there, empty grid
    else:
        _t_launch(_t_grid, _t_stream, _t_rt)
    return _t_kernel
"""

    def slow(grid, values, extra, kw):
        if extra:  # too many positional arguments: let run() say so
            return fn.run(*values, *extra, grid=grid, warmup=False, **kw)
        named = {n: v for n, v in zip(names, values) if v is not _MISSING}
        return fn.run(grid=grid, warmup=False, **named, **kw)

    cache: dict = {}
    scope = {"_t_defaults": {p.num: p.default for p in fn.params}, "_t_params": fn.params,
             "_t_ck": constexpr_key, "_t_spec": specialize_arg, "_t_specs": fn.specializers, "_t_run": fn.run,
             "_t_cache_get": cache.get, "_t_env_get": _ENV_GET, "_t_env_key": _ENV_KEY, "_t_fast_spec": _FAST.get, "_t_grid3": grid3, "_t_name": fn.__name__,
             "_t_M": _MISSING, "_t_slow": slow, "_t_T": tensor_type or _NoType, "_t_TY": _TORCH_BY_DTYPE}
    exec(compile(src, f"<tritium launch of {fn.__name__}>", "exec"), scope)  # noqa: S102 - generated binder
    return named_as(scope["_t_fast"], fn.__name__), cache, tensor_type


def named_as(binder, name: str):
    """``binder`` under the kernel's name, so that Python's own argument errors (an argument
    given twice) read ``add_kernel() got multiple values for argument 'n'``."""
    code = binder.__code__
    code = code.replace(co_name=name, **({"co_qualname": name} if hasattr(code, "co_qualname") else {}))
    binder.__code__ = code
    binder.__name__ = binder.__qualname__ = name
    return binder


def make_entry(kernel, runtime: tuple, meta: dict, device, driver, pointers: list) -> tuple:
    """The fast path's entry for one key: ``(compiled kernel, picker of the runtime arguments,
    grid meta, launch device, driver, launchers by device, select)``.  ``device`` is None when
    the key does not fix it; ``select(runtime args)`` then asks the driver about ``pointers``
    ((position among the runtime arguments, parameter name) of each pointer argument)."""
    if len(runtime) == 1:
        i = runtime[0]
        pick = lambda args: (args[i],)  # noqa: E731
    elif runtime:
        pick = operator.itemgetter(*runtime)
    else:
        pick = lambda args: ()  # noqa: E731

    def select(rt):
        try:
            dev = driver.select_device([(name, rt[i]) for i, name in pointers])
        except ValueError as e:
            raise type(e)(f"{kernel.name}: {e}") from None
        return driver.get_current_device() if dev is None else dev
    return (kernel, pick, meta, device, driver, kernel._launchers, select)
