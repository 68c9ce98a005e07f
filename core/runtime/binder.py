"""The launch fast path: per ``@jit`` function, generated Python that binds the arguments by
position, computes the specialization key inline and launches a kernel already compiled for it.

Anything unusual (launch options, an argument a key cannot be made for, a first launch) falls
back to ``JITFunction.run``, which compiles, fills the cache this path reads, and reports errors.
"""
from __future__ import annotations

import inspect
import os

from .specialize import _FAST, specialize_arg

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
    env_token = lambda: _ENV_DATA.get(_ENV_KEY)  # noqa: E731
else:  # pragma: no cover - other Python implementations
    env_token = lambda: os.environ.get(_ENV_BACKEND)  # noqa: E731


def build_fast_launch(fn):
    """Return ``fast(grid, *args, **kwargs)`` for ``fn`` (a JITFunction) and the dict it reads:
    ``(backend env value, *key parts) -> (compiled kernel, runtime arg indices, grid meta)``."""
    from .jit import _constexpr_key
    names = [p.name for p in fn.params]
    keys = [f"('c', _t_ck({p.name}))" if p.is_constexpr
            else f"(_t_fast_spec(type({p.name})) or _t_spec)({p.name}, _t_params[{p.num}])" for p in fn.params]
    # Every parameter defaults to a sentinel so that a missing or extra argument, or a launch
    # option, reaches JITFunction.run, which reports it or handles it.
    fill = []
    for p in fn.params:
        if p.default is inspect.Parameter.empty:
            fill.append(f"    if {p.name} is _t_M: return _t_slow(_t_grid, ({', '.join(names)},), _t_extra, _t_kw)")
        else:
            fill.append(f"    if {p.name} is _t_M: {p.name} = _t_defaults[{p.num}]")
    call = ", ".join(names)
    src = f"""
def _t_fast(_t_grid, {', '.join(n + '=_t_M' for n in names)}, *_t_extra, **_t_kw):
    if _t_kw or _t_extra:
        return _t_slow(_t_grid, ({call},), _t_extra, _t_kw)
{chr(10).join(fill)}
    try:
        _t_entry = _t_cache_get((_t_env(), {', '.join(keys)},))
    except TypeError:
        _t_entry = None
    if _t_entry is None:
        return _t_run({call}, grid=_t_grid, warmup=False)
    _t_kernel, _t_pick, _t_meta, _t_where, _t_launchers = _t_entry
    _t_args = ({call},)
    if type(_t_grid) is not tuple:
        if callable(_t_grid):
            _t_grid = _t_grid({{{', '.join(f'{n!r}: {n}' for n in names)}, **_t_meta}})
        _t_grid = _t_grid3(_t_grid)
    elif len(_t_grid) == 1:
        _t_grid = (int(_t_grid[0]), 1, 1)
    elif len(_t_grid) != 3:
        _t_grid = _t_grid3(_t_grid)
    _t_dev, _t_stream = _t_where()
    _t_launch = _t_launchers.get(_t_dev)
    if _t_launch is None or not (_t_grid[0] and _t_grid[1] and _t_grid[2]):
        _t_kernel.launch(_t_grid, None, [_t_args[i] for i in _t_pick])  # first launch on this device
    else:
        _t_launch(_t_grid, _t_stream, [_t_args[i] for i in _t_pick])
    return _t_kernel
"""

    def slow(grid, values, extra, kw):
        if extra:  # too many positional arguments: let run() say so
            return fn.run(*values, *extra, grid=grid, warmup=False, **kw)
        named = {n: v for n, v in zip(names, values) if v is not _MISSING}
        return fn.run(grid=grid, warmup=False, **named, **kw)

    cache: dict = {}
    from ..compiler import _grid3
    scope = {"_t_defaults": {p.num: p.default for p in fn.params}, "_t_params": fn.params,
             "_t_ck": _constexpr_key, "_t_spec": specialize_arg, "_t_run": fn.run, "_t_cache_get": cache.get,
             "_t_env": env_token, "_t_fast_spec": _FAST.get, "_t_grid3": _grid3, "_t_M": _MISSING,
             "_t_slow": slow}
    exec(compile(src, f"<tritium launch of {fn.__name__}>", "exec"), scope)  # noqa: S102 - generated binder
    return scope["_t_fast"], cache
