"""``tritium.compiler.compiler``: the compile API: turn a ``@jit`` function plus a specialization into a ``CompiledKernel``
holding every stage's text (``kernel.asm["ttir"]``) and a launcher, through the on-disk cache."""
from __future__ import annotations

import json
import os
from typing import Any

from .. import knobs as _knobs
from ..frontend.errors import CompilationError
from ..runtime.interface import grid3
from ..ir_source import IRSource  # noqa: F401  (tritium.compiler.IRSource, as in Triton)
from ..runtime.specialize import TensorWrapper
from ..runtime.launch_api import LaunchInterface

TRITIUM_VERSION = "0.1.0"


class ASTSource:
    """A kernel to compile: the function, its signature (parameter name -> type string such as
    ``*fp32`` or ``constexpr``), constexpr values and per-argument attributes
    (``{name: {"tt.divisibility": 16}}``)."""

    def __init__(self, fn, signature: dict, constexprs: dict | None = None, attrs: dict | None = None):
        self.fn = fn
        self.signature = {_name(fn, k): _sig_value(v) for k, v in signature.items()}
        self.constexprs = {_name(fn, k): v for k, v in (constexprs or {}).items()}
        # values as {name: value} or as Triton 3.x writes them, [[name, value], ...]
        self.attrs = {_name(fn, k): dict(v) if isinstance(v, (list, tuple)) else v for k, v in (attrs or {}).items()}
        for name in self.constexprs:
            if isinstance(name, tuple):  # inside a tuple argument: (argument index, index, ...)
                top = fn.arg_names[name[0]]
                if top in self.signature:
                    self.signature[top] = _set_path(self.signature[top], name[1:], "constexpr")
                continue
            self.signature[name] = "constexpr"
        for p in fn.params:  # a constexpr parameter left out takes its default
            if p.name not in self.signature and p.is_constexpr and p.default is not _EMPTY:
                self.signature[p.name] = "constexpr"
        missing = [n for n in fn.arg_names if n not in self.signature]
        if missing:
            raise TypeError(f"{fn.__name__}: no type or constexpr value given for {', '.join(missing)}")
        for n, t in self.signature.items():
            if t == "constexpr" and n not in self.constexprs and fn.params[fn.arg_names.index(n)].default is _EMPTY:
                raise TypeError(f"{fn.__name__}: constexpr parameter '{n}' needs a value")

    @property
    def constants(self) -> dict:
        """The constexpr values keyed by path, as Triton's ``ASTSource.constants``: ``(i,)`` for
        parameter ``i``, ``(i, j, ...)`` for an element of a tuple argument."""
        return {((self.fn.arg_names.index(k),) if isinstance(k, str) else tuple(k)): v
                for k, v in self.constexprs.items()}

    @property
    def name(self) -> str:
        """The compiled kernel's symbol: the function's name, or what its ``@jit(repr=...)`` makes
        of this specialization (Triton's hook), reduced to identifier characters.  The hook sees
        ``.signature`` (parameter -> type string, ``"constexpr"`` for constants), ``.constants``
        (parameter name -> value, as Triton's hook sees them), ``.constexprs`` and ``.attrs``."""
        repr_fn = getattr(self.fn, "repr", None)
        if repr_fn is None:
            return self.fn.__name__
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in str(repr_fn(_Specialization(self))))
        return name if name and not name[0].isdigit() else "_" + name

    def key(self) -> str:
        return repr((self.fn.cache_key, sorted(self.signature.items()),
                     sorted(((k, repr(v)) for k, v in self.constexprs.items()), key=_by_key),
                     sorted(((k, sorted(v.items())) for k, v in self.attrs.items()), key=_by_key)))


class _Specialization:
    """What a ``@jit(repr=...)`` hook is given: the ASTSource's names, with ``constants`` keyed by
    parameter name (nested tuple constants stay under their paths)."""

    def __init__(self, src: ASTSource):
        self.fn, self.signature, self.constexprs, self.attrs = src.fn, src.signature, src.constexprs, src.attrs
        self.constants = dict(src.constexprs)


import inspect as _inspect  # noqa: E402

_EMPTY = _inspect.Parameter.empty


def _name(fn, k):
    """A parameter's name from its name or index; a path ``(index, i, j, ...)`` names an element of a
    tuple argument (Triton's keys), one of length 1 the parameter itself."""
    if isinstance(k, tuple):
        if len(k) == 1:
            return _name(fn, k[0])
        return (fn.arg_names.index(k[0]) if isinstance(k[0], str) else int(k[0]),) + tuple(int(i) for i in k[1:])
    return fn.arg_names[k] if isinstance(k, int) else k


def _by_key(item):
    return repr(item[0]) if isinstance(item[0], tuple) else item[0]


def _sig_value(v):
    """A signature entry: a type string, or for a tuple argument a tuple of entries (a list, as
    JSON gives it back, is read as one)."""
    if isinstance(v, list):
        return tuple(_sig_value(x) for x in v)
    if isinstance(v, tuple) and not hasattr(type(v), "_fields"):
        return tuple(_sig_value(x) for x in v)
    return v


def _set_path(ty, path, value):
    if not path:
        return value
    if not isinstance(ty, tuple):
        raise TypeError(f"a constexpr path goes into {ty!r}, which is not a tuple")
    items = list(ty)
    items[path[0]] = _set_path(items[path[0]], path[1:], value)
    return type(ty)(*items) if hasattr(type(ty), "_fields") else tuple(items)


def _runtime_leaves(signature: dict, arg_names) -> list:
    """``(name, type)`` of each run-time parameter of the compiled kernel, tuple arguments
    flattened into their leaves (``x[1][0]``), constexprs left out."""
    out = []

    def go(name, ty):
        if isinstance(ty, tuple):
            for i, t in enumerate(ty):
                go(f"{name}[{i}]", t)
        elif ty != "constexpr":
            out.append((name, ty))
    for n in arg_names:
        go(n, signature[n])
    return out


class KernelMetadata(dict):
    """A compiled kernel's metadata: a dict that also reads as attributes, as Triton's does
    (``kernel.metadata.shared``, ``kernel.metadata.num_warps``)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"kernel metadata has no {name!r} (has: {', '.join(sorted(self))})") from None


class CompiledKernel(LaunchInterface):
    def __init__(self, backend, target, asm: dict, metadata: dict, runtime_signature: dict):
        self.backend = backend
        self.target = target
        self.asm = asm
        self.metadata = metadata if isinstance(metadata, KernelMetadata) else KernelMetadata(metadata)
        self.metadata.setdefault("shared", 0)
        self.name = metadata.get("name", "")
        self.runtime_signature = runtime_signature
        self._launchers: dict = {}
        self._driver = None
        # registers and spilled words per thread: from the assembler's report where the backend has
        # one (NVIDIA), else from the loaded function; None on the interpreter (no registers)
        self.n_regs = self.metadata.get("n_regs")
        self.n_spills = self.metadata.get("n_spills")

    @property
    def binary(self):
        return self.asm[self.backend.info.binary_ext]

    def _launcher(self, device):
        launcher = self._launchers.get(device)
        if launcher is None:
            driver = self.backend.driver()
            handle = driver.load_binary(self.name, self.binary, self.metadata, device)
            self.n_regs = getattr(handle, "n_regs", self.n_regs)
            self.n_spills = getattr(handle, "n_spills", self.n_spills)
            launcher = driver.make_launcher(handle, self.metadata, self.runtime_signature)
            self._launchers[device] = launcher
        return launcher

    def launch(self, grid, stream, args, device=None):
        """Launch on ``device`` (default: the device of the pointer arguments, else the current
        one) on ``stream`` (default: that device's current stream); the current device is left
        as it was."""
        if type(grid) is not tuple or len(grid) != 3:
            grid = grid3(grid)
        driver = self._driver
        if driver is None:
            driver = self._driver = self.backend.driver()
        if device is None:
            device = driver.select_device(self._pointer_args(args))
            if device is None:
                device = driver.get_current_device()
        current_stream, current = driver.stream_and_current_device(device)
        launcher = self._launchers.get(device) or self._launcher(device)
        if grid[0] * grid[1] * grid[2] == 0:
            return
        if stream is None:
            stream = current_stream
        if current == device:
            launcher(grid, stream, args)
        else:
            driver.launch_on(device, launcher, grid, stream, args)

    def _pointer_args(self, args) -> list:
        names = self.metadata.get("arg_names") or [str(i) for i in range(len(args))]
        return [(names[i] if i < len(names) else str(i), a) for i, a in enumerate(args)
                if str(self.runtime_signature.get(i, "")).startswith("*")]

    def __getitem__(self, grid):
        # ``kernel[grid](*args)``: every parameter, constexprs included (as Triton 3.6 takes them),
        # or only the runtime ones
        def run(*args):
            return self.launch(grid, None, [a.base if type(a) is TensorWrapper else a for a in self._runtime_args(args)])
        return run


# --- compilation ---------------------------------------------------------------------------------

def _ttir_stage(src: ASTSource, target, options):
    def stage(_, metadata):
        from ..frontend.generator import ast_to_ttir
        from ..ttir.pipeline import optimize_ttir
        module = ast_to_ttir(src.fn, src.signature, src.constexprs, src.attrs, options, target, kernel_name=src.name)
        metadata["name"] = src.name
        return optimize_ttir(module, options)
    return stage


def compile(src, target=None, options: dict | None = None, *, signature: dict | None = None,
            constexprs: dict | None = None, attrs: dict | None = None, stage: str | None = None, **kw):
    """Compile ``src`` for ``target`` (``"cuda:90"``, a ``GPUTarget``, or None for the default
    backend's current target).  ``src`` is an ``ASTSource``, a ``@jit`` function with
    ``signature=``/``constexprs=``, or IR: an ``IRSource``, a path to a ``.ttir``/``.ttgir``/
    ``.llir``/``.ptx`` file, or such text (:mod:`tritium.ir_source`).  Returns a
    ``CompiledKernel`` whose ``.asm`` has every stage run (up to ``stage``)."""
    from ..hooks import manager
    from ..hooks.types import GPUTarget
    if isinstance(src, (str, os.PathLike)):
        src = IRSource(src)
    elif not isinstance(src, (ASTSource, IRSource)):
        if signature is None:
            raise TypeError("compile(fn, ...) needs signature= (parameter name -> type string)")
        src = ASTSource(src, signature, constexprs, attrs)
    opts = dict(options or {})
    opts.update(kw)
    if target is None:
        backend = manager.select_backend(None, ())
        target = _knobs.arch_target(backend, backend.default_target(), opts.get("arch"))
    else:
        if isinstance(target, str):
            target = manager.parse_target(target)
        if not isinstance(target, GPUTarget):
            raise TypeError(f"target must be a string like 'cuda:90' or a GPUTarget, got {target!r}")
        backend = manager.get_plugin_manager().backend_for_target(target)
        if opts.get("arch"):  # an arch= option names the architecture compiled for
            target = _knobs.arch_target(backend, target, opts["arch"])
    if stage is not None:
        check_stage(stage, backend, target, src)
    if isinstance(src, IRSource):
        from ..compile_ir import compile_ir
        return compile_ir(src, backend, target, opts, stage)
    return _compile_source(src, backend, target, opts, stage)


def check_stage(stage, backend, target, src=None) -> None:
    """``stage`` must name one of the backend's stages (or an IR source's own): a typo would
    otherwise run every stage and say nothing."""
    known = list(backend.info.stages)
    ext = getattr(src, "ext", None)
    if ext and ext not in known:
        known.insert(0, ext)
    if stage not in known:
        raise ValueError(f"unknown stage {stage!r} for {target}: the {backend.name} backend's stages are "
                         f"{', '.join(known)}")


def _compile_source(src: ASTSource, backend, target, opts: dict, last_stage: str | None = None) -> CompiledKernel:
    options = backend.parse_options(target, opts)
    if src.fn.debug is not None and "debug" not in opts:
        import dataclasses
        options = dataclasses.replace(options, debug=bool(src.fn.debug))
    if not options.debug and _knobs.runtime.debug:  # TRITON_DEBUG=1: device asserts in every kernel
        import dataclasses
        options = dataclasses.replace(options, debug=True)
    name = src.name
    leaves = _runtime_leaves(src.signature, src.fn.arg_names)
    runtime_sig = {i: t for i, (n, t) in enumerate(leaves)}

    def plan():
        metadata: dict[str, Any] = {"name": name, "target": str(target), "backend": backend.name,
                                    "num_warps": options.num_warps, "num_stages": options.num_stages,
                                    "num_ctas": getattr(options, "num_ctas", 1), "debug": options.debug,
                                    "arg_names": [n for n, _ in leaves],
                                    "signature": {n: t for n, t in src.signature.items()}}
        ttir = _ttir_stage(src, target, options)
        try:
            stages = backend.make_stages(target, options, ttir)
        except ValueError:
            if last_stage != "ttir":
                raise
            stages = {"ttir": ttir}  # TTIR does not depend on the backend's later stages
        return metadata, stages, src

    def error(st, e):
        return CompilationError(f"internal compiler error in stage '{st}' for {target}: {type(e).__name__}: {e}",
                                filename=src.fn.file, lineno=src.fn.file_position(src.fn.parse())[0], fn_name=name)

    kernel = build(backend, target, name, src.key(), options, runtime_sig, plan, error, last_stage)
    kernel.src = src
    return kernel


def build(backend, target, name: str, source_key: str, options, runtime_sig: dict, plan, error,
          last_stage: str | None = None) -> CompiledKernel:
    """Run a source's stages through the on-disk cache.  ``plan()`` (called on a miss) gives
    ``(metadata, stages, first input)``; ``error(stage, exc)`` the CompilationError for an
    internal failure."""
    from ..runtime.cache import CacheManager, always_compile, make_key
    key = make_key(TRITIUM_VERSION, _fingerprint(backend), source_key, options.hash_key(), str(target), backend.name,
                   backend.info.version, last_stage or "")
    cache = CacheManager(key)
    if not always_compile():
        group = cache.get_group()
        if group is not None:
            try:
                metadata = json.loads(group[f"{name}.json"])
                asm = {}
                for st in metadata["stages"]:
                    data = group[f"{name}.{st}"]
                    asm[st] = data if st in metadata.get("binary_stages", ()) else data.decode()
                return CompiledKernel(backend, target, asm, metadata, runtime_sig)
            except (KeyError, ValueError, UnicodeDecodeError):
                cache.remove()  # unreadable: compile again rather than trust it
    metadata, stages, cur = plan()
    asm: dict[str, Any] = {}
    binary_stages = []
    from ..ttir.ir import print_module
    from xdsl.dialects.builtin import ModuleOp
    for st, fn in stages.items():
        try:
            cur = fn(cur, metadata)
        except CompilationError as e:
            # the message already points at the user's line; the compiler's frames add nothing
            # (the cause, where there is one, is the error a language function raised, in its words)
            raise e.with_traceback(None) from e.__cause__
        except Exception as e:  # noqa: BLE001 - report which stage broke, without internals
            raise error(st, e) from e
        if isinstance(cur, ModuleOp):
            asm[st] = print_module(cur)
        else:
            asm[st] = cur
            if isinstance(cur, (bytes, bytearray)):
                binary_stages.append(st)
        if st == last_stage:
            break
    metadata["stages"] = list(asm)
    metadata["binary_stages"] = binary_stages
    files = {f"{name}.{st}": (v if isinstance(v, (bytes, bytearray)) else v.encode()) for st, v in asm.items()}
    files[f"{name}.json"] = json.dumps(metadata, default=str).encode()
    try:
        cache.put_group(files)
    except OSError:
        pass  # a read-only or full cache directory must not stop compilation
    return CompiledKernel(backend, target, asm, metadata, runtime_sig)


_FINGERPRINTS: dict = {}


def _fingerprint(backend) -> str:
    """Hash of the compiler's own sources and of the backend plugin's package, so a changed
    compiler never reuses kernels an older one cached."""
    import hashlib
    import pathlib
    import sys
    plugin = backend._manager.pm.get_plugin(backend.plugin)  # the module behind the entry point
    mod = getattr(plugin, "__name__", "") or type(plugin).__module__
    top = sys.modules.get(mod.split(".")[0]) if mod else None
    roots = [pathlib.Path(__file__).parent.parent]  # the whole tritium package
    if top is not None and getattr(top, "__file__", None) and not mod.startswith("tritium."):
        roots.append(pathlib.Path(top.__file__).parent)
    key = tuple(str(r) for r in roots)
    if key not in _FINGERPRINTS:
        h = hashlib.sha256()
        for root in roots:
            for f in sorted(root.rglob("*.py")):
                h.update(str(f.relative_to(root)).encode())
                h.update(f.read_bytes())
        _FINGERPRINTS[key] = h.hexdigest()
    return _FINGERPRINTS[key]


def compile_specialized(fn, bound, key_parts, backend, target, opts) -> CompiledKernel:
    """The JIT path: build the ASTSource for these launch arguments and compile it."""
    from ..hooks import manager
    signature, constexprs, attrs = {}, {}, {}
    for p, v, k in zip(fn.params, bound, key_parts):
        if k[0] == "c":
            constexprs[p.name] = v.value if hasattr(v, "value") and type(v).__name__ == "constexpr" else v
        elif k[0] == "1":
            constexprs[p.name] = 1
        elif k[0] == "n":
            constexprs[p.name] = None
        elif k[0] == "t":  # a tuple: its structure in the signature, its constexprs and facts by path
            signature[p.name] = _tuple_signature(v, k, (p.num,), p, constexprs, attrs)
        else:
            ty = k[1]
            if getattr(p, "is_const", False) and ty.startswith("*") and not ty.startswith("*k"):
                ty = "*k" + ty[1:]  # ``tl.const``: a pointer to constant data
            signature[p.name] = ty
            if k[2] == "D":
                attrs[p.name] = {"tt.divisibility": 16}
    if target is None:
        target = backend.default_target()
    elif isinstance(target, str):
        target = manager.parse_target(target)
    # the arch= option, else knobs.runtime.override_arch (TRITON_OVERRIDE_ARCH), names the architecture
    target = _knobs.arch_target(backend, target, opts.get("arch") if opts else None)
    src = ASTSource(fn, signature, constexprs, attrs)
    return _compile_source(src, backend, target, opts)


def _tuple_signature(v, k, path, p, constexprs, attrs):
    items = []
    for i, (x, kx) in enumerate(zip(v, k[2])):
        sub = path + (i,)
        if kx[0] == "t":
            items.append(_tuple_signature(x, kx, sub, p, constexprs, attrs))
        elif kx[0] in ("c", "1", "n"):
            constexprs[sub] = (x.value if type(x).__name__ == "constexpr" and hasattr(x, "value") else x) \
                if kx[0] == "c" else (1 if kx[0] == "1" else None)
            items.append("constexpr")
        else:
            ty = kx[1]
            if getattr(p, "is_const", False) and ty.startswith("*") and not ty.startswith("*k"):
                ty = "*k" + ty[1:]
            items.append(ty)
            if kx[2] == "D":
                attrs[sub] = {"tt.divisibility": 16}
    return k[1](*items) if k[1] is not tuple else tuple(items)


# --- Triton's ``triton.compiler.compiler`` names ----------------------------------------------------
def make_backend(target):
    """The installed backend compiling for ``target`` (a ``GPUTarget`` or ``"cuda:90"``), as Triton's
    ``make_backend``: ``make_backend(t).parse_options({})`` is that backend's options object."""
    from ..backends.compiler import BaseBackend
    return BaseBackend(target)


def triton_key() -> str:
    """Changes whenever the compiler does (Triton's ``triton_key``; Inductor keys its caches on it)."""
    from ..runtime.cache import triton_key as key
    return key()
