"""The plugin manager: finds backend plugins, keeps the broken ones out, chooses a backend.

Plugins are loaded lazily, on the first question asked of the manager, never by ``import
tritium``: a stale or broken vendor package must cost one warning, not the whole installation.
Every entry point of the ``tritium`` group is loaded on its own; one that fails to import, lacks
``TRITIUM_PLUGIN_API``, declares another API version, implements a hook the contract does not
define, or raises in ``tritium_backend_info`` is skipped with one :class:`TritiumPluginWarning`
and recorded in :func:`failed_plugins`.
"""
from __future__ import annotations

import copyreg
import importlib
import os
import sys
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import pluggy

from . import hookspecs
from .backend import InstalledBackend, PluginError, TritiumPluginWarning
from .hookspecs import PLUGIN_API_VERSION, PROJECT
from .types import BackendInfo, GPUTarget
from .. import knobs

__all__ = [
    "InstalledBackend", "FailedPlugin", "PluginError", "TritiumPluginManager", "TritiumPluginWarning",
    "failed_plugins", "get_backend", "get_plugin_manager", "layout_encodings", "list_backends",
    "parse_target", "reset_plugin_manager", "select_backend",
]

ENTRY_POINT_GROUP = PROJECT
#: plugins loaded besides the installed ones, as ``module:attribute`` specs separated by commas
#: (``TritiumPluginManager.register_spec``); subprocesses inherit them with the environment
PLUGINS_ENV = "TRITIUM_PLUGINS"


def _env_plugin_specs() -> list[str]:
    return [s for s in os.environ.get(PLUGINS_ENV, "").split(",") if s.strip()]
INTERPRETER = "interpreter"
_MISSING = object()


@dataclass(frozen=True)
class FailedPlugin:
    """A plugin that was skipped: its entry point name, distribution and why."""

    name: str
    distribution: str
    reason: str


def _dist_label(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "unknown distribution"
    return f"{dist.name} {dist.version}"


class TritiumPluginManager:
    """Wraps a :class:`pluggy.PluginManager` with Tritium's loading and selection rules."""

    def __init__(self, entry_point_group: str | None = ENTRY_POINT_GROUP):
        self._group = entry_point_group
        self._lock = threading.RLock()
        self._loaded = False
        self.pm = pluggy.PluginManager(PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self._backends: dict[str, InstalledBackend] = {}
        self._failed: list[FailedPlugin] = []
        self._callers: dict[tuple[str, str], Any] = {}

    # -- loading --------------------------------------------------------------------------------
    def load(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            if self._group is not None:
                from importlib.metadata import entry_points

                for ep in sorted(entry_points(group=self._group), key=lambda e: e.name):
                    self._load_entry_point(ep)
                for spec in _env_plugin_specs():
                    self.register_spec(spec)
            self._loaded = True

    def _fail(self, name: str, distribution: str, reason: str) -> None:
        self._failed.append(FailedPlugin(name, distribution, reason))
        warnings.warn(f"Tritium backend plugin {name!r} (from {distribution}) was skipped: {reason}",
                      TritiumPluginWarning, stacklevel=4)

    def _load_entry_point(self, ep: Any) -> None:
        dist = _dist_label(ep)
        try:
            plugin = ep.load()
        except BaseException as exc:  # a plugin's import may even call sys.exit
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._fail(ep.name, dist, f"import failed: {type(exc).__name__}: {exc}")
            return
        self.register(plugin, ep.name, dist)

    def register(self, plugin: Any, name: str, distribution: str = "registered in-process") -> bool:
        """Check and register one plugin object (a module or any object with hookimpls).
        Returns whether it was accepted; a rejected plugin is warned about and recorded."""
        with self._lock:
            api = getattr(plugin, "TRITIUM_PLUGIN_API", _MISSING)
            if api is _MISSING and not isinstance(plugin, type(sys)):
                api = getattr(sys.modules.get(getattr(plugin, "__module__", ""), None),
                              "TRITIUM_PLUGIN_API", _MISSING)
            if api is _MISSING:
                self._fail(name, distribution, "does not declare TRITIUM_PLUGIN_API "
                           f"(this Tritium speaks plugin API {PLUGIN_API_VERSION})")
                return False
            if api != PLUGIN_API_VERSION:
                self._fail(name, distribution, f"declares plugin API {api!r}, "
                           f"this Tritium speaks {PLUGIN_API_VERSION}")
                return False
            if self.pm.has_plugin(name):
                self._fail(name, distribution, "another plugin is already registered under this name")
                return False
            try:
                self.pm.register(plugin, name=name)
                unknown = [hc.name for hc in self.pm.get_hookcallers(plugin) or () if not hc.has_spec()]
                if unknown:
                    raise PluginError(name, "registration",
                                      f"implements hooks the contract does not define: {', '.join(unknown)}")
                infos = self.plugin_hook_caller(name, "tritium_backend_info")()
                backends = self._backends_from(name, distribution, infos)
            except Exception as exc:
                self._unregister(name)
                self._fail(name, distribution, f"{type(exc).__name__}: {exc}")
                return False
            for b in backends:
                self._backends[b.name] = b
            self._callers.clear()  # subset callers exclude "all others": a newcomer changes that
            return True

    def register_spec(self, spec: str) -> bool:
        """Register the plugin ``spec`` names, ``"package.module:attribute"`` or
        ``"package.module"`` (a module of hookimpls), without installing it: a plugin under
        development, or a test plugin.  A spec that does not import is skipped with one warning,
        as a broken entry point is."""
        module_name, _, attr = spec.strip().partition(":")
        name = attr or module_name.rpartition(".")[2]
        try:
            plugin = importlib.import_module(module_name)
            if attr:
                plugin = getattr(plugin, attr)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._fail(name, f"{PLUGINS_ENV} entry {spec!r}", f"import failed: {type(exc).__name__}: {exc}")
            return False
        if any(p is plugin for p in self.pm.get_plugins()):
            return True
        return self.register(plugin, f"{module_name}:{attr}" if attr else module_name, f"{PLUGINS_ENV} entry {spec!r}")

    def _backends_from(self, name: str, distribution: str, results: list) -> list[InstalledBackend]:
        infos: list[Any] = []
        for r in results:
            infos.extend(r if isinstance(r, (list, tuple)) else [r])
        if not infos:
            raise ValueError("tritium_backend_info returned no BackendInfo")
        out = []
        for info in infos:
            if not isinstance(info, BackendInfo):
                raise TypeError(f"tritium_backend_info must return BackendInfo, got {type(info).__name__}")
            if info.api_version != PLUGIN_API_VERSION:
                raise ValueError(f"backend {info.name!r} declares plugin API {info.api_version}, "
                                 f"this Tritium speaks {PLUGIN_API_VERSION}")
            if info.name in self._backends:
                raise ValueError(f"backend {info.name!r} is already provided by plugin "
                                 f"{self._backends[info.name].plugin!r}")
            out.append(InstalledBackend(self, name, distribution, info))
        return out

    def _unregister(self, name: str) -> None:
        if self.pm.has_plugin(name):
            self.pm.unregister(name=name)
        self._callers = {k: v for k, v in self._callers.items() if k[0] != name}

    def plugin_hook_caller(self, plugin: str, hook: str) -> Callable[..., Any]:
        """A caller of ``hook`` that reaches ``plugin`` only (cached per pair)."""
        key = (plugin, hook)
        caller = self._callers.get(key)
        if caller is None:
            others = [p for n, p in self.pm.list_name_plugin() if n != plugin]
            subset = self.pm.subset_hook_caller(hook, remove_plugins=others)
            caller = _direct_caller(subset) or subset
            self._callers[key] = caller
        return caller

    # -- queries --------------------------------------------------------------------------------
    def list_backends(self) -> list[InstalledBackend]:
        self.load()
        return sorted(self._backends.values(), key=lambda b: b.name)

    def failed_plugins(self) -> list[FailedPlugin]:
        self.load()
        return list(self._failed)

    def _inventory(self) -> str:
        names = ", ".join(b.name for b in self.list_backends()) or "none"
        text = f"installed backends: {names}"
        if self._failed:
            text += "; failed plugins: " + "; ".join(f"{f.name} ({f.reason})" for f in self._failed)
        return text

    def get_backend(self, name: str) -> InstalledBackend:
        self.load()
        backend = self._backends.get(name)
        if backend is None:
            raise ValueError(f"unknown backend {name!r}; {self._inventory()}")
        return backend

    def parse_target(self, text: str) -> GPUTarget:
        """Parse ``"cuda:90"`` by asking each backend whose target kinds include ``cuda``."""
        kind = text.split(":", 1)[0].strip()
        backends = self.list_backends()
        for b in backends:
            if kind in b.info.target_kinds:
                return b.parse_target(text)
        kinds = sorted({k for b in backends for k in b.info.target_kinds})
        raise ValueError(f"unknown target kind {kind!r} in {text!r}; installed target kinds: "
                         f"{', '.join(kinds) or 'none'} ({self._inventory()}){_provider_hint(kind)}")

    def backend_for_target(self, target: GPUTarget) -> InstalledBackend:
        for b in self.list_backends():
            if target.backend in b.info.target_kinds:
                return b
        raise ValueError(f"no installed backend compiles for target {target}; {self._inventory()}"
                         f"{_provider_hint(target.backend)}")

    def select_backend(self, explicit: str | None = None, args: Sequence[Any] = ()) -> InstalledBackend:
        """explicit name > ``knobs.runtime.backend`` (``TRITIUM_BACKEND``) > the interpreter when
        ``knobs.runtime.interpret`` (``TRITON_INTERPRET=1``) > the backend owning an argument > the
        first backend with a device (the interpreter last) > the interpreter."""
        name = explicit or knobs.selected_backend()
        if name:
            return self.get_backend(name)
        present = [b for b in self.list_backends() if b.device_present()]
        for arg in args:
            for b in present:
                if b.owns(arg):
                    return b
        for b in present:
            if b.name != INTERPRETER:
                return b
        if INTERPRETER in self._backends:
            return self._backends[INTERPRETER]
        raise RuntimeError(f"no backend has a device present and the {INTERPRETER!r} backend is "
                           f"not installed; {self._inventory()}")

    def layout_encodings(self) -> list[Any]:
        """Every accepted plugin's ``tritium_layout_encodings``, flattened."""
        self.load()
        out: list[Any] = []
        for name, _ in self.pm.list_name_plugin():
            try:
                results = self.plugin_hook_caller(name, "tritium_layout_encodings")()
            except Exception as exc:
                raise PluginError(name, "tritium_layout_encodings", f"{type(exc).__name__}: {exc}") from exc
            for r in results:
                out.extend(r or ())
        return out


_manager: TritiumPluginManager | None = None
_manager_lock = threading.Lock()


def get_plugin_manager() -> TritiumPluginManager:
    global _manager
    if _manager is None:
        with _manager_lock:
            if _manager is None:
                _manager = TritiumPluginManager()
    return _manager


def reset_plugin_manager(manager: TritiumPluginManager | None = None) -> None:
    """Forget the loaded plugins (the next question reloads them), or install ``manager``."""
    global _manager
    with _manager_lock:
        _manager = manager


def list_backends() -> list[InstalledBackend]:
    return get_plugin_manager().list_backends()


def failed_plugins() -> list[FailedPlugin]:
    return get_plugin_manager().failed_plugins()


def get_backend(name: str) -> InstalledBackend:
    return get_plugin_manager().get_backend(name)


def _reduce_backend(backend: InstalledBackend):
    # pickled by name (a compiled kernel sent between processes, as Inductor's compile workers
    # send theirs): the receiving process uses its own installed backend of that name
    return (get_backend, (backend.name,))


copyreg.pickle(InstalledBackend, _reduce_backend)


#: target kind -> (backend, distribution, its directory in a source checkout) of the plugins
#: published with Tritium, named when no installed backend compiles for that kind
KNOWN_PROVIDERS = {"cuda": ("nvidia", "tritium-nvidia", "plugins/nvidia"),
                   "hip": ("amd", "tritium-amd", "plugins/amd")}


def _provider_hint(kind: str) -> str:
    known = KNOWN_PROVIDERS.get(kind)
    if known is None:
        return ""
    backend, dist, path = known
    return (f". '{kind}' targets come from the {backend} backend, distribution {dist}: "
            f"pip install {dist} (from a source checkout: pip install -e ./{path})")


def parse_target(text: str) -> GPUTarget:
    return get_plugin_manager().parse_target(text)


def backend_for_target_or_none(target) -> InstalledBackend | None:
    """The installed backend whose target kinds include ``target``'s, or None (no target, a bare
    target in a test, a kind no installed plugin compiles for: core rules only)."""
    if target is None or not hasattr(target, "backend"):
        return None
    try:
        return get_plugin_manager().backend_for_target(target)
    except ValueError:
        return None


def select_backend(explicit: str | None = None, args: Iterable[Any] = ()) -> InstalledBackend:
    return get_plugin_manager().select_backend(explicit, tuple(args))


def layout_encodings() -> list[Any]:
    return get_plugin_manager().layout_encodings()


def _direct_caller(subset) -> Callable[..., Any] | None:
    """The plugin's one implementation of a hook, called directly with pluggy's result convention
    (the value itself for a *firstresult* hook, else a list of the non-None results): pluggy's
    dispatch costs microseconds a call, and some hooks are asked on every launch (one tensor
    descriptor each).  None where pluggy must dispatch: wrappers, several implementations, no spec."""
    spec = getattr(subset, "spec", None)
    impls = subset.get_hookimpls()
    if spec is None or len(impls) != 1 or impls[0].hookwrapper or impls[0].wrapper:
        return None
    fn, names = impls[0].function, tuple(impls[0].argnames)
    if bool(spec.opts.get("firstresult")):
        def first(**kwargs):
            return fn(*[kwargs[n] for n in names])
        return first

    def every(**kwargs):
        result = fn(*[kwargs[n] for n in names])
        return [] if result is None else [result]
    return every

