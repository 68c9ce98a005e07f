"""The launch interface of a compiled kernel that generated launchers call, as PyTorch Inductor's do.

A launcher that does not go through ``@jit`` dispatch holds the ``CompiledKernel`` that
``tritium.compile`` returned and calls, on every launch::

    kernel.run(grid_x, grid_y, grid_z, stream, kernel.function, kernel.packed_metadata,
               launch_metadata, launch_enter_hook, launch_exit_hook, *args)

after one ``kernel._init_handles()`` (which loads the binary on the current device and sets
``kernel.function``).  ``args`` are every argument of the kernel in parameter order, constexprs
included (they are dropped here; the compiled kernel has them folded in), or only the runtime
ones.  ``launch_metadata`` is ``kernel.launch_metadata(grid, stream, *args)`` when a launch-enter
hook is installed, else ``None``; the hooks are called before and after the launch with it.

:class:`LaunchInterface` is mixed into :class:`tritium.compiler.CompiledKernel`; it relies on
the kernel's ``backend``, ``metadata``, ``asm``, ``name``, ``_launchers`` and ``_launcher(device)``.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Callable


class LazyDict:
    """A launch's metadata for launch hooks: the fixed entries at once, the entries of a kernel's
    ``@jit(launch_metadata=fn)`` function only when a hook calls :meth:`get`."""

    def __init__(self, data: dict):
        self.data = dict(data)
        self.extras: list[tuple[Callable, tuple]] = []

    def add(self, func: Callable, args: tuple) -> None:
        self.extras.append((func, args))

    def get(self) -> dict:
        for func, args in self.extras:
            self.data.update(func(*args))
        self.extras.clear()
        return self.data


class HookChain:
    """Hooks of one kind, called in order (``reversed=True``: last added first), as
    ``knobs.runtime.launch_enter_hook`` and its relatives are: ``chain.add(fn)``,
    ``chain.remove(fn)``, ``chain(*args)``.  An empty chain is false, so a launcher generated
    against it can leave the launch metadata out altogether."""

    def __init__(self, reversed: bool = False):
        self.calls: list[Callable] = []
        self.reversed = reversed

    def add(self, func: Callable) -> None:
        if func not in self.calls:
            self.calls.append(func)

    def remove(self, func: Callable) -> None:
        if func in self.calls:
            self.calls.remove(func)

    def __bool__(self) -> bool:
        return bool(self.calls)

    def __call__(self, *args, **kwargs) -> None:
        for call in (reversed(self.calls) if self.reversed else self.calls):
            call(*args, **kwargs)

    def __repr__(self) -> str:
        return f"HookChain({self.calls!r})"


def _hooks_of(kernel_cls) -> tuple[Any, Any]:
    """The launch hooks in force: ``tritium.knobs.runtime``'s where that module has them, else the
    ``CompiledKernel.launch_enter_hook`` / ``launch_exit_hook`` class attributes."""
    try:
        from .. import knobs
        runtime = knobs.runtime
        return runtime.launch_enter_hook, runtime.launch_exit_hook
    except (ImportError, AttributeError):
        return kernel_cls.launch_enter_hook, kernel_cls.launch_exit_hook


class LaunchInterface:
    #: called as ``hook(launch_metadata)`` before / after every launch through :attr:`run`
    #: (where ``tritium.knobs`` exists, ``knobs.runtime.launch_enter_hook`` is used instead)
    launch_enter_hook: Callable | None = None
    launch_exit_hook: Callable | None = None

    #: the ``ASTSource`` this kernel was compiled from (``None`` for IR sources)
    src: Any = None
    #: the loaded kernel on the device current at :meth:`_init_handles` (a launch callable)
    function: Any = None
    module: Any = None

    # -- identity ---------------------------------------------------------------------------------
    @property
    def hash(self) -> str:
        """A hex digest that names this compiled kernel: its name, metadata and binary."""
        h = self.__dict__.get("_hash")
        if h is None:
            d = hashlib.sha256(str(self.name).encode())
            d.update(json.dumps(dict(self.metadata), sort_keys=True, default=str).encode())
            binary = self.asm.get(self.backend.info.binary_ext, b"") if self.backend is not None else b""
            d.update(binary if isinstance(binary, (bytes, bytearray)) else str(binary).encode())
            h = self.__dict__["_hash"] = d.hexdigest()
        return h

    @hash.setter
    def hash(self, value: str) -> None:
        self.__dict__["_hash"] = value

    @property
    def packed_metadata(self):
        """What :attr:`run` takes back as its ``packed_metadata`` argument: the metadata itself
        (the launch reads what it needs from the kernel)."""
        return self.metadata

    @property
    def shared(self) -> int:
        return int(self.metadata.get("shared", 0) or 0)

    @property
    def num_warps(self) -> int:
        return int(self.metadata.get("num_warps", 4))

    # -- loading ----------------------------------------------------------------------------------
    def _init_handles(self) -> None:
        """Load the binary on the current device (once per device); ``function`` is then the
        launch for that device.  Raises ``OutOfResources`` where the device cannot hold the kernel."""
        driver = self._driver
        if driver is None:
            driver = self._driver = self.backend.driver()
        device = driver.get_current_device()
        launcher = self._launchers.get(device) or self._launcher(device)
        self.function = launcher
        self.module = self.__dict__.get("module") or self.name

    # -- launching --------------------------------------------------------------------------------
    @property
    def run(self) -> Callable:
        """``run(grid_x, grid_y, grid_z, stream, function, packed_metadata, launch_metadata,
        launch_enter_hook, launch_exit_hook, *args)``."""
        return self._run_with_hooks

    def _run_with_hooks(self, grid_x, grid_y, grid_z, stream, function, packed_metadata, launch_metadata,
                        enter_hook, exit_hook, *args):
        if enter_hook:
            enter_hook(launch_metadata)
        runtime = self._runtime_args(args)
        if not callable(function):
            self._init_handles()
            function = self.function
        if grid_x * grid_y * grid_z > 0:
            function((grid_x, grid_y, grid_z), stream, runtime)
        if exit_hook:
            exit_hook(launch_metadata)

    def _arg_plan(self) -> tuple[int, int, tuple[int, ...]]:
        """(number of parameters, number of runtime arguments, positions of the runtime ones)."""
        plan = self.__dict__.get("_plan")
        if plan is None:
            signature = self.metadata.get("signature") or {}
            fn = getattr(self.src, "fn", None)
            names = list(getattr(fn, "arg_names", None) or signature)
            keep = tuple(i for i, n in enumerate(names) if str(signature.get(n, "")) != "constexpr")
            n_runtime = len(self.runtime_signature) if self.runtime_signature is not None else len(keep)
            plan = self.__dict__["_plan"] = (len(names), n_runtime, keep)
        return plan

    def _runtime_args(self, args: tuple) -> list:
        n_all, n_runtime, keep = self._arg_plan()
        if len(args) == n_runtime:
            return list(args)
        if len(args) == n_all:
            return [args[i] for i in keep]
        raise TypeError(f"kernel {self.name} takes {n_all} arguments ({n_runtime} without its constexprs), "
                        f"got {len(args)}")

    def launch_metadata(self, grid, stream, *args):
        """The metadata launch hooks receive (``None`` when no launch-enter hook is installed):
        ``name``, ``function``, ``stream``, and, lazily, what the kernel's
        ``@jit(launch_metadata=fn)`` returns for ``fn(grid, metadata, {name: arg})``."""
        enter, _ = _hooks_of(type(self))
        if not enter:  # none, or an empty chain of hooks
            return None
        self._init_handles()
        meta = LazyDict({"name": self.name, "function": self.function, "stream": stream})
        fn = getattr(self.src, "fn", None)
        extra = getattr(fn, "launch_metadata", None)
        if extra is not None:
            meta.add(extra, (grid, self.metadata, dict(zip(fn.arg_names, args))))
        return meta
