"""``tt.dot`` with fused multiply-adds on the CUDA/vector cores (tensor cores are a later step).

Operands are in ``dot_op`` layouts of the accumulator's blocked layout: a thread holds whole rows of
A and columns of B along K for the output elements it owns, so each output register is a chain of
``K`` multiply-adds in registers.  fp16/bf16/fp8 operands are widened to the accumulator type
(fp32 in practice); fp32 runs in IEEE fp32 whatever ``input_precision`` says (tf32 requests are
computed more precisely than tf32); int8 multiplies in int32."""
from __future__ import annotations

import llvmlite.ir as ir

from ..target_info import intrinsic
from .casts import convert_float
from .lowering import FunctionLowering, lowers
from .types import is_float


def _widen(fl: FunctionLowering, v: ir.Value, src_t, acc_t, acc_ty: ir.Type, signed: bool = True) -> ir.Value:
    b = fl.builder
    if v.type == acc_ty:
        return v
    if is_float(acc_ty):
        if isinstance(v.type, ir.IntType) and not type(src_t.element_type).__name__.startswith("Float8"):
            return b.sitofp(v, acc_ty)
        return convert_float(b, v, src_t, acc_t, v.type, acc_ty, target=fl.target)
    return b.sext(v, acc_ty) if v.type.width < acc_ty.width else b.trunc(v, acc_ty)


def _movable_loads(block: ir.Block) -> set[int]:
    """Ids of the loads in ``block`` that may move to its end: those after the block's last
    instruction that writes memory, waits or has other effects (a store, a call other than a
    pure intrinsic, a fence, an atomic), so moving them down crosses no write and no barrier."""
    movable: set[int] = set()
    for ins in block.instructions:
        if isinstance(ins, ir.LoadInstr):
            movable.add(id(ins))
        elif isinstance(ins, (ir.StoreInstr, ir.Fence, ir.AtomicRMW, ir.CmpXchg)) or \
                (isinstance(ins, ir.CallInstr) and not getattr(ins.callee, "name", "").startswith("llvm.fmuladd")):
            movable.clear()
    return movable


def _sink(block: ir.Block, value, movable: set[int]) -> None:
    """Move ``value``'s load (itself, or the vector load an ``extractelement`` reads, with all the
    extracts of that vector) to the end of ``block``, where the next multiply-add is emitted."""
    load = value.operands[0] if isinstance(value, ir.instructions.ExtractElement) else value
    if id(load) not in movable:
        return
    movable.discard(id(load))
    moved = [load] + [ins for ins in block.instructions
                      if isinstance(ins, ir.instructions.ExtractElement) and ins.operands[0] is load]
    for ins in moved:
        block.instructions.remove(ins)
    block.instructions.extend(moved)


@lowers("tt.dot")
def _dot(fl: FunctionLowering, op) -> None:
    b = fl.builder
    a_t, b_t, c_t = op.a.type, op.b.type, op.c.type
    a_regs, b_regs, c_regs = fl.get(op.a), fl.get(op.b), fl.get(op.c)
    la, lb, lc = fl.layout(a_t), fl.layout(b_t), fl.layout(c_t)
    rank = len(c_t.get_shape())
    k_dim = a_t.get_shape()[-1]
    acc_ty = fl.ty(c_t)
    fma_name = f"llvm.fmuladd.{acc_ty.intrinsic_name}" if is_float(acc_ty) else None
    a_cache: dict[int, ir.Value] = {}
    b_cache: dict[int, ir.Value] = {}
    # the operands' shared-memory reads (a ``ttg.local_load`` just before) move down to their
    # first multiply-add, so that a value is loaded when its step comes rather than all at the
    # top: the assembler then keeps one step's operands live, not the whole tiles (a 128x64x16
    # fp32 dot on 8 warps: 157 registers with every read first, Triton's schedule 94)
    movable = _movable_loads(b.block)

    def operand(regs, cache, info, t, coord):
        r = info.reg_index[coord]
        if r not in cache:
            _sink(b.block, regs[r], movable)
            cache[r] = _widen(fl, regs[r], t, c_t, acc_ty)
        return cache[r]

    # K outermost, as Triton orders it: each step reads one column of A and one row of B, which
    # are dead after it, so only the accumulators live across the dot.  (K innermost kept every
    # operand value live until its last output: a 64x64x32 fp32 dot spilled.)  Every accumulator
    # still adds its products in increasing k, so the results are the same bits either way.
    offs = [tuple(int(x) for x in off) for off in lc.reg_offsets]
    out = list(c_regs[:len(offs)])
    for k in range(k_dim):
        for r, off in enumerate(offs):
            batch, m, n = off[:-2], off[-2], off[-1]
            x = operand(a_regs, a_cache, la, a_t, batch + (m, k))
            y = operand(b_regs, b_cache, lb, b_t, batch + (k, n))
            if fma_name:
                out[r] = intrinsic(b, fma_name, acc_ty, [x, y, out[r]])
            else:
                out[r] = b.add(out[r], b.mul(x, y))
    fl.set(op.results[0], out)
    assert rank >= 2
