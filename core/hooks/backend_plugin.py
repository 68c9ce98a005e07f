"""``BackendPlugin``: a backend declares its targets once and implements only what differs.

The hook contract (``hookspecs``) is the interface; this class is a convenience on top of it.
Every hook that is asked about a backend name or a target is answered here for the subclass's
own backend and target kinds (``None`` otherwise, as the contract requires), and delegated to a
plain method without the ownership check::

    class NvidiaPlugin(BackendPlugin):
        info = BackendInfo(name="nvidia", target_kinds=("cuda",), ...)

        def parse_target(self, text): ...
        def parse_options(self, target, options): ...
        def add_stages(self, target, stages, options): ...
        def make_driver(self): return CudaDriver()

    TRITIUM_PLUGIN_API = 1
    plugin = NvidiaPlugin()            # entry point: "tritium_nvidia.plugin:plugin"

A plugin that prefers plain ``@hookimpl`` functions in a module still can (``docs/hooks.md``
shows both); the manager treats the two alike.  ``TRITIUM_PLUGIN_API`` is deliberately not
defined here: the plugin states the API version it was written against (on its module or its
class), so a stale plugin cannot inherit the current one.
"""
from __future__ import annotations

from typing import Any

from .hookspecs import hookimpl
from .types import BackendInfo


class BackendPlugin:
    """Base class for a backend plugin object.  Subclasses set :attr:`info` and override the
    plain methods below; the ``tritium_*`` methods are the hookimpls and are not meant to be
    overridden."""

    info: BackendInfo

    def __init__(self):
        self._driver = None

    # -- what a vendor implements ------------------------------------------------------------------
    def parse_target(self, text: str):
        """A :class:`GPUTarget` for ``text`` whose kind (before the colon) is one of
        ``info.target_kinds``; raise ``ValueError`` for an unknown architecture.  Called only
        for the plugin's own kinds."""
        raise NotImplementedError

    def parse_options(self, target, options: dict):
        raise NotImplementedError

    def add_stages(self, target, stages: dict, options) -> None:
        raise NotImplementedError

    def make_driver(self):
        """The backend's :class:`tritium.runtime.driver.Driver`; called once, lazily."""
        raise NotImplementedError

    def layout_encodings(self) -> list:
        return []

    def membar_filter(self, target):
        return None

    def scratch_sizes(self, target) -> dict:
        """Scratch rules (op name -> ``callable(op) -> bytes``) for ops whose lowering on
        ``target`` needs other room than the core rule."""
        return {}

    def after_allocation_passes(self, target, options) -> list:
        """Passes to run between allocate-shared-memory and membar."""
        return []

    def toolchain_hash(self, target) -> str:
        """The tools (and versions) outside the plugin's sources that shape its binaries for
        ``target``: part of every cache key (see the hookspec)."""
        return ""

    def conformance_exclusions(self, target) -> list:
        return []

    def tensor_descriptor_map(self, target, descriptor):
        """A hardware descriptor of a host tensor descriptor for ``target`` (see the hookspec)."""
        return None

    def device_tensor_descriptor(self, target, options, element: str, block_shape: tuple, padding: str):
        """The alignment (bytes) under which kernels for ``target`` build the hardware descriptor
        of a ``tl.make_tensor_descriptor`` themselves, or None (see the hookspec)."""
        return None

    def tensor_descriptor_mapper(self, target):
        """The fast form of :meth:`tensor_descriptor_map` for ``target`` (see the hookspec), or
        None: the launch then calls :meth:`tensor_descriptor_map` through its hook."""
        return None

    def device_present(self) -> bool:
        return bool(self.driver().is_active())

    def current_target(self):
        drv = self.driver()
        return drv.get_current_target() if drv.is_active() else None

    # -- helpers -----------------------------------------------------------------------------------
    def driver(self):
        if self._driver is None:
            self._driver = self.make_driver()
        return self._driver

    def owns_target(self, target: Any) -> bool:
        return getattr(target, "backend", None) in self.info.target_kinds

    def owns_backend(self, backend: str) -> bool:
        return backend == self.info.name

    # -- the hookimpls -----------------------------------------------------------------------------
    @hookimpl
    def tritium_backend_info(self):
        return self.info

    @hookimpl
    def tritium_device_present(self, backend):
        return self.device_present() if self.owns_backend(backend) else None

    @hookimpl
    def tritium_current_target(self, backend):
        return self.current_target() if self.owns_backend(backend) else None

    @hookimpl
    def tritium_parse_target(self, text):
        kind = str(text).partition(":")[0].strip().lower()
        return self.parse_target(text) if kind in self.info.target_kinds else None

    @hookimpl
    def tritium_parse_options(self, target, options):
        return self.parse_options(target, dict(options)) if self.owns_target(target) else None

    @hookimpl
    def tritium_add_stages(self, target, stages, options):
        if not self.owns_target(target):
            return None
        self.add_stages(target, stages, options)
        return True

    @hookimpl
    def tritium_layout_encodings(self):
        return list(self.layout_encodings())

    @hookimpl
    def tritium_membar_filter(self, target):
        return self.membar_filter(target) if self.owns_target(target) else None

    @hookimpl
    def tritium_scratch_sizes(self, target):
        return self.scratch_sizes(target) if self.owns_target(target) else None

    @hookimpl
    def tritium_toolchain_hash(self, target):
        return self.toolchain_hash(target) if self.owns_target(target) else None

    @hookimpl
    def tritium_after_allocation_passes(self, target, options):
        return self.after_allocation_passes(target, options) if self.owns_target(target) else None

    @hookimpl
    def tritium_conformance_exclusions(self, backend, target):
        return self.conformance_exclusions(target) if self.owns_backend(backend) else None

    @hookimpl
    def tritium_tensor_descriptor_map(self, backend, target, descriptor):
        return self.tensor_descriptor_map(target, descriptor) if self.owns_backend(backend) else None

    @hookimpl
    def tritium_device_tensor_descriptor(self, target, options, element, block_shape, padding):
        if not self.owns_target(target):
            return None
        return self.device_tensor_descriptor(target, options, element, block_shape, padding)

    @hookimpl
    def tritium_tensor_descriptor_mapper(self, backend, target):
        return self.tensor_descriptor_mapper(target) if self.owns_backend(backend) else None

    @hookimpl
    def tritium_driver(self, backend):
        return self.driver() if self.owns_backend(backend) else None
