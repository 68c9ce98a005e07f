"""Ops of MLIR's own dialects that Triton's TTIR uses, in Triton's spelling:
``gpu.barrier`` (``tl.debug_barrier``) and ``llvm.intr.assume`` (``tl.assume``).

Both have effects (a barrier orders memory; an assumption must stay where the program states it),
so no pass moves or removes them."""
from __future__ import annotations

from xdsl.dialects.builtin import IntAttr, IntegerType
from xdsl.ir import Dialect, ParametrizedAttribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_attr_definition, irdl_op_definition, operand_def, traits_def
from xdsl.parser import AttrParser
from xdsl.printer import Printer
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


@irdl_attr_definition
class LoopAnnotationAttr(ParametrizedAttribute):
    """``#llvm.loop_annotation<licm = <disable = true>>``, under the key ``llvm.loop_annotation`` of
    an ``scf.for`` or ``scf.while`` (``tl.range(..., disable_licm=True)``,
    ``tl.condition(c, disable_licm=True)``): nothing is hoisted out of that loop, neither by the
    ``licm`` pass nor by LLVM, which reads the ``!llvm.loop`` metadata the lowering puts on the
    loop's back edge.  LICM is the one loop property spelled here."""

    name = "llvm.loop_annotation"
    licm_disable: IntAttr

    def __init__(self, licm_disable: bool = True):
        super().__init__(IntAttr(int(bool(licm_disable))))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<licm = <disable = {'true' if self.licm_disable.data else 'false'}>>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[IntAttr]:
        parser.parse_punctuation("<")
        parser.parse_keyword("licm")
        parser.parse_punctuation("=")
        parser.parse_punctuation("<")
        parser.parse_keyword("disable")
        parser.parse_punctuation("=")
        disable = parser.parse_boolean()
        parser.parse_punctuation(">")
        parser.parse_punctuation(">")
        return (IntAttr(int(disable)),)


LOOP_ANNOTATION = "llvm.loop_annotation"  # the loop op's attribute key


def licm_disabled(op) -> bool:
    """Whether a loop op carries ``llvm.loop_annotation = #llvm.loop_annotation<licm = <disable = true>>``."""
    attr = op.attributes.get(LOOP_ANNOTATION)
    return isinstance(attr, LoopAnnotationAttr) and bool(attr.licm_disable.data)


GPU = Dialect("gpu", [BarrierOp])
LLVM = Dialect("llvm", [AssumeOp], [LoopAnnotationAttr])
