"""``triton.language.extra.intel``: the same utilities under the path Intel's Triton (its XPU
fork, whose language tests use them) imports them from: ``libdevice``, ``num_warps``,
``num_threads``, ``globaltimer``, ``smid``."""
from ..cuda import libdevice  # noqa: F401
from ..cuda.utils import globaltimer, num_threads, num_warps, smid  # noqa: F401

__all__ = ["libdevice", "globaltimer", "num_threads", "num_warps", "smid"]
