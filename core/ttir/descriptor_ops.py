"""Tensor-map accesses of the ``tt`` dialect: ``tt.descriptor_load`` / ``tt.descriptor_store``.

A backend whose hardware copies whole tiles between global and shared memory (NVIDIA's Tensor
Memory Accelerator) can be handed, for a host tensor descriptor, a hardware descriptor of its own
(a *tensor map*, built on the host by the backend's plugin).  The kernel then receives a pointer
to that map, and the descriptor's accesses become these two ops instead of block-pointer loads
and stores::

    %t = tt.descriptor_load %map[%i, %j] : !tt.ptr<i8> -> tensor<64x64xf16>
    tt.descriptor_store %map[%i, %j], %t : !tt.ptr<i8>, tensor<64x64xf16>

The indices are the tile's first element per dimension (i32, outermost first).  What the tensor
is (base, shape, strides, element type, out-of-bounds fill) lives in the map: elements outside the
tensor read as the map's fill and stores there are dropped.  Only the plugin that built the map
lowers these ops."""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType, i32
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def, traits_def, var_operand_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect
from xdsl.utils.exceptions import VerifyException


def _print_head(printer: Printer, op, desc, indices) -> None:
    printer.print_string(" ")
    printer.print_operand(desc)
    printer.print_string("[")
    printer.print_list(list(indices), printer.print_operand)
    printer.print_string("]")


def _parse_head(parser: Parser):
    desc = parser.parse_unresolved_operand()
    idx = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
    return desc, idx


def _check_rank(op, t) -> None:
    if not isinstance(t, TensorType) or len(t.get_shape()) != len(op.indices):
        raise VerifyException(f"{op.name}: {len(op.indices)} indices for a tile of type {t}")


@irdl_op_definition
class DescriptorLoadOp(IRDLOperation):
    name = "tt.descriptor_load"
    desc = operand_def()
    indices = var_operand_def()
    result = result_def(TensorType)
    traits = traits_def(MemoryReadEffect())

    def __init__(self, desc: SSAValue, indices: Sequence[SSAValue], result_type):
        super().__init__(operands=[desc, list(indices)], result_types=[result_type])

    def verify_(self) -> None:
        _check_rank(self, self.result.type)

    def print(self, printer: Printer) -> None:
        _print_head(printer, self, self.desc, self.indices)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.desc.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        desc, idx = _parse_head(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        dt = parser.parse_type()
        parser.parse_punctuation("->")
        rt = parser.parse_type()
        op = cls(parser.resolve_operand(desc, dt), [parser.resolve_operand(i, i32) for i in idx], rt)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class DescriptorStoreOp(IRDLOperation):
    name = "tt.descriptor_store"
    desc = operand_def()
    indices = var_operand_def()
    value = operand_def(TensorType)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, desc: SSAValue, indices: Sequence[SSAValue], value: SSAValue):
        super().__init__(operands=[desc, list(indices), value])

    def verify_(self) -> None:
        _check_rank(self, self.value.type)

    def print(self, printer: Printer) -> None:
        _print_head(printer, self, self.desc, self.indices)
        printer.print_string(", ")
        printer.print_operand(self.value)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.desc.type)
        printer.print_string(", ")
        printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser):
        desc, idx = _parse_head(parser)
        parser.parse_punctuation(",")
        val = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        dt = parser.parse_type()
        parser.parse_punctuation(",")
        vt = parser.parse_type()
        op = cls(parser.resolve_operand(desc, dt), [parser.resolve_operand(i, i32) for i in idx],
                 parser.resolve_operand(val, vt))
        op.attributes.update(attrs)
        return op
