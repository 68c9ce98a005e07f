"""``triton.language.extra.cuda``: ``libdevice`` under the path cuda kernels import it from, and
Triton's CUDA utilities (``num_warps``, ``num_threads``, ``globaltimer``, ``smid``)."""
from . import libdevice  # noqa: F401
from .utils import globaltimer, num_threads, num_warps, smid  # noqa: F401

__all__ = ["libdevice", "globaltimer", "num_threads", "num_warps", "smid"]
