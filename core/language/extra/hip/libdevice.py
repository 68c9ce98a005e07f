"""``triton.language.extra.hip.libdevice``: the portable ``tritium.language.extra.libdevice``
functions (same names and dtype rules); each backend maps the calls to its own math library."""
from ..libdevice import *  # noqa: F401,F403
from ..libdevice import __all__  # noqa: F401
