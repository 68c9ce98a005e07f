"""Load a kernel file of this folder (``tutorial_kernels.py``, ``matmul_kernels.py``) with
``triton``/``tl`` bound to one framework: the files import nothing themselves, so Tritium and Triton
compile the same source.  No torch here, so CPU-only scripts can use it."""
from __future__ import annotations

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load_kernels(name: str, triton_mod, tl_mod, filename: str = "tutorial_kernels.py"):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, filename))
    mod = importlib.util.module_from_spec(spec)
    mod.triton, mod.tl = triton_mod, tl_mod
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
