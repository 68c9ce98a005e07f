"""``triton.language.extra``: device libraries.  ``libdevice`` is portable (every backend maps
its symbols); ``cuda.libdevice`` and ``hip.libdevice`` are the same functions under the paths
Triton kernels import them from; ``cuda`` (and ``intel``, the same under the path Intel's Triton
uses) also carry Triton's CUDA utilities."""
from . import cuda, hip, intel, libdevice  # noqa: F401

__all__ = ["cuda", "hip", "intel", "libdevice"]
