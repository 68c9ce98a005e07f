"""``licm``: loop-invariant code motion out of ``scf.for``.

Reuses xDSL's LICM: an op moves before the loop when it has no memory effect, is speculatable and
uses no value defined in the loop body; hoisting repeats for users of hoisted ops, innermost loops
first.  Loads are never hoisted (the loop may write the memory they read, and a zero-trip loop
must not fault), nor are ops with region bodies that read memory.  A loop annotated
``llvm.loop_annotation = #llvm.loop_annotation<licm = <disable = true>>`` (``tl.range(...,
disable_licm=True)``) keeps its code: nothing is hoisted out of it (loops nested in it still hoist
into its body).
"""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.transforms.loop_invariant_code_motion import move_loop_invariant_code

from ..mlir_ops import licm_disabled


class _HoistOutOfFor(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.ForOp, rewriter: PatternRewriter) -> None:
        if not licm_disabled(op):
            move_loop_invariant_code(op)


class LICM:
    name = "licm"

    def run(self, module: ModuleOp) -> None:
        # innermost loops first, so that code hoisted out of one can leave the loop around it too
        PatternRewriteWalker(_HoistOutOfFor(), apply_recursively=False, walk_regions_first=True).rewrite_module(module)
