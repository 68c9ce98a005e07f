"""The TTIR optimization pipeline, in the order of Triton's ``make_ttir``."""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from ..passes import PassManager
from .passes import (CSE, DCE, LICM, SCCP, Canonicalize, Combine, Inline, LoopUnroll, ReorderBroadcast,
                     RewriteTensorPointer, SymbolDCE)


def ttir_passes(options=None) -> list:
    passes = [Inline(), SymbolDCE(), Combine(), Canonicalize(), ReorderBroadcast(), CSE(), LICM(),
              SCCP(), DCE(), Canonicalize()]
    if getattr(options, "rewrite_tensor_pointer", False):
        # Block pointers become tensors of pointers; clean up the index arithmetic it leaves.
        passes += [RewriteTensorPointer(), SCCP(), CSE(), DCE()]
    # last, as in Triton: the copies are not re-optimised as one body
    return passes + [LoopUnroll()]


def optimize_ttir(module: ModuleOp, options=None) -> ModuleOp:
    """Optimize a TTIR module in place (and return it).  ``options.rewrite_tensor_pointer``
    asks for block pointers to be lowered to tensors of pointers."""
    return PassManager("ttir", ttir_passes(options)).run(module)
