"""Types of the ``ttg`` dialect: ``!ttg.memdesc<64x64xf16, #shared, #smem, mutable>`` (a view of a
shared-memory buffer: shape, element type, shared encoding, memory space, mutability) and
``!ttg.async.token`` (the result of asynchronous copies and commit groups)."""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer

from .encodings import SharedMemorySpaceAttr, ints
from .layouts import bit_width


@irdl_attr_definition
class MemDescType(ParametrizedAttribute, TypeAttribute):
    name = "ttg.memdesc"

    shape_: ArrayAttr
    element_type: Attribute
    encoding: Attribute
    memory_space: Attribute
    mutable: IntAttr

    def __init__(self, shape: Sequence[int], element_type: Attribute, encoding: Attribute,
                 memory_space: Attribute | None = None, mutable: bool = False):
        super().__init__(ints(shape), element_type, encoding, memory_space or SharedMemorySpaceAttr(),
                         IntAttr(int(mutable)))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(x.data for x in self.shape_.data)

    def get_shape(self) -> tuple[int, ...]:
        return self.shape

    @property
    def is_mutable(self) -> bool:
        return bool(self.mutable.data)

    def size_in_bytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n * max(bit_width(self.element_type), 8) // 8

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + "".join(f"{s}x" for s in self.shape))
        printer.print_attribute(self.element_type)
        printer.print_string(", ")
        printer.print_attribute(self.encoding)
        printer.print_string(", ")
        printer.print_attribute(self.memory_space)
        if self.is_mutable:
            printer.print_string(", mutable")
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser):
        parser.parse_punctuation("<")
        shape, elt = parser.parse_ranked_shape()
        parser.parse_punctuation(",")
        enc = parser.parse_attribute()
        parser.parse_punctuation(",")
        space = parser.parse_attribute()
        mutable = False
        if parser.parse_optional_punctuation(","):
            parser.parse_keyword("mutable")
            mutable = True
        parser.parse_punctuation(">")
        return (ints(shape), elt, enc, space, IntAttr(int(mutable)))


@irdl_attr_definition
class AsyncTokenType(ParametrizedAttribute, TypeAttribute):
    name = "ttg.async.token"

    def print_parameters(self, printer: Printer) -> None:
        pass

    @classmethod
    def parse_parameters(cls, parser: AttrParser):
        return ()
