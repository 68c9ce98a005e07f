"""``tritium.runtime``: the launch path, the cache, the autotuner and the driver interface
(``tritium.runtime.driver.active``, as Triton's ``triton.runtime.driver.active``)."""
from . import driver  # noqa: F401
