"""``@jit``: the ``JITFunction`` a kernel author decorates, its argument specialization and the
launch path (``kernel[grid](*args)``)."""
from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import linecache
import os
import textwrap
from typing import Callable

from .. import knobs as _knobs
from . import descriptors as _descriptors
from . import jit_hooks as _jit_hooks
from .interface import KernelInterface, grid3
from .specialize import (LAUNCH_OPTIONS, TensorWrapper, annotated_specializer, annotation_type, constexpr_key,
                         flatten_tuple_args, specialize_arg)
from .specialize import reinterpret  # noqa: F401  (triton.runtime.jit.reinterpret)
from ..language.core import JITCallable, constexpr
from .direct_binder import fill
from .binder import _torch_tensor_type, build_fast_launch, env_token, make_entry
from ..frontend.errors import CompilationError, KernelArgumentError, KernelArgumentOverflowError
from ..backends.interpreter.errors import InterpreterError, interpreted_compilation_error
from ..language import core
from ..hooks import manager

_BACKEND_ENV = "TRITIUM_BACKEND"
_ENV = os.environ


class JITFunction(KernelInterface, JITCallable):
    def __init__(self, fn: Callable, *, noinline: bool = False, do_not_specialize=(), debug: bool | None = None,
                 repr: Callable | None = None, launch_metadata=None, do_not_specialize_on_alignment=()):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__globals__ = fn.__globals__
        self.noinline = noinline
        self.debug = debug
        # repr(specialization) names the compiled kernel (Triton's ``@jit(repr=...)``); it sees
        # the ASTSource: ``.signature`` (parameter -> type string), ``.constexprs``, ``.attrs``
        self.repr = repr
        # launch_metadata(grid, metadata, {name: arg}) -> dict: what launch hooks see of a launch
        self.launch_metadata = launch_metadata
        sig = inspect.signature(fn)
        self.signature = sig
        self.arg_names = list(sig.parameters)
        self._index = {n: i for i, n in enumerate(self.arg_names)}
        self.params = [_Param(i, p) for i, p in enumerate(sig.parameters.values())]
        self.constexpr_indices = {p.num for p in self.params if p.is_constexpr}
        dns = {self.arg_names.index(d) if isinstance(d, str) else int(d) for d in do_not_specialize}
        dnsa = {self.arg_names.index(d) if isinstance(d, str) else int(d) for d in do_not_specialize_on_alignment}
        for p in self.params:
            p.do_not_specialize = p.num in dns
            p.do_not_specialize_on_alignment = p.num in dnsa
        try:
            self._src_lines, self._first_line = _source_of(fn)
        except (OSError, TypeError):  # defined in a REPL or exec(): reported when it is compiled
            self._src_lines, self._first_line = _exec_source_of(fn) or ([], 0)
        self._src = textwrap.dedent("".join(self._src_lines))
        self._indent = len(self._src_lines[0]) - len(self._src_lines[0].lstrip()) if self._src_lines else 0
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        self.starting_line_number = self._first_line  # the line of ``def`` in self.file
        self._origin = f"{self.file}:{self._first_line}" if self._first_line else self.file
        self._ast: ast.FunctionDef | None = None
        self._cache_key: str | None = None
        self._cache_key_generation = -1
        self.kernel_cache: dict = _KernelCache(self)   # (specialization key) -> CompiledKernel
        self._launch_info: dict = {}  # the same keys -> (positions of the runtime arguments, any TensorWrapper)
        self._backend_by_kind: dict = {}
        self._fast = None  # (generated launcher, its cache, torch tensor type); see binder.py
        self._direct = None  # the binder for this function's argument pattern; see direct_binder.py
        self._by_grid: dict = {}
        functools.update_wrapper(self, fn)

    def __getstate__(self):
        # ``__wrapped__`` (from update_wrapper) is ``fn`` again and is not pickled: Inductor's
        # compile workers clear ``fn`` (a function of a generated module) before they send a
        # kernel's JITFunction to the parent process
        state = dict(self.__dict__)
        state.pop("__wrapped__", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if state.get("fn") is not None:
            self.__wrapped__ = state["fn"]

    # -- source --------------------------------------------------------------------------------
    @property
    def src(self) -> str:
        """The function's source text (dedented, from ``def``), which the compiler reads."""
        return self._src

    @src.setter
    def src(self, new_src: str) -> None:
        self._unsafe_update_src(new_src)

    def _unsafe_update_src(self, new_src: str) -> None:
        """Compile this function from ``new_src`` from now on (Triton's name; tests vary a kernel
        by editing its text).  The parsed tree, the cache key and every compiled kernel of the old
        text are dropped, so the next launch compiles the new one; the on-disk cache keys on the
        text.  The parameters must keep their names: the launch binds arguments by them.  Errors
        point into the new text: ``<name (updated source; def at file:line)>:line:col``, lines
        counted from its first line.  Functions that call this one hash its new text too (their
        keys are recomputed), but kernels they compiled before stay in their in-memory caches:
        clear those (``caller.kernel_cache.clear()``) to recompile them."""
        global _SRC_GENERATION
        if not isinstance(new_src, str):
            raise TypeError(f"{self.__name__}: the source must be a str, got {type(new_src).__name__}")
        text = textwrap.dedent(new_src)
        try:
            tree = ast.parse(text)
        except SyntaxError as e:
            raise SyntaxError(f"{self.__name__}: the new source does not parse: {e.msg} (line {e.lineno})") from None
        fns = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not fns:
            raise ValueError(f"{self.__name__}: the new source defines no function")
        a = fns[0].args
        names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
        if names != self.arg_names:
            raise ValueError(f"{self.__name__}: the new source's parameters ({', '.join(names)}) differ from the "
                             f"function's ({', '.join(self.arg_names)}); arguments are bound by those names")
        self.file = f"<{self.__qualname__} (updated source; def at {self._origin})>"
        self._src_lines = text.splitlines(keepends=True)
        linecache.cache[self.file] = (len(text), None, self._src_lines, self.file)
        self._first_line, self._indent = 1, 0
        self._src = text
        self._ast = None
        self._cache_key = None
        _SRC_GENERATION += 1  # callers hash this function's text: their keys are recomputed
        dict.clear(self.kernel_cache)  # the compiled kernels and the launch fast paths filled from them
        self._forget_launchers()
        for attr in ("_descriptor_companions", "_descriptor_binders"):  # built from the old text
            self.__dict__.pop(attr, None)

    def _forget_launchers(self) -> None:
        """Drop the launch fast paths (binder.py, direct_binder.py) and the descriptor companions'
        kernels: after the kernel cache was emptied, the next launch goes through ``run`` and
        compiles."""
        self._fast = None
        self._direct = None
        self._by_grid = {}
        self._launch_info.clear()
        for comp in list(self.__dict__.get("_descriptor_companions", {}).values()):
            dict.clear(comp.kernel_cache)
            comp._launch_info.clear()
            comp._fast, comp._direct, comp._by_grid = None, None, {}
        self.__dict__.pop("_descriptor_binders", None)

    @property
    def device_caches(self):
        """``device -> (kernel cache, key cache, target, backend, binder)``, the shape of Triton's
        ``JITFunction.device_caches``.  Tritium keeps one kernel cache for all devices (a compiled
        kernel serves every device of its target), so ``kernel.device_caches[d][0]`` is
        ``kernel.kernel_cache`` for every ``d``; ``.clear()`` on it makes the next launch compile
        again."""
        return _DeviceCaches(self)

    def parse(self) -> ast.FunctionDef:
        if self._ast is None:
            if not self.src:
                raise ValueError(f"cannot read the source of {self.__name__} (from {self.file}): a @jit function is "
                                 "compiled from its source text, which Python keeps only for functions defined "
                                 "in a file; for source made at run time, write it to a file and "
                                 "exec(compile(src, that_file, 'exec')), register it with linecache, or set "
                                 "`.src` on the JITFunction before its first launch")
            tree = ast.parse(self.src)
            fns = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            if not fns:
                raise ValueError(f"could not find the definition of {self.__name__} in its source")
            self._ast = fns[0]
        return self._ast

    def file_position(self, node) -> tuple[int | None, int | None]:
        line = getattr(node, "lineno", None)
        if line is None:
            return None, None
        return line + self._first_line - 1, getattr(node, "col_offset", 0) + self._indent

    def source_line(self, line: int | None) -> str | None:
        if line is None:
            return None
        text = linecache.getline(self.file, line)
        if text:
            return text
        i = line - self._first_line
        return self._src_lines[i] if 0 <= i < len(self._src_lines) else None

    def global_scope(self) -> dict:
        scope = dict(self.fn.__globals__)
        if self.fn.__closure__:
            for name, cell in zip(self.fn.__code__.co_freevars, self.fn.__closure__):
                try:
                    scope[name] = cell.cell_contents
                except ValueError:
                    pass
        return scope

    @property
    def cache_key(self) -> str:
        """Hash of this function's source and of every @jit function it may call."""
        if self._cache_key is None or self._cache_key_generation != _SRC_GENERATION:
            self._cache_key_generation = _SRC_GENERATION
            h = hashlib.sha256(self.src.encode())
            seen = {id(self)}
            scope = self.global_scope()
            for node in ast.walk(self.parse()):
                if isinstance(node, ast.Name) and node.id in scope:
                    v = scope[node.id]
                    _hash_dependency(h, node.id, v, seen)
                elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in scope:
                    mod = scope[node.value.id]
                    v = getattr(mod, node.attr, None)
                    if isinstance(v, JITFunction) and id(v) not in seen:
                        _hash_dependency(h, node.attr, v, seen)
            self._cache_key = h.hexdigest()
        return self._cache_key

    # -- arguments -----------------------------------------------------------------------------
    def is_constexpr_param(self, name: str) -> bool:
        return self.arg_names.index(name) in self.constexpr_indices

    def bind_args(self, args, kwargs, in_kernel: bool = False) -> list:
        n = len(self.arg_names)
        if len(args) == n - len(kwargs) and all(k in self._index for k in kwargs):
            # the common launch: positional runtime arguments, constexprs by keyword
            values = list(args) + [_MISSING] * len(kwargs)
            for k, v in kwargs.items():
                values[self._index[k]] = v
            if not any(v is _MISSING for v in values):
                return values
        if len(args) > n:
            raise TypeError(f"{self.__name__}() takes {n} argument{'s' if n != 1 else ''} but {len(args)} were given")
        values = list(args) + [_MISSING] * (n - len(args))
        for k, v in kwargs.items():
            if k not in self.arg_names:
                raise TypeError(f"{self.__name__}() got an unexpected keyword argument '{k}'")
            i = self.arg_names.index(k)
            if values[i] is not _MISSING:
                raise TypeError(f"{self.__name__}() got multiple values for argument '{k}'")
            values[i] = v
        for i, p in enumerate(self.params):
            if values[i] is _MISSING:
                if p.default is inspect.Parameter.empty:
                    missing = [self.arg_names[j] for j in range(n) if values[j] is _MISSING
                               and self.params[j].default is inspect.Parameter.empty]
                    raise TypeError(f"{self.__name__}() missing {len(missing)} required argument"
                                    f"{'s' if len(missing) != 1 else ''}: {', '.join(repr(m) for m in missing)}")
                values[i] = p.default
        return values

    def mangle(self, sig) -> str:

        def part(v):
            if isinstance(v, constexpr):
                return "c" + _short(repr(v.value))
            if isinstance(v, tuple):  # a tuple argument: its structure, its leaves, a named tuple's class
                cls = type(v)
                named = "N" + _short(f"{cls.__module__}.{cls.__qualname__}{cls._fields}") if hasattr(cls, "_fields") else ""
                return f"T{named}{'_'.join(part(x) for x in v)}T"
            return str(v).replace("<", "").replace(">", "").replace(", ", "_")
        return _sanitize(f"{self.__module__}.{self.__qualname__}__{'_'.join(part(v) for v in sig)}")

    # -- launch --------------------------------------------------------------------------------
    def run(self, *args, grid, warmup: bool = False, **kwargs):
        backend_name = target = stream = None
        opts: dict = {}
        extra: dict = {}
        if kwargs:
            backend_name = kwargs.pop("backend", None)
            target = kwargs.pop("target", None)
            # keywords that name no parameter: launch options, and the backend's own options
            # (``extra``, checked once the backend is known)
            opts, extra = _launch_keywords(kwargs, self.arg_names)
            stream = opts.pop("stream", None)
        try:
            bound = args if not kwargs and len(args) == len(self.params) else self.bind_args(args, kwargs)
            if _descriptors.has_descriptor(bound):
                launch = dict(opts, **extra, backend=backend_name, target=target, stream=stream)
                return _descriptors.run_with_descriptors(self, bound, grid, warmup, launch)
            key_parts = tuple([spec(v, p) for spec, v, p in zip(self.specializers, bound, self.params)])
        except TypeError as e:
            raise self._argument_error(str(e)) from None
        except OverflowError as e:
            raise self._argument_error(str(e), KernelArgumentOverflowError) from None
        # A tuple argument is passed as its leaves (specialize.flatten_tuple_args): the kernel's
        # parameters, the device and the launch's arguments are found among those.
        has_tuple = any(k[0] == "t" for k in key_parts)
        if has_tuple:
            flat, flat_keys, flat_names = flatten_tuple_args(bound, key_parts, self.arg_names)
        else:
            flat, flat_keys, flat_names = bound, key_parts, self.arg_names
        backend = self._select_backend(backend_name, flat, flat_keys)
        if extra:
            opts.update(self._backend_options(backend, target, extra))
        pointers = [(i, n) for i, (n, k) in enumerate(zip(flat_names, flat_keys))
                    if k[0] == "a" and k[1][0] == "*"]
        device, placed, explicit_target = None, False, target
        driver = backend.driver()
        if not warmup and backend.device_present():
            # Where the launch runs: the pointers' device (an error when they disagree), before
            # anything is compiled or launched.
            try:
                device = driver.select_device([(n, _unwrap(flat[i])) for i, n in pointers])
            except ValueError as e:
                raise type(e)(f"{self.__name__}: {e}") from None
            placed = device is not None
            if not placed:
                device = driver.get_current_device()
            if target is None:
                target = driver.device_target(device)
        # The compiled kernel does not depend on which device of one target the memory is on:
        # one CompiledKernel (and one cache entry) serves them all, with a launcher per device.
        shared_parts = tuple(k[:3] if len(k) == 4 else k for k in key_parts)
        key = (backend.name, target, shared_parts, tuple(sorted(opts.items())) if opts else (),
               _knobs.compile_token())  # the knobs that change what is compiled (debug, override_arch, ...)
        kernel = self.kernel_cache.get(key)
        if kernel is None:
            hooks = _knobs.runtime  # knobs.runtime.jit_cache_hook / jit_post_compile_hook (jit_hooks.py)
            if hooks.jit_cache_hook is not None and _jit_hooks.call(
                    hooks.jit_cache_hook, self, bound, key_parts, backend, target, opts, device, warmup, key):
                return None  # the hook asked not to compile
            try:
                kernel = self._compile(bound, key_parts, backend, target, opts)
            except CompilationError as e:
                if backend.name != "interpreter" or isinstance(e, InterpreterError):
                    raise
                raise interpreted_compilation_error(e) from (e.__cause__ or e)
            if hooks.jit_post_compile_hook is not None:
                _jit_hooks.call(hooks.jit_post_compile_hook, self, bound, key_parts, backend, target, opts, device,
                                warmup, key)
            self.kernel_cache[key] = kernel
        info = self._launch_info.get(key)
        if info is None:  # (a kernel preloaded or put in the cache by hand has none yet)
            runtime = tuple(i for i, k in enumerate(flat_keys) if k[0] == "a")
            info = self._launch_info[key] = (runtime, any(type(flat[i]) is TensorWrapper for i in runtime))
        runtime, wrapped = info
        if not kwargs and not opts and backend_name is None and explicit_target is None and not wrapped \
                and self._fast is not None and device is not None and not has_tuple:
            self._fill_fast(kernel, runtime, key_parts, device, placed, driver, pointers)
        if warmup:
            return kernel
        if callable(grid):
            meta = dict(zip(self.arg_names, bound))
            meta.update(opts)
            meta.setdefault("num_warps", kernel.metadata.get("num_warps", 4))
            meta.setdefault("num_stages", kernel.metadata.get("num_stages", 3))
            grid = grid3(grid(meta), self.__name__, grid)
        else:
            grid = grid3(grid, self.__name__)
        args = [flat[i] for i in runtime]
        if wrapped:
            args = [a.base if type(a) is TensorWrapper else a for a in args]
        kernel.launch(grid, stream, args, device)
        if stream is None and backend_name is None and explicit_target is None and not wrapped and placed \
                and not has_tuple and all(len(key_parts[i]) == 4 for i, _ in pointers):
            fill(self, kernel, bound, key_parts, opts, device, driver)
        return kernel

    def _fill_fast(self, kernel, runtime, key_parts, device, placed, driver, pointers):
        """Record this specialization for the generated binder (binder.py)."""
        if self._fast[2] is None and _torch_tensor_type() is not None:
            self._fast = build_fast_launch(self)  # torch arrived after the binder was built
            self._by_grid.clear()
        meta = {"num_warps": kernel.metadata.get("num_warps", 4), "num_stages": kernel.metadata.get("num_stages", 3)}
        position = {i: j for j, i in enumerate(runtime)}
        ptrs = [(position[i], n) for i, n in pointers if i in position]
        # The key fixes the device when every pointer's key part places its memory and one of
        # them is on a device (otherwise the driver is asked on each launch, and with no device
        # memory among the arguments the launch follows the current device).
        fixed = placed and all(len(key_parts[i]) == 4 for i, _ in pointers)
        self._fast[1][(env_token(),) + key_parts] = make_entry(kernel, runtime, meta, device if fixed else None,
                                                              driver, ptrs)

    def __getitem__(self, grid):
        try:
            bound = self._by_grid.get(grid)  # the usual grid: a tuple launched before
        except TypeError:  # an unhashable grid
            bound = None
        return bound if bound is not None else self._bind_grid(grid)

    def _bind_grid(self, grid):
        """``launch(*args, **kwargs)`` for ``grid``: the binder with the grid bound; kept for
        tuples (creating the partial costs more than finding it).  ``_by_grid`` is emptied
        whenever the binder changes."""
        if self._fast is None:
            self._fast = build_fast_launch(self)
        entry = self._direct.launch if self._direct is not None else self._fast[0]
        if not callable(grid):
            grid3(grid, self.__name__)  # a float, bool, string or negative entry: an error, not a launch
        bound = functools.partial(entry, grid)
        if type(grid) is tuple:
            try:
                if len(self._by_grid) > 64:
                    self._by_grid.clear()
                self._by_grid[grid] = bound
            except TypeError:  # an unhashable element
                pass
        return bound

    @functools.cached_property
    def specializers(self):
        """Per parameter, ``f(value, param) -> key part`` (see ``specialize.py``)."""
        base = [(lambda v, p: ("c", constexpr_key(v))) if p.is_constexpr
                else _specialize_unaligned if p.do_not_specialize or p.do_not_specialize_on_alignment
                else specialize_arg for p in self.params]
        return [annotated_specializer(f, p.annotation_type) if p.annotation_type else f
                for f, p in zip(base, self.params)]

    def _argument_error(self, message: str, cls=None):
        line, col = self.file_position(self.parse())
        return (cls or KernelArgumentError)(message, filename=self.file, lineno=line, col=col,
                                            source_line=self.source_line(line), fn_name=self.__name__)

    def _backend_options(self, backend, target, extra: dict) -> dict:
        """``extra`` (launch keywords that name no parameter of the kernel) when each is a field of
        ``backend``'s options, as Triton accepts any option of its backend at launch
        (``kernel[grid](..., maxnreg=128, overlap_dots=False)``); else the error an unknown
        keyword argument gets."""
        names = backend_option_names(backend, target)
        for k in extra:
            if k not in names:
                raise self._argument_error(f"{self.__name__}() got an unexpected keyword argument '{k}'")
        return extra

    def _select_backend(self, explicit, bound, key_parts):
        name = explicit or _knobs.selected_backend()  # TRITIUM_BACKEND, else TRITON_INTERPRET
        if name:
            return manager.get_backend(name)
        kind = None
        for v, k in zip(bound, key_parts):
            if k[0] == "a" and k[1][0] == "*":  # the first pointer argument says where memory lives
                device = getattr(v, "device", None)
                try:
                    hash(device)
                except TypeError:  # e.g. cupy's Device: the same device answers the same id
                    device = (type(device), getattr(device, "id", None) if hasattr(device, "id") else str(device))
                kind = (type(v), device)
                break
        backend = self._backend_by_kind.get(kind)
        if backend is None:
            backend = manager.select_backend(None, bound)
            self._backend_by_kind[kind] = backend
        return backend

    def _compile(self, bound, key_parts, backend, target, opts):
        from ..compiler import compile_specialized
        return compile_specialized(self, bound, key_parts, backend, target, opts)

    def preload(self, specialization_data: str):
        """Compile (or fetch from the on-disk cache) the specialization that ``specialization_data``
        describes, the JSON text ``knobs.runtime.jit_cache_hook`` received, and cache it as its
        launch would; returns the compiled kernel (``jit_hooks.preload``)."""
        return _jit_hooks.preload(self, specialization_data)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self.__name__} is a @jit function: launch it as {self.__name__}[grid](...) "
                           "or call it from another @jit function")

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"


#: dtype spellings (tl, torch and numpy names, signature strings) -> the signature string Triton
#: uses for them (``"bool" -> "u1"``, ``"float16" -> "fp16"``, ``"int32" -> "i32"``); every canonical
#: string maps to itself.  ``tl.str_to_ty(type_canonicalisation_dict[name], None)`` is the tl dtype.
type_canonicalisation_dict = {
    "bool": "u1", "int1": "u1", "uint1": "u1", "i1": "u1",
    "float8e4nv": "fp8e4nv", "float8e5": "fp8e5", "float8e4b15": "fp8e4b15", "float8_e4m3fn": "fp8e4nv",
    "float8e4b8": "fp8e4b8", "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2": "fp8e5", "float8e5b16": "fp8e5b16",
    "float8_e5m2fnuz": "fp8e5b16", "half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32",
    "float32": "fp32", "double": "fp64", "float64": "fp64",
    "int8": "i8", "int16": "i16", "int": "i32", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "void": "void",
}
type_canonicalisation_dict.update({v: v for v in list(type_canonicalisation_dict.values())})

#: bumped whenever a function's source is replaced, so that the cache keys hashing it (its
#: callers') are computed again
_SRC_GENERATION = 0


class _KernelCache(dict):
    """A function's compiled kernels, by specialization key.  ``clear()`` also forgets the launch
    fast paths filled from them (binder.py, direct_binder.py), so the next launch compiles."""

    def __init__(self, fn):
        super().__init__()
        self._fn = fn

    def clear(self) -> None:
        super().clear()
        self._fn._forget_launchers()

    def __reduce__(self):  # a plain dict when copied or pickled
        return (dict, (dict(self),))


class _CompanionCache(_KernelCache):
    """The kernel cache of a tensor-descriptor companion (descriptors.py): each kernel it compiles
    also goes into the kernel's own cache, under ``("tensor descriptors", layout, key)``, so that
    ``kernel.kernel_cache`` / ``device_caches[d][0]`` count and hold every compiled form of the
    kernel, as Triton's do.  Clearing the kernel's cache clears the companions' too."""

    def __init__(self, fn, parent, layout):
        super().__init__(fn)
        self._parent = parent
        self._layout = layout

    def __setitem__(self, key, kernel) -> None:
        super().__setitem__(key, kernel)
        dict.__setitem__(self._parent.kernel_cache, ("tensor descriptors", self._layout, key), kernel)

    def setdefault(self, key, kernel=None):
        if key not in self:
            self[key] = kernel
        return self[key]

    def clear(self) -> None:
        for key in list(self):
            self._parent.kernel_cache.pop(("tensor descriptors", self._layout, key), None)
        super().clear()


class _DeviceCaches:
    """``JITFunction.device_caches``: a read-only mapping from any device to one tuple."""

    def __init__(self, fn):
        self._fn = fn

    def __getitem__(self, device):
        return _DeviceCache(self._fn, device)

    def __contains__(self, device) -> bool:
        return True

    def __repr__(self) -> str:
        return f"<device caches of {self._fn.__name__}: one kernel cache, {len(self._fn.kernel_cache)} kernels>"


@functools.lru_cache(maxsize=None)
def backend_option_names(backend, target) -> frozenset:
    """The option names ``backend`` parses for ``target`` (a target, its text, or None for the
    backend's default): what a launch may give as keywords besides the kernel's parameters and
    :data:`LAUNCH_OPTIONS`."""
    if target is None:
        target = backend.default_target()
    elif isinstance(target, str):
        target = backend.parse_target(target)
    options = backend.parse_options(target, {})
    fields = getattr(options, "__dataclass_fields__", None)
    return frozenset(fields if fields is not None else vars(options))


def _launch_keywords(kwargs: dict, arg_names) -> tuple[dict, dict]:
    """Take the keywords that name no parameter out of ``kwargs``: (the :data:`LAUNCH_OPTIONS`
    among them, the others, which must be options of the launch's backend)."""
    opts = {k: kwargs.pop(k) for k in list(kwargs) if k in LAUNCH_OPTIONS and k not in arg_names}
    extra = {k: kwargs.pop(k) for k in list(kwargs) if k not in arg_names}
    return opts, extra


class _DeviceCache(tuple):
    """``(kernel_cache, kernel_key_cache, target, backend, binder)`` for one device: the target and
    backend are those a launch without tensors would pick (the default backend and its target);
    ``binder(*args, **kwargs)`` returns ``(bound arguments by name, specialization key parts,
    launch options)``."""

    def __new__(cls, fn, device):
        backend = fn._select_backend(None, (), ())
        try:
            target = backend.default_target()
        except Exception:  # noqa: BLE001 - no device of that backend here: the target is unknown
            target = None

        def binder(*args, **kwargs):
            opts, extra = _launch_keywords(kwargs, fn.arg_names)
            if extra:
                opts.update(fn._backend_options(backend, target, extra))
            bound = fn.bind_args(args, kwargs)
            parts = [spec(v, p) for spec, v, p in zip(fn.specializers, bound, fn.params)]
            return dict(zip(fn.arg_names, bound)), parts, opts
        return super().__new__(cls, (fn.kernel_cache, {}, target, backend, binder))

    kernel_cache = property(lambda self: self[0])
    target = property(lambda self: self[2])
    backend = property(lambda self: self[3])
    binder = property(lambda self: self[4])


class _Param:
    def __init__(self, num: int, p: inspect.Parameter):
        self.num = num
        self.name = p.name
        self.default = p.default
        ann = p.annotation
        self.is_constexpr = _is_annotation(ann, "constexpr")
        self.is_const = _is_annotation(ann, "const")  # a pointer to constant data
        self.annotation = ann
        # a scalar dtype annotation (``v: tl.int8``) fixes the type the argument is passed as
        self.annotation_type = "" if self.is_constexpr else annotation_type(ann)
        self.do_not_specialize = False
        self.do_not_specialize_on_alignment = False


def _specialize_unaligned(v, param) -> tuple:
    """``specialize_arg`` for a parameter that must not get the divisibility fact (pointers
    included; ``specialize_arg`` already honours it for integers)."""
    key = specialize_arg(v, param)
    return key[:2] + ("",) + key[3:] if key[0] == "a" else key


def _is_annotation(ann, name: str) -> bool:
    """Whether ``ann`` is ``tl.<name>`` (the class, or its text under ``from __future__ import
    annotations``)."""
    if ann is getattr(core, name):
        return True
    if isinstance(ann, str):
        return ann.split(".")[-1].strip() == name
    return getattr(ann, "__name__", None) == name


class _Missing:
    def __repr__(self):
        return "<missing>"


_MISSING = _Missing()


def _source_of(fn) -> tuple[list[str], int]:
    lines, first = inspect.getsourcelines(fn)
    # skip decorator lines so the AST starts at `def`
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("def ", "async def ")):
            return lines[i:], first + i
    return lines, first


def _exec_source_of(fn, depth: int = 12) -> tuple[list[str], int] | None:
    """The source of ``fn`` when it was defined by ``exec(text)`` (no file holds it), found as a
    string in the locals of a frame up the stack (the code calling ``exec``, while the decorator
    runs) that defines a function of that name at the code object's first line with the same
    parameters.  Nothing is guessed: any other string is ignored, and None means not found."""
    import sys
    code = getattr(fn, "__code__", None)
    if code is None or not code.co_filename.startswith("<"):
        return None
    params = list(inspect.signature(fn).parameters)
    frame = sys._getframe(1)
    seen: set = set()
    for _ in range(depth):
        if frame is None:
            break
        for value in list(frame.f_locals.values()):
            if type(value) is not str or id(value) in seen or f"def {fn.__name__}" not in value:
                continue
            seen.add(id(value))
            try:
                tree = ast.parse(value)
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != fn.__name__:
                    continue
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                args = node.args
                names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
                if first != code.co_firstlineno or names != params:
                    continue
                lines = value.splitlines(keepends=True)[node.lineno - 1:node.end_lineno]
                if lines and not lines[-1].endswith("\n"):
                    lines[-1] += "\n"
                return lines, node.lineno
        frame = frame.f_back
    return None


def _hash_dependency(h, name, v, seen):
    if isinstance(v, JITFunction):
        if id(v) in seen:
            return
        seen.add(id(v))
        h.update(f"{name}:{v.cache_key}".encode())
    elif isinstance(v, KernelInterface) and isinstance(getattr(v, "fn", None), JITFunction):
        _hash_dependency(h, name, v.fn, seen)
    elif isinstance(v, constexpr) or isinstance(v, (int, float, bool, str)):
        h.update(f"{name}={v!r}".encode())


def _unwrap(v):
    return v.base if type(v) is TensorWrapper else v


def _short(s: str) -> str:
    return s if len(s) <= 16 and s.replace("_", "").replace("-", "").replace(".", "").isalnum() \
        else hashlib.sha1(s.encode()).hexdigest()[:8]


def _sanitize(s: str) -> str:
    return "".join(c if c.isalnum() or c in "_." else "_" for c in s)


def jit(fn=None, *, version=None, repr=None, launch_metadata=None, do_not_specialize=(),
        do_not_specialize_on_alignment=(), debug=None, noinline=False):
    """Decorate a kernel or device function: ``@jit``, ``@jit(noinline=True)``,
    ``@jit(do_not_specialize=["n"])``."""
    def decorator(f):
        return JITFunction(f, noinline=noinline, do_not_specialize=do_not_specialize, debug=debug, repr=repr,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment, launch_metadata=launch_metadata)
    return decorator(fn) if fn is not None else decorator
