"""Tritium's AMD backend: TTGIR -> AMDGCN -> hsaco, launched with hip-python.

At the top: :mod:`.plugin` (the entry point, kept light), :mod:`.options` (targets and options:
the ground floor, importing nothing else of the plugin), :mod:`.compiler` (the stages) and
:mod:`.exclusions`; below them by role: ``passes/`` (the TTGIR passes and AMD's layouts),
``lowering/`` (TTGIR -> LLVM IR), ``toolchain/`` (LLVM IR -> hsaco) and ``runtime/`` (the
hip-python driver)."""

__version__ = "0.1.0"
