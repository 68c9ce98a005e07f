"""``dce``: dead-code elimination.

Reuses xDSL's liveness-based region DCE: an op is dead when none of its results is used by a live
op and its only effects are reads (``Pure`` ops, non-volatile ``tt.load``, and region ops such as
``scf.for``/``scf.if``/``tt.reduce`` whose bodies are themselves dead).  Stores, atomics,
``tt.print``/``tt.assert``, calls and volatile loads are always live; functions are never erased
here (that is ``symbol_dce``).
"""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.dead_code_elimination import region_dce


class DCE:
    name = "dce"

    def run(self, module: ModuleOp) -> None:
        region_dce(module.body)
