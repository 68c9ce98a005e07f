"""``knobs.runtime.jit_cache_hook`` and ``jit_post_compile_hook``: what a ``JITFunction`` tells them.

Before a launch (or ``warmup``) compiles a kernel for a specialization it has not compiled yet,
``jit_cache_hook`` is called with keyword arguments only:

``key``               the in-memory cache key of the specialization (a string)
``repr``              ``name[num_warps=4, num_ctas=1, num_stages=3, enable_fp_fusion=True,
                      launch_cooperative_grid=False](x: *fp32, n: i32)``
``fn``                ``knobs.JitFunctionInfo(module, name, jit_function)``
``compile``           a dict: ``key``, ``signature`` (parameter name -> type, ``"constexpr"`` for
                      constexprs, a tuple of those for a tuple argument), ``device``, ``constants``
                      (``(index,)`` path -> value), ``num_warps``, ``num_ctas``, ``num_stages``,
                      ``enable_fp_fusion``, ``launch_cooperative_grid``, ``extern_libs``, ``configs``
                      (``[{(index,): [["tt.divisibility", 16]]}]``), ``specialization_data`` (JSON
                      text), ``is_warmup``
``is_manual_warmup``  whether this is ``kernel.warmup(...)``
``already_compiled``  False

A true result skips the compile: nothing is compiled or launched and the launch returns None.
``jit_post_compile_hook`` gets the same arguments after the compile; its result is ignored.
"""
from __future__ import annotations

import json
from typing import Any


def _leaf_type(k) -> Any:
    if k[0] == "t":
        return tuple(_leaf_type(x) for x in k[2])
    if k[0] in ("c", "1", "n"):
        return "constexpr"
    return k[1]


def describe(fn, bound, key_parts, backend, target, opts: dict):
    """(signature, constants, attrs, options) of one specialization, as a JIT hook sees them."""
    from ..language.core import constexpr
    signature, constants, attrs = {}, {}, {}

    def walk(path, v, k):
        if k[0] == "t":
            for i, (x, kx) in enumerate(zip(v, k[2])):
                walk(path + (i,), x, kx)
        elif k[0] == "c":
            constants[path] = v.value if isinstance(v, constexpr) else v
        elif k[0] == "1":
            constants[path] = 1
        elif k[0] == "n":
            constants[path] = None
        elif len(k) > 2 and k[2] == "D":
            attrs[path] = [["tt.divisibility", 16]]

    for p, v, k in zip(fn.params, bound, key_parts):
        signature[p.name] = _leaf_type(k)
        walk((p.num,), v, k)
    if target is None:
        target = backend.default_target()
    elif isinstance(target, str):
        from ..hooks import manager
        target = manager.parse_target(target)
    options = backend.parse_options(target, dict(opts))
    return signature, constants, attrs, options


def _jsonable(v):
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    name = type(v).__name__
    return {"constexpr": _jsonable(v.value)} if name == "constexpr" else str(v)


def call(hook, fn, bound, key_parts, backend, target, opts: dict, device, is_warmup: bool, key) -> Any:
    """Call ``hook`` (a JIT hook, see the module docstring) for this specialization; its result."""
    from ..knobs import JitFunctionInfo
    signature, constants, attrs, options = describe(fn, bound, key_parts, backend, target, opts)
    num_ctas = getattr(options, "num_ctas", 1)
    fusion = getattr(options, "enable_fp_fusion", True)
    coop = getattr(options, "launch_cooperative_grid", False)
    name = fn.__qualname__
    args = ", ".join(f"{p}: {t}" for p, t in signature.items())
    text = (f"{name}[num_warps={options.num_warps}, num_ctas={num_ctas}, num_stages={options.num_stages}, "
            f"enable_fp_fusion={fusion}, launch_cooperative_grid={coop}]({args})")
    key = str(key)
    opts_dict = dict(getattr(options, "__dict__", {}))
    data = json.dumps({"name": f"{fn.__module__}.{name}", "signature": _jsonable(signature),
                       "constant_keys": [list(k) for k in constants], "constant_vals": _jsonable(list(constants.values())),
                       "attrs_keys": [list(k) for k in attrs], "attrs_vals": _jsonable(list(attrs.values())),
                       "options": _jsonable(opts_dict), "key": key})
    info = {"key": key, "signature": signature, "device": device, "constants": constants,
            "num_warps": options.num_warps, "num_ctas": num_ctas, "num_stages": options.num_stages,
            "enable_fp_fusion": fusion, "launch_cooperative_grid": coop,
            "extern_libs": getattr(options, "extern_libs", ()), "configs": [attrs],
            "specialization_data": data, "is_warmup": is_warmup}
    return hook(key=key, repr=text, fn=JitFunctionInfo(fn.__module__, name, fn), compile=info,
                is_manual_warmup=is_warmup, already_compiled=False)
