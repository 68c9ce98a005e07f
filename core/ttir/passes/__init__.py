"""TTIR passes, one module per pass.  Each pass is a small class with ``name`` and
``run(module)`` (the interface of :mod:`tritium.passes`)."""
from __future__ import annotations

from .canonicalize import Canonicalize
from .combine import Combine
from .cse import CSE
from .dce import DCE
from .fuse_nested_loops import FuseNestedLoops
from .inline import Inline
from .licm import LICM
from .loop_unroll import LoopUnroll
from .reorder_broadcast import ReorderBroadcast
from .rewrite_tensor_pointer import RewriteTensorPointer
from .sccp import SCCP
from .symbol_dce import SymbolDCE

__all__ = ["Canonicalize", "Combine", "CSE", "DCE", "FuseNestedLoops", "Inline", "LICM", "LoopUnroll", "ReorderBroadcast", "RewriteTensorPointer",
           "SCCP", "SymbolDCE"]
