"""``sccp``: constant propagation through structured control flow.

Scope (not a full sparse-conditional lattice analysis): it runs the ``canonicalize`` folds to a
fixed point together with two control-flow rules, which together cover what TTIR kernels need:

* an ``scf.for`` iter_arg that the body yields back unchanged, or re-yields a constant equal to
  its (constant) init, is replaced by its init value inside and after the loop, so constants in
  the init propagate into the body;
* an ``scf.if`` whose two branches yield the same value (defined outside it) yields that value;
* ``scf.if`` on a constant condition and zero-trip ``scf.for`` fold as in ``canonicalize``.

Values that are only constant along one path of a branch whose condition is not constant are
not discovered.
"""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from ._driver import RewriteTable, apply_tables
from ._fold import const_value
from .canonicalize import CANON

_RULES = RewriteTable()


@_RULES.on(scf.ForOp)
def propagate_invariant_iter_args(op: scf.ForOp, rw: PatternRewriter):
    body = op.body.block
    yielded = body.last_op.operands
    for init, arg, out, res in zip(op.iter_args, body.args[1:], yielded, op.results):
        c = const_value(init)
        same = out == arg or (c is not None and out.type == init.type and const_value(out) == c)
        if same and (arg.uses or res.uses):
            rw.replace_all_uses_with(arg, init)
            rw.replace_all_uses_with(res, init)


@_RULES.on(scf.IfOp)
def fold_same_yield(op: scf.IfOp, rw: PatternRewriter):
    if not op.false_region.blocks or not op.results:
        return
    ty, fy = op.true_region.block.last_op.operands, op.false_region.block.last_op.operands
    for t, f, res in zip(ty, fy, op.results):
        if t == f and res.uses and not _defined_inside(t, op):
            rw.replace_all_uses_with(res, t)


def _defined_inside(v: SSAValue, op: Operation) -> bool:
    owner = v.owner
    where = owner if isinstance(owner, Operation) else owner.parent_op()
    return where is not None and op.is_ancestor(where)


class SCCP:
    name = "sccp"

    def run(self, module: ModuleOp) -> None:
        apply_tables(module, CANON, _RULES)
