"""``longest-programs-first``: where a kernel's work grows with ``program_id(0)``, its programs are
numbered from the other end, so the longest are dispatched first.

A GPU starts a grid's blocks in order of their index.  In causal attention program ``m`` runs
``m + 1`` blocks of keys (its loop ``for start_n in range(0, start_m * BLOCK_M, BLOCK_N)``): the
longest programs start last and run alone at the end of the grid while the other SMs idle.
Numbering the programs backwards (``program_id(0)`` read as ``num_programs(0) - 1 - id``) starts
them first (longest-processing-time-first scheduling, as FlashAttention-3 orders its causal
blocks).  Which program computes which tile is unchanged; only the order they start in moves.

Applied only where that order cannot be observed: no atomics, no inline assembly, no printing or
assertions (their output order), one CTA a program, no called function reading the id.  The work
estimate: each outermost ``scf.for`` whose bounds are linear in ``program_id(0)`` (sums,
differences and constant multiples of it and of values that do not depend on it) contributes the
slope of its trip count; the programs are reversed when the slopes add up to more than zero.
Anything else that depends on the program id (a division, a loaded value) leaves the kernel as
it is."""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32
from xdsl.ir import BlockArgument, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from ...ttir import arith
from ...ttir.ops import GetNumProgramsOp, GetProgramIdOp
from ...ttir.passes._fold import const_value
from ..dialect import NUM_CTAS
from .allocate_shared_memory import outermost_loop

#: ops whose order across programs a user can observe
_ORDERED = {"tt.atomic_rmw", "tt.atomic_cas", "tt.elementwise_inline_asm", "tt.print", "tt.assert"}


def _slope(v: SSAValue, memo: dict) -> int | None:
    """``v``'s change per unit of ``program_id(0)`` if it is linear in it (0: independent), else None."""
    if v in memo:
        return memo[v]
    memo[v] = None  # a cycle (a loop-carried value) is not linear
    memo[v] = _compute(v, memo)
    return memo[v]


def _compute(v: SSAValue, memo: dict) -> int | None:
    if isinstance(v, BlockArgument):
        owner = v.owner.parent_op() if v.owner is not None else None
        return 0 if owner is None or owner.name == "tt.func" else None
    op = v.owner
    if isinstance(op, GetProgramIdOp):
        return 1 if op.axis.value.data == 0 else 0
    if isinstance(op, arith.ConstantOp) or isinstance(op, GetNumProgramsOp):
        return 0
    args = [_slope(x, memo) for x in op.operands]
    if None in args:
        return None
    if op.name in ("arith.addi", "arith.subi"):
        return args[0] + args[1] if op.name == "arith.addi" else args[0] - args[1]
    if op.name == "arith.muli":
        for a, b in ((0, 1), (1, 0)):
            k = const_value(op.operands[b])
            if k is not None:
                return args[a] * k
        return 0 if not any(args) else None
    return 0 if not any(args) and not op.regions else None


def work_slope(func) -> int | None:
    """The summed slope (in iterations per program) of the trip counts of ``func``'s outermost
    loops, or None where some loop's bounds depend on the program id in another way."""
    memo: dict = {}
    total = 0
    for loop in func.walk():
        if not isinstance(loop, scf.ForOp) or outermost_loop(loop) is not loop:
            continue
        lb, ub, step = (_slope(x, memo) for x in (loop.lb, loop.ub, loop.step))
        if lb is None or ub is None or step is None:
            return None
        if step != 0:
            return None  # a step that depends on the program id
        size = const_value(loop.step)
        if ub - lb and not size:
            return None
        total += (ub - lb) / size if ub - lb else 0
    return total


class LongestProgramsFirst:
    name = "longest-programs-first"

    def run(self, module: ModuleOp) -> None:
        ctas = module.attributes.get(NUM_CTAS)
        if ctas is not None and ctas.value.data != 1:
            return
        if any(op.name in _ORDERED for op in module.walk()):
            return
        # a function the kernel calls (``noinline``) that reads the id would see the other order
        for op in module.ops:
            if op.name == "tt.func" and not op.is_public and any(
                    isinstance(x, GetProgramIdOp) and x.axis.value.data == 0 for x in op.walk()):
                return
        for func in [op for op in module.ops if op.name == "tt.func" and op.is_public]:
            pids = [op for op in func.walk() if isinstance(op, GetProgramIdOp) and op.axis.value.data == 0]
            slope = work_slope(func) if pids else None
            if slope is None or slope <= 0:
                continue
            for pid in pids:
                _reverse(pid)


def _reverse(pid: GetProgramIdOp) -> None:
    """Every use of ``pid`` reads ``num_programs(0) - 1 - pid`` instead."""
    n = GetNumProgramsOp(0)
    one = arith.ConstantOp(IntegerAttr(1, i32))
    last = arith.SubIOp(n.result, one.result)
    rev = arith.SubIOp(last.result, pid.result)
    Rewriter.insert_op([n, one, last, rev], InsertPoint.after(pid))
    pid.result.replace_uses_with_if(rev.result, lambda use: use.operation is not rev)


__all__ = ["LongestProgramsFirst", "work_slope"]
