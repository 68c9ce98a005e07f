"""``inline``: inline every ``tt.call`` whose callee is not marked ``noinline = true``.

Inlined bodies are scanned again, so calls are inlined recursively (a recursive call chain is an
error, as in Triton).  The frontend has already lowered early returns, so a callee is a single
block ending in its only ``tt.return``; that is asserted, not handled.  Callee ops keep their own
source locations.  Functions left unused are removed by ``symbol_dce``.
"""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from ..ops import CallOp, FuncOp, ReturnOp

_MAX_DEPTH = 64


def is_noinline(f: FuncOp) -> bool:
    attr = f.attributes.get("noinline")
    return attr is not None and bool(getattr(attr, "value", attr).data)


def inline_call(call: CallOp, callee: FuncOp) -> list[CallOp]:
    """Replace ``call`` with a copy of ``callee``'s body; returns the calls the copy contains."""
    blocks = callee.body.blocks
    assert len(blocks) == 1, f"inline: @{callee.sym_name.data} has {len(blocks)} blocks; " \
                             "the frontend must lower early returns before inlining"
    body: Block = blocks[0]
    ret = body.last_op
    assert isinstance(ret, ReturnOp), f"inline: @{callee.sym_name.data} does not end in tt.return"
    value_map: dict[SSAValue, SSAValue] = dict(zip(body.args, call.operands, strict=True))
    new_calls: list[CallOp] = []
    for op in body.ops:
        if op is ret:
            break
        clone = op.clone(value_mapper=value_map)
        Rewriter.insert_op(clone, InsertPoint.before(call))
        new_calls.extend(o for o in clone.walk() if isinstance(o, CallOp))
    results = [value_map.get(v, v) for v in ret.operands]
    for old, new in zip(call.results, results, strict=True):
        old.replace_all_uses_with(new)
    Rewriter.erase_op(call)
    return new_calls


class Inline:
    name = "inline"

    def run(self, module: ModuleOp) -> None:
        funcs = {f.sym_name.data: f for f in module.body.block.ops if isinstance(f, FuncOp)}
        work: list[tuple[CallOp, int]] = [(op, 0) for f in funcs.values() for op in f.walk()
                                          if isinstance(op, CallOp)]
        while work:
            call, depth = work.pop()
            callee = funcs.get(call.callee.root_reference.data)
            if callee is None or is_noinline(callee) or not callee.body.blocks:
                continue
            if depth >= _MAX_DEPTH or callee.is_ancestor(call):
                raise RecursionError(f"inline: call chain through @{callee.sym_name.data} is recursive "
                                     f"or deeper than {_MAX_DEPTH}")
            work.extend((c, depth + 1) for c in inline_call(call, callee))
