"""Tritium's NVIDIA backend: PTX/cubin generation (:mod:`.binary`) and a cuda-python driver
(:mod:`.driver`).  Registered with Tritium through the ``tritium`` entry point
``nvidia = tritium_nvidia.plugin:nvidia_plugin``."""
__version__ = "0.1.0"
