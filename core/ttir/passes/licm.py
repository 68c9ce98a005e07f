"""``licm``: loop-invariant code motion out of ``scf.for``.

Reuses xDSL's LICM: an op moves before the loop when it has no memory effect, is speculatable and
uses no value defined in the loop body; hoisting repeats for users of hoisted ops, innermost loops
first.  Loads are never hoisted (the loop may write the memory they read, and a zero-trip loop
must not fault), nor are ops with region bodies that read memory.
"""
from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.loop_invariant_code_motion import LoopInvariantCodeMotionPass


class LICM:
    name = "licm"

    def run(self, module: ModuleOp) -> None:
        LoopInvariantCodeMotionPass().apply(Context(), module)
