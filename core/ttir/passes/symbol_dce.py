"""``symbol_dce``: erase private ``tt.func``s that no public function reaches through ``tt.call``."""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from ..ops import CallOp, FuncOp


class SymbolDCE:
    name = "symbol_dce"

    def run(self, module: ModuleOp) -> None:
        funcs = {f.sym_name.data: f for f in module.body.block.ops if isinstance(f, FuncOp)}
        live: set[str] = set()
        work = [n for n, f in funcs.items() if f.is_public]
        while work:
            name = work.pop()
            if name in live or name not in funcs:
                continue
            live.add(name)
            work.extend(op.callee.root_reference.data for op in funcs[name].walk() if isinstance(op, CallOp))
        for name, f in funcs.items():
            if name not in live:
                module.body.block.erase_op(f)
