"""``tritium.backends.compiler``: Triton's ``triton.backends.compiler`` names over Tritium's plugins.

``GPUTarget`` is the target triple; ``BaseBackend`` is what Triton's ``make_backend(target)``
returns, here a view of the installed plugin compiling for ``target``: ``parse_options(dict)``
gives that plugin's options object (Inductor reads its fields)."""
from __future__ import annotations

from ..hooks.types import GPUTarget, Options
from ..hooks import manager


class BaseBackend:
    """The backend compiling for ``target`` (``BaseBackend(target)`` picks it among the plugins)."""

    def __init__(self, target: GPUTarget, backend=None):
        if backend is None:
            if isinstance(target, str):
                target = manager.parse_target(target)
            backend = manager.get_plugin_manager().backend_for_target(target)
        self.target, self.backend = target, backend
        self.name = backend.name

    def parse_options(self, options: dict | None = None) -> Options:
        return self.backend.parse_options(self.target, dict(options or {}))

    def hash(self) -> str:
        """The backend, its target and its toolchain (``tritium_toolchain_hash``), as Triton's
        ``BaseBackend.hash()`` names the compiler a cache entry came from."""
        return f"{self.name}-{self.target}-{self.backend.toolchain_hash(self.target)}"

    def __repr__(self) -> str:
        return f"<BaseBackend {self.name} for {self.target}>"


__all__ = ["GPUTarget", "BaseBackend"]
