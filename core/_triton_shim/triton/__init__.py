"""Found as ``triton`` when ``tritium/_triton_shim`` is on ``sys.path`` (``PYTHONPATH``, as
``python -m tritium.run_as_triton`` sets it for the processes it starts): importing it installs
Tritium under Triton's name (``tritium.install_as_triton()``) and puts that ``triton`` module in
its own place."""
import sys

from tritium.triton_alias import install_as_triton

sys.modules[__name__] = install_as_triton()
