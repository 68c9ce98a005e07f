"""``triton.language.extra.hip``: ``libdevice`` under the path hip kernels import it from."""
from . import libdevice  # noqa: F401

__all__ = ["libdevice"]
