"""A type-dispatching pattern driver: one xDSL ``RewritePattern`` that looks up the rewrites for
an op's class in a table, so the greedy walker tries only the few rewrites that can match
instead of every pattern on every op."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

Rewrite = Callable[[Operation, PatternRewriter], None]


class RewriteTable:
    def __init__(self):
        self.table: dict[type, list[Rewrite]] = defaultdict(list)

    def on(self, *op_types: type) -> Callable[[Rewrite], Rewrite]:
        def register(fn: Rewrite) -> Rewrite:
            for t in op_types:
                self.table[t].append(fn)
            return fn
        return register


class _Dispatch(RewritePattern):
    def __init__(self, tables: Iterable[RewriteTable]):
        self.table: dict[type, list[Rewrite]] = defaultdict(list)
        for t in tables:
            for k, fns in t.table.items():
                self.table[k].extend(fns)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        for fn in self.table.get(type(op), ()):
            fn(op, rewriter)
            if rewriter.has_done_action:
                return


def apply_tables(module: ModuleOp, *tables: RewriteTable) -> bool:
    """Rewrite ``module`` to a fixed point with the rewrites of ``tables``; True if anything changed."""
    walker = PatternRewriteWalker(_Dispatch(tables), apply_recursively=True)
    return walker.rewrite_module(module)
