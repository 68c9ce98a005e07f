"""Load a kernel file of this folder (``tutorial_kernels.py``, ``matmul_kernels.py``) with
``triton``/``tl`` bound to one framework: the files import nothing themselves, so Tritium and Triton
compile the same source.  Torch only where :func:`descriptor_frameworks` is called (a GPU
benchmark), so CPU-only scripts can use :func:`load_kernels`."""
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


def descriptor_frameworks(prefix: str, filename: str) -> dict:
    """``{"tritium": (module, TensorDescriptor), "triton": (module, TensorDescriptor)}`` for the
    kernel file ``filename`` (modules ``<prefix>_tritium`` and ``<prefix>_triton``); Triton's entry
    only where it is installed (a line says so otherwise).  Triton then takes ``torch.empty`` as
    its allocator: its in-kernel descriptors (and warp-specialized kernels) ask for global scratch."""
    import tritium
    import tritium.language as ttl
    from tritium.tools.tensor_descriptor import TensorDescriptor as TritiumDesc
    out = {"tritium": (load_kernels(f"{prefix}_tritium", tritium, ttl, filename), TritiumDesc)}
    try:
        import triton
        import triton.language as tl
        from triton.tools.tensor_descriptor import TensorDescriptor as TritonDesc
    except ImportError:
        print("triton is not installed: Tritium only")
        return out
    import torch
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    out["triton"] = (load_kernels(f"{prefix}_triton", triton, tl, filename), TritonDesc)
    return out
