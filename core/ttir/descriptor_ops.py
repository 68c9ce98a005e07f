"""Tensor-map ops of the ``tt`` dialect: ``tt.make_tensor_descriptor``, ``tt.descriptor_load`` /
``tt.descriptor_store``.

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
lowers these ops.

A backend that can also build such a map inside the kernel (NVIDIA sm_90: ``tensormap.replace``)
gets one for ``tl.make_tensor_descriptor`` where its ``tritium_device_tensor_descriptor`` hook
accepts the descriptor::

    %map = tt.make_tensor_descriptor %base, [%m, %n], [%sm, %c1] {block_shape = array<i32: 64, 64>,
           padding = "zero"} : !tt.ptr<f16> -> !tt.ptr<i8>

The shape is i32, the strides i64 (elements), both outermost first; the result is the map in
global memory, which the backend's own stages place and fill.  The op is pure: two that describe
the same tensor are one map (``cse``), and one whose operands a loop does not change leaves it
(``licm``)."""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, StringAttr, TensorType, i32, i64
from xdsl.ir import SSAValue
from xdsl.irdl import (AttrSizedOperandSegments, IRDLOperation, irdl_op_definition, operand_def, result_def,
                       traits_def, var_operand_def)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, Pure
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


def print_shape_and_strides(printer: Printer, shape, strides) -> None:
    """``, [%a, %b], [%c, %d]``: a tensor's shape and strides after an op's leading operands."""
    for group in (shape, strides):
        printer.print_string(", [")
        printer.print_list(list(group), printer.print_operand)
        printer.print_string("]")


def parse_shape_and_strides(parser: Parser) -> tuple[list, list]:
    """The unresolved operands :func:`print_shape_and_strides` printed."""
    groups = []
    for _ in range(2):
        parser.parse_punctuation(",")
        groups.append(parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand))
    return groups[0], groups[1]


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


@irdl_op_definition
class MakeTensorDescriptorOp(IRDLOperation):
    """A hardware descriptor (tensor map) of the tensor at ``base`` with ``shape`` (i32) and
    ``strides`` (i64, elements), moved in blocks of ``block_shape``: built in the kernel by the
    backend whose hook asked for it; the result points at it in global memory."""

    name = "tt.make_tensor_descriptor"
    base = operand_def()
    shape = var_operand_def(i32)
    strides = var_operand_def(i64)
    result = result_def()
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, base: SSAValue, shape: Sequence[SSAValue], strides: Sequence[SSAValue],
                 block_shape: Sequence[int], padding: str, result_type):
        super().__init__(operands=[base, list(shape), list(strides)], result_types=[result_type],
                         attributes={"block_shape": DenseArrayBase.from_list(i32, [int(b) for b in block_shape]),
                                     "padding": StringAttr(padding)})

    @property
    def block_shape(self) -> list[int]:
        return [int(v) for v in self.attributes["block_shape"].get_values()]

    @property
    def padding(self) -> str:
        return self.attributes["padding"].data

    def verify_(self) -> None:
        n = len(self.shape)
        if len(self.strides) != n or len(self.block_shape) != n:
            raise VerifyException(f"{self.name}: {n} dimensions, {len(self.strides)} strides and "
                                  f"{len(self.block_shape)} block dimensions")
        if self.padding not in ("zero", "nan"):
            raise VerifyException(f"{self.name}: padding must be \"zero\" or \"nan\", got {self.padding!r}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.base)
        print_shape_and_strides(printer, self.shape, self.strides)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.base.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        base = parser.parse_unresolved_operand()
        shape, strides = parse_shape_and_strides(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        bt = parser.parse_type()
        parser.parse_punctuation("->")
        rt = parser.parse_type()
        block = [int(v) for v in attrs.pop("block_shape").get_values()]
        padding = attrs.pop("padding").data
        op = cls(parser.resolve_operand(base, bt), [parser.resolve_operand(v, i32) for v in shape],
                 [parser.resolve_operand(v, i64) for v in strides], block, padding, rt)
        op.attributes.update(attrs)
        return op
