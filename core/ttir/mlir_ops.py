"""Ops of MLIR's own dialects that Triton's TTIR uses, in Triton's spelling:
``gpu.barrier`` (``tl.debug_barrier``) and ``llvm.intr.assume`` (``tl.assume``).

Both have effects (a barrier orders memory; an assumption must stay where the program states it),
so no pass moves or removes them."""
from __future__ import annotations

from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, traits_def
from xdsl.traits import MemoryWriteEffect


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """``gpu.barrier``: every thread of the program waits here, and memory accesses before it are
    visible to the program's threads after it."""

    name = "gpu.barrier"
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class AssumeOp(IRDLOperation):
    """``llvm.intr.assume %cond : i1``: the compiler may rely on ``%cond`` holding here."""

    name = "llvm.intr.assume"
    cond = operand_def(IntegerType(1))
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$cond attr-dict `:` type($cond)"

    def __init__(self, cond: SSAValue):
        super().__init__(operands=[cond])


GPU = Dialect("gpu", [BarrierOp])
LLVM = Dialect("llvm", [AssumeOp])
