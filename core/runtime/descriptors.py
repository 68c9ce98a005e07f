"""Host tensor descriptors as kernel arguments.

A launch whose arguments include :class:`~tritium.tools.tensor_descriptor.TensorDescriptor`
objects runs a companion of the kernel whose descriptor parameter ``d`` of rank ``r`` is spelled
``d__base, d__shape0..r-1, d__stride0..r-1`` plus constexprs for the block shape and padding, and
whose body starts with ``d = tl.make_tensor_descriptor(...)`` (at the ``def`` line).  The
companion is an ordinary ``JITFunction``: it specialises, caches and launches like any kernel, on
every backend, and the shapes and strides specialise as integers do (a stride of 1 becomes a
constant, which keeps the last dimension's accesses vectorised).

Where the launch's backend builds a hardware descriptor of its own for a descriptor (the
``tritium_tensor_descriptor_map`` hook: NVIDIA sm_90's TMA tensor map), the companion takes it as
one more parameter ``d__map``, the map's device address as an integer (so the companion's launches
take the direct binder), and hands it to ``tl.make_tensor_descriptor`` (``_tensor_map=``), whose
accesses then become ``tt.descriptor_load`` / ``tt.descriptor_store``.  The backend keeps the
memory alive (the NVIDIA plugin caches its maps)."""
from __future__ import annotations

import ast
import copy
import inspect
import os

from .. import knobs as _knobs
from ..hooks.backend import PluginError
from ..tools.tensor_descriptor import TensorDescriptor
from .binder import _MISSING, _ENV_GET, _ENV_KEY
from .direct_binder import DirectBinder, binder_options
from .specialize import _address as _address_of
from ..language.tensor_descriptor import make_tensor_descriptor
from ..hooks import manager

_HELPER = "__tritium_make_tensor_descriptor__"


def has_descriptor(values) -> bool:
    return any(type(v) is TensorDescriptor for v in values)


def _names(name: str, rank: int, mapped: bool = False) -> list[str]:
    return ([f"{name}__base"] + [f"{name}__shape{i}" for i in range(rank)] + [f"{name}__stride{i}" for i in range(rank)]
            + ([f"{name}__map"] if mapped else []) + [f"{name}__block", f"{name}__padding"])


def companion(fn, layout: tuple):
    """The companion JITFunction of ``fn`` for ``layout`` (per parameter: ``(rank, mapped)``, or
    None for an ordinary parameter)."""
    from . import jit as _jit  # (jit imports this module)
    cache = fn.__dict__.setdefault("_descriptor_companions", {})
    if layout in cache:
        return cache[layout]
    comp = copy.copy(fn)
    for attr in ("specializers", "_descriptor_companions", "_descriptor_binders"):
        comp.__dict__.pop(attr, None)
    params, names, prologue = [], [], []
    for p, entry in zip(fn.params, layout):
        if entry is None:
            params.append(inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=p.default,
                                            annotation=p.annotation))
            names.append(p.name)
            continue
        rank, mapped = entry
        expanded = _names(p.name, rank, mapped)
        for n in expanded:
            ann = "constexpr" if n.endswith(("__block", "__padding")) else inspect.Parameter.empty
            params.append(inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=ann))
        names.extend(expanded)
        b = expanded
        # a host descriptor the backend made no map for stays one without: the kernel builds none
        tensor_map = f", _tensor_map={b[1 + 2 * rank]}" if mapped else ", _tensor_map=False"
        prologue.append(f"{p.name} = {_HELPER}({b[0]}, [{', '.join(b[1:1 + rank])}], "
                        f"[{', '.join(b[1 + rank:1 + 2 * rank])}], {b[-2]}, {b[-1]}{tensor_map})")
    comp.signature = inspect.Signature(params)
    comp.arg_names = names
    comp._index = {n: i for i, n in enumerate(names)}
    comp.params = [_jit._Param(i, q) for i, q in enumerate(params)]
    by_name = {p.name: p for p in fn.params}
    for q in comp.params:
        q.do_not_specialize = by_name[q.name].do_not_specialize if q.name in by_name else False
        q.do_not_specialize_on_alignment = by_name[q.name].do_not_specialize_on_alignment if q.name in by_name else False
    comp.constexpr_indices = {q.num for q in comp.params if q.is_constexpr}
    tree = copy.deepcopy(fn.parse())
    line = tree.lineno
    stmts = [ast.parse(s).body[0] for s in prologue]
    for s in stmts:
        for node in ast.walk(s):
            if hasattr(node, "lineno"):
                node.lineno, node.col_offset = line, tree.col_offset
                node.end_lineno, node.end_col_offset = line, tree.col_offset
    tree.body = stmts + tree.body
    comp._ast = tree
    comp._src = fn.src + f"\n# tensor-descriptor arguments: {layout}\n"  # keys the cache; the tree is set above
    comp._cache_key = None
    comp.kernel_cache = _jit._CompanionCache(comp, fn, layout)  # its kernels show in fn.kernel_cache too
    comp._launch_info = {}
    comp._backend_by_kind = {}
    comp._fast = None
    comp._direct = None
    comp._by_grid = {}
    base_scope = fn.global_scope

    def global_scope():
        scope = base_scope()
        scope[_HELPER] = make_tensor_descriptor
        return scope
    comp.global_scope = global_scope
    cache[layout] = comp
    return comp


#: (backend asked for, target asked for, base type, base device) -> (backend, target or None): the
#: launch's backend and its device's target, for bases whose device the key names (torch tensors)
_selections: dict = {}


def _device_key(base):
    """The device index of a torch CUDA tensor (its launch goes there), else None (not cached)."""
    get = getattr(base, "get_device", None)
    if get is None or not getattr(base, "is_cuda", False):
        return None
    return get()


def _select(bound, launch_kwargs) -> tuple:
    """(backend, target) the launch's maps are asked of; target None when its device is absent."""
    plain = [v.base if type(v) is TensorDescriptor else v for v in bound]
    name = launch_kwargs.get("backend") or _knobs.selected_backend()
    backend = manager.get_backend(name) if name else manager.select_backend(None, plain)
    if not backend.device_present():
        return backend, None
    target = launch_kwargs.get("target")
    if target is None:
        driver = backend.driver()
        bases = [(f"argument {i}", v.base) for i, v in enumerate(bound) if type(v) is TensorDescriptor]
        device = driver.select_device(bases)
        target = driver.device_target(driver.get_current_device() if device is None else device)
    elif isinstance(target, str):
        target = backend.parse_target(target)
    return backend, target


def tensor_maps(bound, launch_kwargs, warmup: bool) -> list:
    """Per argument, the backend's hardware descriptor of a host descriptor (or None): asked of the
    backend the launch runs on, for its device's target, only when that device is present.  The
    backend and target are remembered per (options, base type, base device) when the first
    descriptor's base names its device."""
    if warmup:
        return [None] * len(bound)
    first = next(v.base for v in bound if type(v) is TensorDescriptor)
    device = _device_key(first)
    target = launch_kwargs.get("target")
    key = None
    if device is not None and (target is None or isinstance(target, str)):
        key = (launch_kwargs.get("backend") or _knobs.selected_backend(), target, type(first), device)
    sel = _selections.get(key) if key is not None else None
    if sel is None:
        sel = _select(bound, launch_kwargs)
        if key is not None:
            _selections[key] = sel
    backend, target = sel
    if target is None:
        return [None] * len(bound)
    mapper = backend.tensor_descriptor_mapper(target)
    try:
        return [mapper(v) if type(v) is TensorDescriptor else None for v in bound]
    except PluginError:
        raise
    except Exception as exc:
        raise PluginError(backend.plugin, "tritium_tensor_descriptor_mapper", f"{type(exc).__name__}: {exc}") from exc


def _address(m) -> int:
    """The device address of the memory a backend returned a hardware descriptor in."""
    return m if type(m) is int else _address_of(m)


def _flat(v, m) -> list:
    """The companion's arguments for descriptor ``v`` with hardware descriptor ``m`` (or None)."""
    return [v.base, *v.shape, *v.strides, *([_address(m)] if m is not None else []), tuple(v.block_shape), v.padding]


def run_with_descriptors(fn, bound, grid, warmup, launch_kwargs):
    """Launch ``fn`` with ``bound`` arguments some of which are host tensor descriptors."""
    maps = tensor_maps(bound, launch_kwargs, warmup)
    layout = tuple((len(v.shape), m is not None) if type(v) is TensorDescriptor else None
                   for v, m in zip(bound, maps))
    comp = companion(fn, layout)
    args = []
    for v, m in zip(bound, maps):
        if type(v) is TensorDescriptor:
            # the map goes by its address, an integer: the companion's launches then take the
            # direct binder (torch tensors, integers and constexprs only) after the first
            args.extend(_flat(v, m))
        else:
            args.append(v)
    if callable(grid):
        grid = _with_originals(grid, dict(zip(fn.arg_names, bound)))
    if not warmup and launch_kwargs.get("backend") is None and launch_kwargs.get("target") is None \
            and launch_kwargs.get("stream") is None:
        # the companion's own binder: after its first launch, the flattened arguments (tensors,
        # integers, the block shape and padding as constexprs) take the generated fast path
        # instead of the general one (about 100 us of Python a launch, more than a 4096^3
        # matmul's run time on the GPU: the launches then queued behind the host)
        opts = {k: v for k, v in launch_kwargs.items() if k not in ("backend", "target", "stream")}
        kernel = comp[grid](*args, **opts)
        _install(fn, bound, layout, opts)
        return kernel
    return comp.run(*args, grid=grid, warmup=warmup, **launch_kwargs)


def _with_originals(grid, originals: dict):
    """The user's grid function, seeing the launch's own arguments (descriptors, not the
    companion's flattened ones) by name."""
    return lambda meta: grid({**meta, **originals})


# -- the fast path ----------------------------------------------------------------------------------
def _install(fn, bound, layout, opts) -> None:
    """Give ``fn`` a :class:`DescriptorBinder` for ``layout`` after a launch that took the general
    path, when its maps' backend and target were remembered (torch tensors on a device) and
    ``fn`` has no binder of another kind.  A launch option the layout's binder does not take yet
    (``enable_fp_fusion``, a backend's option) gives it a binder that takes it too."""
    if fn._direct is not None and type(fn._direct) is not DescriptorBinder:
        return  # a binder of plain arguments: launches of that pattern keep it
    first = next(v.base for v in bound if type(v) is TensorDescriptor)
    device = _device_key(first)
    if device is None or any(type(v) is TensorDescriptor and type(v.base) is not type(first) for v in bound):
        return
    env = _knobs.selected_backend()
    sel = _selections.get((env, None, type(first), device))
    if sel is None or sel[1] is None:
        return
    key = (layout, env, type(first), device)
    binders = fn.__dict__.setdefault("_descriptor_binders", {})
    binder = binders.get(key)
    if binder is None or any(o not in binder.options for o in opts):
        if binder is None and len(binders) >= 16:
            binders.clear()
        options = binder_options(fn, opts, binder.options if binder is not None else ())
        binder = binders[key] = DescriptorBinder(fn, layout, type(first), device,
                                                 sel[0].tensor_descriptor_mapper(sel[1]), options)
    if fn._direct is not binder:
        fn._direct = binder
        fn._by_grid.clear()  # kernel[grid] now binds this binder


class DescriptorBinder:
    """The launch fast path of a ``@jit`` function whose arguments include host tensor
    descriptors, for one layout (which parameters are descriptors, their ranks, which have a
    hardware descriptor): generated Python that checks the layout, asks the backend's mapper
    for each map and launches the companion through its own binder, with none of the general
    path's binding and selection.  It takes ``num_warps``, ``num_stages``, ``num_ctas`` and
    ``maxnreg`` (what an autotuner's ``Config`` passes) and any other launch option an earlier
    launch of the layout passed, and hands them to the companion's own binder.  Anything else
    (another layout, device, backend, a map declined or newly offered, an option not seen yet)
    goes to the general path, which launches and installs the binder for the new layout or
    options.

    It stands where a :class:`~tritium.runtime.direct_binder.DirectBinder` would
    (``JITFunction._direct``), and files nothing (``fill``)."""

    pattern = None

    def __init__(self, fn, layout: tuple, base_type, device: int, mapper, options: tuple | None = None):
        self.fn, self.layout = fn, layout
        # the launch options it takes by keyword (a parameter of the same name stays a parameter)
        self.options = binder_options(fn, ()) if options is None else options
        self.companion = companion(fn, layout)
        self.launch = self._generate(base_type, device, mapper)

    def fill(self, *args, **kwargs) -> bool:
        return False

    def _generate(self, base_type, device, mapper):
        fn, layout = self.fn, self.layout
        names = [p.name for p in fn.params]
        opts = "(" + "".join(o + ", " for o in self.options) + ")"
        descs = [(p.name, entry) for p, entry in zip(fn.params, layout) if entry is not None]
        every = "(" + "".join(n + ", " for n in names) + ")"
        defaults = [f"    if {p.name} is _t_M: {p.name} = _t_defaults[{p.num}]" for p in fn.params
                    if p.default is not inspect.Parameter.empty]
        first = descs[0][0]
        guards = [f"type({n}) is not _t_D or len({n}.shape) != {rank}" for n, (rank, _) in descs]
        guards += [f"type({n}.base) is not _t_BT" for n, _ in descs]
        guards.append(f"{first}.base.get_device() != {device}")
        body, flat = [], []
        for i, (p, entry) in enumerate(zip(fn.params, layout)):
            n = p.name
            if entry is None:
                flat.append(n)
                continue
            rank, mapped = entry
            body.append(f"_t_m{i} = _t_map({n})")
            body.append(f"if _t_m{i} is {'' if mapped else 'not '}None: return _t_miss(_t_grid, {every}, (), _t_kw, {opts})")
            if mapped:
                body.append(f"_t_m{i} = _t_addr(_t_m{i})")
            body.append(f"_t_s{i} = {n}.shape")
            body.append(f"_t_t{i} = {n}.strides")
            flat += [f"{n}.base"] + [f"_t_s{i}[{d}]" for d in range(rank)] + [f"_t_t{i}[{d}]" for d in range(rank)]
            flat += ([f"_t_m{i}"] if mapped else []) + [f"_t_tuple({n}.block_shape)", f"{n}.padding"]
        params = "".join(n + "=_t_M, " for n in names)
        call = "".join(a + ", " for a in flat)
        kw_options = "".join(f"{o}=_t_M, " for o in self.options)
        none_given = " and ".join(f"{o} is _t_M" for o in self.options) or "True"
        src = f"""
def _t_launch(_t_grid, {params}*_t_extra, {kw_options}**_t_kw):
    if _t_extra or _t_kw or _t_env(_t_envkey) != _t_envval:
        return _t_miss(_t_grid, {every}, _t_extra, _t_kw, {opts})
{chr(10).join(defaults)}
    try:
        if {' or '.join(guards)}:
            return _t_miss(_t_grid, {every}, (), _t_kw, {opts})
{''.join('        ' + b + chr(10) for b in body)}    except Exception:  # outside the layout: the general path says what is wrong
        return _t_miss(_t_grid, {every}, (), _t_kw, {opts})
    if _t_type(_t_grid) is not _t_tuple and callable(_t_grid):
        _t_grid = _t_originals(_t_grid, {{{''.join(f'{n!r}: {n}, ' for n in names)}}})
    if {none_given}:
        return _t_comp[_t_grid]({call})
    return _t_comp[_t_grid]({call}**_t_opts({opts}))
"""
        envval = _ENV_GET(_ENV_KEY)  # TRITIUM_BACKEND as the launch that installs the binder saw it
        scope = {"_t_M": _MISSING, "_t_defaults": {p.num: p.default for p in fn.params}, "_t_env": _ENV_GET,
                 "_t_envkey": _ENV_KEY, "_t_envval": envval, "_t_D": TensorDescriptor, "_t_BT": base_type,
                 "_t_map": mapper, "_t_addr": _address, "_t_miss": self._miss, "_t_type": type, "_t_tuple": tuple,
                 "_t_originals": _with_originals, "_t_comp": self.companion, "_t_opts": self._given}
        exec(compile(src, f"<tritium descriptor binder of {fn.__name__}>", "exec"), scope)  # noqa: S102 - generated binder
        launch = scope["_t_launch"]
        launch.source = src
        return launch

    # the general binder, with the options given (the launch came through ``fn[grid]``, which
    # built that binder first)
    _given = DirectBinder._given
    _miss = DirectBinder._miss

