"""Tritium's NVIDIA backend: TTGIR -> LLVM IR -> PTX -> cubin, launched with cuda-python.
Registered with Tritium through the ``tritium`` entry point
``nvidia = tritium_nvidia.plugin:nvidia_plugin``.

At the top: :mod:`.plugin` (the entry point, kept light), :mod:`.options` (targets and options:
the ground floor), :mod:`.compiler` (the stages and their pass lists) and :mod:`.exclusions`;
below them by role: ``passes/`` (the TTGIR passes, NVIDIA's layouts and ``ttng`` ops),
``lowering/`` (TTGIR -> LLVM IR), ``toolchain/`` (LLVM IR -> PTX -> cubin) and ``runtime/``
(the cuda-python driver, launchers and host tensor maps)."""
__version__ = "0.1.0"
