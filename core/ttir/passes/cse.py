"""``cse``: common-subexpression elimination.

xDSL's CSE driver is reused: it merges ops whose ``Pure`` trait says they have no effects, and
merges read-only ops (non-volatile ``tt.load``) only within one block with no write in between.
Volatile loads report a write effect (see ``memory_ops``), so they are never merged.
"""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.common_subexpression_elimination import cse


class CSE:
    name = "cse"

    def run(self, module: ModuleOp) -> None:
        cse(module)
