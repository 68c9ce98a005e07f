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

``JITFunction.preload(specialization_data)`` (:func:`preload`) compiles the kernel again from that
JSON text (or finds it in the on-disk cache) and puts it in the kernel's cache, so a later launch
with arguments of that specialization does not compile.  Besides Triton's fields the text carries
``tritium``: the backend, the explicit target (or null), the launch options given and each
argument's specialization (``["a", type, "D" or ""]``, ``["1"]``, ``["n"]``, ``["c", value]``,
``["t", named-tuple class or null, [parts]]``; a constexpr value is ``{"dtype": name}``, a
``@jit`` function ``{"jit": "module:qualname"}``, else itself).
"""
from __future__ import annotations

import json
from typing import Any
from ..language.core import constexpr
from ..knobs import JitFunctionInfo
from ..language.dtypes import dtype, str_to_ty
from .interface import KernelInterface
from .specialize import constexpr_key, flatten_tuple_args
from .. import knobs as _knobs
from ..hooks import manager


def _leaf_type(k) -> Any:
    if k[0] == "t":
        return tuple(_leaf_type(x) for x in k[2])
    if k[0] in ("c", "1", "n"):
        return "constexpr"
    return k[1]


def describe(fn, bound, key_parts, backend, target, opts: dict):
    """(signature, constants, attrs, options) of one specialization, as a JIT hook sees them."""
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
                       "options": _jsonable(opts_dict), "key": key,
                       "tritium": _launch_record(bound, key_parts, backend, target, opts)})
    info = {"key": key, "signature": signature, "device": device, "constants": constants,
            "num_warps": options.num_warps, "num_ctas": num_ctas, "num_stages": options.num_stages,
            "enable_fp_fusion": fusion, "launch_cooperative_grid": coop,
            "extern_libs": getattr(options, "extern_libs", ()), "configs": [attrs],
            "specialization_data": data, "is_warmup": is_warmup}
    return hook(key=key, repr=text, fn=JitFunctionInfo(fn.__module__, name, fn), compile=info,
                is_manual_warmup=is_warmup, already_compiled=False)


# -- preload ---------------------------------------------------------------------------------------
def _class_path(cls) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _import_path(path: str):
    import importlib
    module, _, qualname = path.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _constant_record(v):
    v = v.value if isinstance(v, constexpr) else v
    if isinstance(v, dtype):
        return {"dtype": str(v)}
    if isinstance(v, KernelInterface):
        return {"jit": _class_path(v) if isinstance(v, type) else f"{v.__module__}:{v.__qualname__}"}
    if isinstance(v, tuple):
        return {"tuple": [_constant_record(x) for x in v]}
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return {"unrestorable": f"{type(v).__name__} {v!r}"}


def _part_record(v, k, nested=False):
    if k[0] == "t":
        cls = k[1]
        return ["t", None if cls is tuple else _class_path(cls),
                [_part_record(x, kx, True) for x, kx in zip(v, k[2])]]
    if k[0] == "c":
        return ["c", _constant_record(v)]
    if k[0] in ("1", "n"):
        return [k[0]]
    if nested and len(k) == 4:
        # a tensor inside a tuple keeps its place in the launch's key (a top-level one does not):
        # a CUDA index, or a torch.device
        return ["a", k[1], k[2], k[3] if isinstance(k[3], int) else {"torch_device": str(k[3])}]
    return ["a", k[1], k[2]]


def _launch_record(bound, key_parts, backend, target, opts) -> dict:
    return {"backend": backend.name, "target": None if target is None else str(target),
            "launch_options": _jsonable(dict(opts)),
            "args": [_part_record(v, k) for v, k in zip(bound, key_parts)]}


def _constant_value(r, where: str):
    if isinstance(r, dict):
        if "dtype" in r:
            return str_to_ty(r["dtype"])
        if "jit" in r:
            return _import_path(r["jit"])
        if "tuple" in r:
            return tuple(_constant_value(x, where) for x in r["tuple"])
        if "constexpr" in r:
            return _constant_value(r["constexpr"], where)
        raise ValueError(f"preload: the constexpr {where} ({r.get('unrestorable')}) cannot be rebuilt from "
                         f"specialization data")
    return r


def _part_value(r, where: str):
    """(placeholder value, key part) of one argument's record; run-time arguments have no value."""
    kind = r[0]
    if kind == "t":
        cls = tuple if r[1] is None else _import_path(r[1])
        pairs = [_part_value(x, f"{where}[{i}]") for i, x in enumerate(r[2])]
        values = tuple(v for v, _ in pairs)
        return (cls(*values) if cls is not tuple else values), ("t", cls, tuple(k for _, k in pairs))
    if kind == "c":
        v = _constant_value(r[1], where)
        return v, ("c", constexpr_key(v))
    if kind == "1":
        return 1, ("1",)
    if kind == "n":
        return None, ("n",)
    if kind == "a":
        if len(r) == 4:
            place = r[3]
            if isinstance(place, dict):
                import torch
                place = torch.device(place["torch_device"])
            return None, ("a", r[1], r[2], place)
        return None, ("a", r[1], r[2])
    raise ValueError(f"preload: unknown argument record {r!r} for {where}")


def preload(fn, specialization_data: str):
    """Compile ``fn`` for the specialization ``specialization_data`` describes (the JSON text a
    JIT hook received) and cache it as a launch of that specialization would; the compiled
    kernel, or None when ``jit_cache_hook`` asks not to compile."""
    data = json.loads(specialization_data)
    name = f"{fn.__module__}.{fn.__qualname__}"
    if data.get("name") != name:
        raise RuntimeError(f"Specialization data is for {data.get('name')} but trying to preload for {name}")
    record = data.get("tritium")
    if record is None:
        raise ValueError(f"preload: the specialization data of {name} has no 'tritium' record (it was not "
                         f"written by this package's JIT hooks)")
    args = record["args"]
    if len(args) != len(fn.params):
        raise ValueError(f"preload: the specialization data has {len(args)} arguments, {name} takes {len(fn.params)}")
    pairs = [_part_value(r, p.name) for r, p in zip(args, fn.params)]
    bound = [v for v, _ in pairs]
    key_parts = tuple(k for _, k in pairs)
    opts = {k: tuple(v) if isinstance(v, list) else v for k, v in record["launch_options"].items()}
    backend = manager.get_backend(record["backend"])
    target = record["target"]
    if target is not None:
        target = manager.parse_target(target)
    hooks = _knobs.runtime
    device = None
    launch_target = target
    if backend.device_present():
        driver = backend.driver()
        device = driver.get_current_device()
        if launch_target is None:
            launch_target = driver.device_target(device)
    if hooks.jit_cache_hook is not None and call(hooks.jit_cache_hook, fn, bound, key_parts, backend, launch_target,
                                                 opts, device, True, data.get("key")):
        return None
    kernel = fn._compile(bound, key_parts, backend, launch_target, opts)
    if hooks.jit_post_compile_hook is not None:
        call(hooks.jit_post_compile_hook, fn, bound, key_parts, backend, launch_target, opts, device, True,
             data.get("key"))
    _, flat_keys, _ = flatten_tuple_args(bound, key_parts, fn.arg_names)
    info = (tuple(i for i, k in enumerate(flat_keys) if k[0] == "a"), False)
    opts_key = tuple(sorted(opts.items())) if opts else ()
    # the key a launch computes (its target: the current device's) and, when the data came from a
    # warmup without a target, the one a warmup computes
    for t in {launch_target, target}:
        key = (backend.name, t, key_parts, opts_key, _knobs.compile_token())
        fn.kernel_cache.setdefault(key, kernel)
        fn._launch_info.setdefault(key, info)
    return kernel
