"""``triton.language.extra``: device libraries.  ``libdevice`` is portable (every backend maps
its symbols); ``cuda.libdevice`` and ``hip.libdevice`` are the same functions under the paths
Triton kernels import them from."""
from . import cuda, hip, libdevice  # noqa: F401

__all__ = ["cuda", "hip", "libdevice"]
