"""``triton.language.extra.cuda``: ``libdevice`` under the path cuda kernels import it from."""
from . import libdevice  # noqa: F401

__all__ = ["libdevice"]
