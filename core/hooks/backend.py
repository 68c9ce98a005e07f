"""One installed backend, seen through its plugin's hooks.

A :class:`InstalledBackend` talks only to the plugin that described it: every hook call goes through a
pluggy subset caller that excludes all other plugins, so one vendor's implementation can never
answer for another's backend.  Exceptions raised inside a plugin surface as :class:`PluginError`
naming the plugin; the ``ValueError`` that the contract lets ``tritium_parse_target`` and
``tritium_parse_options`` raise for bad user input passes through unchanged.
"""
from __future__ import annotations

import pathlib
import sys
import threading
import warnings
from typing import Any, Callable

from .types import BackendInfo, ConformanceExclusion, GPUTarget, Options


class PluginError(RuntimeError):
    """A backend plugin misbehaved while one of its hooks ran."""

    def __init__(self, plugin: str, hook: str, message: str):
        super().__init__(f"backend plugin {plugin!r} failed in {hook}: {message}")
        self.plugin = plugin
        self.hook = hook


class TritiumPluginWarning(UserWarning):
    """A backend plugin was skipped or one of its answers was ignored."""


def _conservative_membar(op_a: Any, op_b: Any) -> bool:
    return False


class InstalledBackend:
    """Facade over one :class:`BackendInfo` and the plugin that returned it."""

    def __init__(self, manager: Any, plugin: str, distribution: str, info: BackendInfo):
        self._manager = manager
        self.plugin = plugin
        self.distribution = distribution
        self.info = info
        self._lock = threading.Lock()
        self._present: bool | None = None
        self._driver: Any = None
        self._mappers: dict = {}

    @property
    def name(self) -> str:
        return self.info.name

    def __repr__(self) -> str:
        return f"<InstalledBackend {self.name} from plugin {self.plugin!r} ({self.distribution})>"

    def package_dir(self) -> pathlib.Path | None:
        """The folder of the top-level package whose module provides this backend's plugin (the
        entry point's module, or the module of a plugin object's class); None for a plugin inside
        ``tritium`` itself or one that no imported package provides.  The compiler hashes the
        sources under it into its cache keys, so a changed plugin never reuses an older one's kernels."""
        plugin = self._manager.pm.get_plugin(self.plugin)
        mod = getattr(plugin, "__name__", "") or type(plugin).__module__
        top = sys.modules.get(mod.split(".")[0]) if mod else None
        if top is None or not getattr(top, "__file__", None) or mod.startswith("tritium."):
            return None
        return pathlib.Path(top.__file__).parent

    # -- calling the plugin --------------------------------------------------------------------
    def call(self, hook: str, passthrough: tuple[type[BaseException], ...] = (), **kwargs: Any) -> Any:
        """Call ``hook`` on this backend's plugin only."""
        caller = self._manager.plugin_hook_caller(self.plugin, hook)
        try:
            return caller(**kwargs)
        except passthrough:
            raise
        except Exception as exc:
            raise PluginError(self.plugin, hook, f"{type(exc).__name__}: {exc}") from exc

    # -- device ---------------------------------------------------------------------------------
    def device_present(self) -> bool:
        """Cached; a plugin that raises here is treated as having no device (with a warning),
        because this question is asked while choosing a default and must not break that."""
        if self._present is None:
            with self._lock:
                if self._present is None:
                    try:
                        self._present = bool(self.call("tritium_device_present", backend=self.name))
                    except PluginError as exc:
                        warnings.warn(f"{exc}; treating backend {self.name!r} as having no device",
                                      TritiumPluginWarning, stacklevel=2)
                        self._present = False
        return self._present

    def device_unavailable_reason(self) -> str | None:
        """Why this backend has no device (the driver's ``inactive_reason``), or ``None`` when it has
        one or its driver cannot say.  Never raises: it is only shown to users."""
        if self.device_present():
            return None
        try:
            reason = self.driver().inactive_reason()
        except Exception:  # noqa: BLE001 - a broken driver only loses the explanation
            return None
        return str(reason) if reason else None

    def current_target(self) -> GPUTarget | None:
        if not self.device_present():
            return None
        return self.call("tritium_current_target", backend=self.name)

    def parse_target(self, text: str) -> GPUTarget:
        target = self.call("tritium_parse_target", passthrough=(ValueError,), text=text)
        if target is None or target.backend not in self.info.target_kinds:
            raise ValueError(f"backend {self.name!r} does not compile for target {text!r}; "
                             f"its target kinds are {', '.join(self.info.target_kinds)} "
                             f"(e.g. {', '.join(self.info.targets) or self.info.default_target})")
        return target

    def default_target(self) -> GPUTarget:
        """The current device's target when there is one, else the plugin's declared default."""
        target = self.current_target()
        return target if target is not None else self.parse_target(self.info.default_target)

    # -- compilation ----------------------------------------------------------------------------
    def parse_options(self, target: GPUTarget, options: dict | None = None) -> Options:
        """The plugin's options object; a plugin without ``tritium_parse_options`` gets the core
        :class:`Options` with ``threads_per_warp`` taken from the target."""
        opts = dict(options or {})
        parsed = self.call("tritium_parse_options", passthrough=(ValueError,), target=target, options=opts)
        if parsed is None:
            parsed = Options.from_dict(opts, threads_per_warp=target.warp_size)
        return parsed

    def make_stages(self, target: GPUTarget, options: Options, ttir_stage: Callable) -> dict[str, Callable]:
        """The ordered stages for ``target``: ``"ttir"`` (given by the caller) then the plugin's."""
        stages: dict[str, Callable] = {"ttir": ttir_stage}
        claimed = self.call("tritium_add_stages", target=target, stages=stages, options=options)
        if not claimed:
            raise ValueError(f"backend {self.name!r} has no compilation stages for target {target}")
        return stages

    def membar_filter(self, target: GPUTarget) -> Callable[[Any, Any], bool]:
        rule = self.call("tritium_membar_filter", target=target)
        return rule if rule is not None else _conservative_membar

    def scratch_sizes(self, target: GPUTarget) -> dict[str, Callable[[Any], int]]:
        """The plugin's scratch rules for ``target`` (op name -> bytes), over the core's."""
        rules = self.call("tritium_scratch_sizes", target=target)
        if rules is not None and not hasattr(rules, "items"):
            raise PluginError(self.plugin, "tritium_scratch_sizes",
                              f"expected a mapping of op names to callables, got {type(rules).__name__}")
        return dict(rules or {})

    def toolchain_hash(self, target: GPUTarget) -> str:
        """The plugin's toolchain identity for ``target`` (part of every cache key)."""
        h = self.call("tritium_toolchain_hash", target=target)
        if h is not None and not isinstance(h, str):
            raise PluginError(self.plugin, "tritium_toolchain_hash", f"expected a str, got {type(h).__name__}")
        return h or ""

    def after_allocation_passes(self, target: GPUTarget, options: Options) -> list:
        """The plugin's passes between allocate-shared-memory and membar."""
        return list(self.call("tritium_after_allocation_passes", target=target, options=options) or ())

    def conformance_exclusions(self, target: GPUTarget) -> list[ConformanceExclusion]:
        out: list[ConformanceExclusion] = []
        for result in self.call("tritium_conformance_exclusions", backend=self.name, target=target):
            if result:
                out.extend(result)
        return out

    # -- runtime --------------------------------------------------------------------------------
    def tensor_descriptor_map(self, target: GPUTarget, descriptor: Any) -> Any:
        """The plugin's hardware descriptor of a host tensor descriptor, or ``None``."""
        return self.call("tritium_tensor_descriptor_map", backend=self.name, target=target, descriptor=descriptor)

    def device_tensor_descriptor(self, target: GPUTarget, options: Options, element: str, block_shape: tuple,
                                 padding: str) -> int:
        """The byte alignment under which the plugin builds a ``tl.make_tensor_descriptor``'s
        hardware descriptor in the kernel (``tritium_device_tensor_descriptor``), 0 for never."""
        answer = self.call("tritium_device_tensor_descriptor", target=target, options=options, element=element,
                           block_shape=tuple(block_shape), padding=padding)
        if answer in (None, False):
            return 0
        if isinstance(answer, bool) or not isinstance(answer, int) or answer < 0:
            raise PluginError(self.plugin, "tritium_device_tensor_descriptor",
                              f"expected an alignment in bytes or None, got {answer!r}")
        return answer

    def tensor_descriptor_mapper(self, target: GPUTarget) -> Callable[[Any], Any]:
        """``descriptor -> hardware descriptor or None`` for ``target``: the plugin's fast form
        (``tritium_tensor_descriptor_mapper``) where it has one, else a call of
        :meth:`tensor_descriptor_map`.  Asked of the plugin once per target."""
        mapper = self._mappers.get(target)
        if mapper is None:
            mapper = self.call("tritium_tensor_descriptor_mapper", backend=self.name, target=target)
            if mapper is None:
                mapper = lambda descriptor: self.tensor_descriptor_map(target, descriptor)  # noqa: E731
            elif not callable(mapper):
                raise PluginError(self.plugin, "tritium_tensor_descriptor_mapper",
                                  f"expected a callable or None, got {type(mapper).__name__}")
            self._mappers[target] = mapper
        return mapper

    def driver(self) -> Any:
        """The plugin's :class:`tritium.runtime.driver.Driver` for this backend (created once)."""
        if self._driver is None:
            with self._lock:
                if self._driver is None:
                    drv = self.call("tritium_driver", backend=self.name)
                    if drv is None:
                        raise PluginError(self.plugin, "tritium_driver",
                                          f"returned no driver for backend {self.name!r}")
                    self._driver = drv
        return self._driver

    def owns(self, arg: Any) -> bool:
        try:
            return bool(self.driver().owns(arg))
        except PluginError:
            raise
        except Exception as exc:
            raise PluginError(self.plugin, "Driver.owns", f"{type(exc).__name__}: {exc}") from exc
