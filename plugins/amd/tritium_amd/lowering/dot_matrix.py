"""Lowering of ``tt.dot`` over ``amd_mfma`` / ``amd_wmma`` to ``llvm.amdgcn.mfma.*`` /
``llvm.amdgcn.wmma.*``.

Registers are matched to instructions through the layouts alone (:func:`plan`): the accumulator's
registers come in groups of one instruction's (its register bases are listed first), and a group's
first register gives the tile's ``(m, n)`` origin; operand registers are found by their
coordinates ``(m, k)`` / ``(k, n)`` in the ``dot_op`` layouts.  A transposed accumulator
(``isTransposed``) swaps the two sources (:func:`swaps_sources`).  The same plan drives the numpy
model of the instructions in the tests."""
from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from tritium.conversion.target_info import intrinsic
from tritium.ttgir.ops import LocalLoadOp
from tritium.ttgir.passes.allocate_shared_memory import outermost_loop
from tritium.ttgir.linear_layout import LinearLayout

from ..passes.instructions import Instr

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, F32 = ir.HalfType(), ir.FloatType()


@dataclass(frozen=True)
class Step:
    """One instruction: accumulator registers (in the instruction's register order), and for each
    K step the registers of A and of B (``k_width`` each, in K order)."""

    acc: tuple[int, ...]
    k_steps: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]


def _index(ll: LinearLayout) -> dict[tuple[int, ...], int]:
    out: dict[tuple[int, ...], int] = {}
    for r, off in enumerate(ll.reg_offsets()):
        out.setdefault(tuple(int(x) for x in off), r)
    return out


def plan(c: LinearLayout, a: LinearLayout, b: LinearLayout, ins: Instr) -> list[Step]:
    """Which registers feed which instruction for ``D = A @ B + C`` with these layouts."""
    k_size = a.shape[1]
    c_off = c.reg_offsets()
    ai, bi = _index(a), _index(b)
    if c.num_registers % ins.acc_regs:
        raise ValueError(f"{c.num_registers} accumulator registers are not whole {ins.m}x{ins.n} tiles")
    steps = []
    for g in range(0, c.num_registers, ins.acc_regs):
        m0, n0 = (int(x) for x in c_off[g])
        ks = []
        for k0 in range(0, k_size, ins.k):
            ks.append((tuple(ai[(m0, k0 + e)] for e in range(ins.k_width)),
                       tuple(bi[(k0 + e, n0)] for e in range(ins.k_width))))
        steps.append(Step(tuple(range(g, g + ins.acc_regs)), tuple(ks)))
    return steps


def swaps_sources(enc) -> bool:
    """Whether a dot into ``enc`` gives its B operand to the instruction's A source and A to B:
    for ``amd_mfma`` with ``isTransposed``, whose tile is the instruction's result transposed."""
    return bool(getattr(enc, "is_transposed", False))


def _vector(b: ir.IRBuilder, values: list, ty: ir.Type) -> ir.Value:
    v = ir.Constant(ir.VectorType(ty, len(values)), ir.Undefined)
    for i, x in enumerate(values):
        v = b.insert_element(v, x, ir.Constant(I32, i))
    return v


def _operand(b: ir.IRBuilder, values: list, ins: Instr) -> ir.Value:
    if ins.a_type == "f16":
        return _vector(b, values, F16)
    if ins.a_type == "bf16":
        return _vector(b, [b.bitcast(x, I16) for x in values], I16)
    v = _vector(b, values, I8)                         # int8: packed into i32 / i64 words
    if ins.kind == "wmma":
        return b.bitcast(v, ir.VectorType(I32, len(values) // 4))
    return b.bitcast(v, ir.IntType(ins.pack))


def lower_matrix_dot(fl, op, ins: Instr) -> None:
    b = fl.builder
    la, lb, lc = fl.layout(op.a.type), fl.layout(op.b.type), fl.layout(op.c.type)
    a_regs, b_regs, c_regs = fl.get(op.a), fl.get(op.b), fl.get(op.c)
    acc_ty = F32 if ins.acc == "f32" else I32
    vty = ir.VectorType(acc_ty, ins.acc_regs)
    out = list(c_regs)
    zero = ir.Constant(I32, 0)
    # the transposed accumulator (isTransposed) is the instruction's result for D^T = B^T A^T:
    # the same registers, with the operands fed to the other source
    transposed = swaps_sources(op.c.type.encoding)
    steps = plan(lc.ll, la.ll, lb.ll, ins)
    accs = [_vector(b, [c_regs[r] for r in step.acc], acc_ty) for step in steps]
    prio = ins.kind == "mfma" and _pipelined(op)
    issued = 0
    # K outermost, tiles inside: consecutive instructions write different accumulators (no wait on
    # the previous one's result), and the first instructions need only the first K slice of the
    # operands, so the waits for the operands' LDS reads can be fine-grained
    for k in range(max(len(step.k_steps) for step in steps)):
        for t, step in enumerate(steps):
            ar, br = step.k_steps[k]
            x = _operand(b, [a_regs[r] for r in ar], ins)
            y = _operand(b, [b_regs[r] for r in br], ins)
            if transposed:
                x, y = y, x
            if ins.kind == "mfma":
                accs[t] = intrinsic(b, ins.intrinsic, vty, [x, y, accs[t], zero, zero, zero])
            elif ins.acc == "i32":
                signed = ir.Constant(I1, 1)   # tl.dot on int8 is signed
                accs[t] = intrinsic(b, ins.intrinsic, vty, [signed, x, signed, y, accs[t], ir.Constant(I1, 0)])
            else:
                accs[t] = intrinsic(b, ins.intrinsic, vty, [x, y, accs[t]])
            issued += 1
            if prio and issued == 1:
                _set_priority(b, 1)
    if prio:
        _set_priority(b, 0)
    for step, acc in zip(steps, accs):
        for i, r in enumerate(step.acc):
            out[r] = b.extract_element(acc, ir.Constant(I32, i))
    fl.set(op.results[0], out)


def _pipelined(op) -> bool:
    """Whether the dot is in a software-pipelined loop: in a loop's body, an operand read from the
    stream pipeliner's LDS buffer (``ttg.local_load``)."""
    if not any(isinstance(getattr(v, "owner", None), LocalLoadOp) for v in (op.a, op.b)):
        return False
    return outermost_loop(op) is not op


def _set_priority(b: ir.IRBuilder, level: int) -> None:
    """``s_setprio level``.  In a loop the MFMA block of a dot runs at priority 1 from its first
    instruction to its last, as Triton's AMD backend schedules a pipelined matmul: the wavefront
    issuing MFMAs is preferred while the others issue memory operations.  LLVM's AMDGPU scheduler
    also treats ``s_setprio`` as a region boundary, so the block stays whole: the LDS stores of
    the next stage (and the wait for their global loads) cannot be hoisted in among the MFMAs, and
    the loads issued before the block have all of it to arrive."""
    intrinsic(b, "llvm.amdgcn.s.setprio", ir.VoidType(), [ir.Constant(I16, level)])
