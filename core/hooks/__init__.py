"""Plugin machinery: the hook contract (``hookspecs``), its data types and the plugin manager."""
from .backend_plugin import BackendPlugin
from .hookspecs import PLUGIN_API_VERSION, hookimpl, hookspec
from .types import BackendInfo, ConformanceExclusion, GPUTarget, Options

__all__ = [
    "PLUGIN_API_VERSION", "hookimpl", "hookspec", "BackendPlugin",
    "BackendInfo", "ConformanceExclusion", "GPUTarget", "Options",
]
