"""``scf.for`` / ``scf.if`` / ``scf.while``, ``tt.func`` calls and returns.

Loop-carried and branch-merged tensors are lists of LLVM values, so each register becomes one phi
node; regions are lowered in place, their terminators (``scf.yield``, ``scf.condition``) read by
the op that owns the region."""
from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects.builtin import TensorType

from .lowering import FunctionLowering, LoweringError, flat_types, flatten, lowers, unflatten
from ...ttir.mlir_ops import licm_disabled
from ...ttgir.passes.allocate_global_scratch import OFFSET, scratch_offset

_TERMINATORS = ("scf.yield", "scf.condition")


class _LoopID(ir.values.MDValue):
    """A loop's ``!llvm.loop`` node: ``distinct !{!self, !{!"llvm.licm.disable"}, ...}`` (LLVM
    reads a loop's properties from the node on its back-edge branch; the first operand is the
    node itself, which makes each loop's node its own)."""

    def __init__(self, module: ir.Module, properties: list):
        super().__init__(module, [], name=str(len(module.metadata)))
        self.operands = (self, *properties)

    def descr(self, buf):
        buf.append("distinct ")
        super().descr(buf)

    __eq__ = object.__eq__
    __hash__ = object.__hash__


def _mark_back_edge(fl: FunctionLowering, op, branch) -> None:
    """``!llvm.loop`` on a loop's back edge for its ``llvm.loop_annotation`` (``disable_licm``)."""
    if licm_disabled(op):
        module = fl.fn.module
        licm = module.add_metadata([ir.MetaDataString(module, "llvm.licm.disable")])
        branch.set_metadata("llvm.loop", _LoopID(module, [licm]))


def lower_region_body(fl: FunctionLowering, block) -> list:
    """Lower ``block`` up to its terminator; return the terminator's operand values."""
    term = None
    for op in block.ops:
        if op.name in _TERMINATORS:
            term = op
            break
        fl.lower_op(op)
    return [] if term is None else [fl.get(v) for v in term.operands]


def _phis(fl: FunctionLowering, types: list[ir.Type]) -> list[ir.PhiInstr]:
    return [fl.builder.phi(t) for t in types]


@lowers("scf.for")
def _for(fl: FunctionLowering, op) -> None:
    b = fl.builder
    lb, ub, step = fl.get(op.lb), fl.get(op.ub), fl.get(op.step)
    inits = flatten([fl.get(v) for v in op.iter_args])
    types = flat_types(fl, [v.type for v in op.iter_args])
    pre = b.block
    header = fl.fn.append_basic_block("for.header")
    body = fl.fn.append_basic_block("for.body")
    exit_ = fl.fn.append_basic_block("for.exit")
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(lb.type)
    iv.add_incoming(lb, pre)
    phis = _phis(fl, types)
    for p, x in zip(phis, inits):
        p.add_incoming(x, pre)
    b.cbranch(b.icmp_signed("<", iv, ub), body, exit_)
    b.position_at_end(body)
    block = op.body.blocks.first
    fl.set(block.args[0], iv)
    for v, x in zip(block.args[1:], unflatten(fl, [a.type for a in block.args[1:]], list(phis))):
        fl.set(v, x)
    yielded = flatten(lower_region_body(fl, block))
    nxt = b.add(iv, step)
    latch = b.block
    iv.add_incoming(nxt, latch)
    for p, x in zip(phis, yielded):
        p.add_incoming(x, latch)
    _mark_back_edge(fl, op, b.branch(header))
    b.position_at_end(exit_)
    for v, x in zip(op.results, unflatten(fl, [r.type for r in op.results], list(phis))):
        fl.set(v, x)


@lowers("scf.if")
def _if(fl: FunctionLowering, op) -> None:
    b = fl.builder
    cond = fl.get(op.cond)
    then_bb = fl.fn.append_basic_block("if.then")
    else_bb = fl.fn.append_basic_block("if.else")
    merge = fl.fn.append_basic_block("if.end")
    b.cbranch(cond, then_bb, else_bb)
    incoming = []
    for region, bb in ((op.true_region, then_bb), (op.false_region, else_bb)):
        b.position_at_end(bb)
        vals = flatten(lower_region_body(fl, region.blocks.first)) if region.blocks else []
        incoming.append((vals, b.block))
        b.branch(merge)
    b.position_at_end(merge)
    if op.results:
        types = flat_types(fl, [r.type for r in op.results])
        phis = _phis(fl, types)
        for vals, bb in incoming:
            for p, x in zip(phis, vals):
                p.add_incoming(x, bb)
        for v, x in zip(op.results, unflatten(fl, [r.type for r in op.results], list(phis))):
            fl.set(v, x)


@lowers("scf.while")
def _while(fl: FunctionLowering, op) -> None:
    b = fl.builder
    inits = flatten([fl.get(v) for v in op.arguments])
    before_blk = op.before_region.blocks.first
    after_blk = op.after_region.blocks.first
    pre = b.block
    before = fl.fn.append_basic_block("while.before")
    after = fl.fn.append_basic_block("while.after")
    exit_ = fl.fn.append_basic_block("while.exit")
    b.branch(before)
    b.position_at_end(before)
    phis = _phis(fl, flat_types(fl, [a.type for a in before_blk.args]))
    for p, x in zip(phis, inits):
        p.add_incoming(x, pre)
    for v, x in zip(before_blk.args, unflatten(fl, [a.type for a in before_blk.args], list(phis))):
        fl.set(v, x)
    cond_vals = lower_region_body(fl, before_blk)
    cond, passed = cond_vals[0], cond_vals[1:]
    b.cbranch(cond, after, exit_)
    b.position_at_end(after)
    for v, x in zip(after_blk.args, passed):
        fl.set(v, x)
    yielded = flatten(lower_region_body(fl, after_blk))
    for p, x in zip(phis, yielded):
        p.add_incoming(x, b.block)
    _mark_back_edge(fl, op, b.branch(before))
    b.position_at_end(exit_)
    for v, x in zip(op.results, passed):
        fl.set(v, x)


@lowers("tt.return")
def _return(fl: FunctionLowering, op) -> None:
    b = fl.builder
    vals = flatten([fl.get(v) for v in op.operands])
    if not vals:
        b.ret_void()
    elif len(vals) == 1:
        b.ret(vals[0])
    else:
        agg = ir.Constant(fl.fn.function_type.return_type, ir.Undefined)
        for i, x in enumerate(vals):
            agg = b.insert_value(agg, x, i)
        b.ret(agg)


@lowers("tt.call")
def _call(fl: FunctionLowering, op) -> None:
    b = fl.builder
    name = op.callee.string_value()
    callee = fl.lowering.functions.get(name)
    if callee is None:
        raise LoweringError(f"call to unknown function {name}")
    args = flatten([fl.get(v) for v in op.operands])
    offset = op.attributes.get("allocation.offset")
    args.append(fl.shared_ptr(offset.value.data if offset is not None else 0))
    if OFFSET in op.attributes:  # the callee's part of this function's global scratch
        args.append(fl.global_scratch_ptr(scratch_offset(op)))
    res = b.call(callee, args)
    types = [r.type for r in op.results]
    n = len(flat_types(fl, types))
    flat = [res] if n == 1 else [b.extract_value(res, i) for i in range(n)]
    for v, x in zip(op.results, unflatten(fl, types, flat)):
        fl.set(v, x)


@lowers("ttg.global_scratch_alloc")
def _global_scratch_alloc(fl: FunctionLowering, op) -> None:
    fl.set(op.result, fl.global_scratch_ptr(scratch_offset(op)))


def is_tensor(v) -> bool:
    return isinstance(v.type, TensorType)
