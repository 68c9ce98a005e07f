"""Types of the ``tt`` dialect: ``!tt.ptr<T, addrspace>``, and helpers over builtin tensor types."""
from __future__ import annotations

from xdsl.dialects.builtin import IntAttr, NoneAttr, TensorType
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer

GLOBAL_ADDRESS_SPACE = 1


@irdl_attr_definition
class PointerType(ParametrizedAttribute, TypeAttribute):
    """``!tt.ptr<f32>`` (global memory), ``!tt.ptr<f16, 3>``; a pointer to a tensor type is a block
    pointer (``!tt.ptr<tensor<64x64xf16>>``) made by ``tt.make_tensor_ptr``."""

    name = "tt.ptr"

    pointee_type: Attribute
    address_space: IntAttr

    def __init__(self, pointee_type: Attribute, address_space: int = GLOBAL_ADDRESS_SPACE):
        super().__init__(pointee_type, IntAttr(address_space))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.pointee_type)
        if self.address_space.data != GLOBAL_ADDRESS_SPACE:
            printer.print_string(f", {self.address_space.data}")
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[Attribute, IntAttr]:
        parser.parse_punctuation("<")
        pointee = parser.parse_type()
        space = GLOBAL_ADDRESS_SPACE
        if parser.parse_optional_punctuation(","):
            space = parser.parse_integer()
        parser.parse_punctuation(">")
        return (pointee, IntAttr(space))

    @property
    def is_block_pointer(self) -> bool:
        return isinstance(self.pointee_type, TensorType)


def element_type(t: Attribute) -> Attribute:
    """Scalar type of a scalar or of a tensor's elements."""
    return t.element_type if isinstance(t, TensorType) else t


def shape_of(t: Attribute) -> tuple[int, ...]:
    return t.get_shape() if isinstance(t, TensorType) else ()


def encoding_of(t: Attribute) -> Attribute | None:
    if isinstance(t, TensorType) and not isinstance(t.encoding, NoneAttr):
        return t.encoding
    return None


def with_element_type(t: Attribute, elt: Attribute) -> Attribute:
    """The type of the same shape (and layout encoding) as ``t`` with elements ``elt``."""
    if isinstance(t, TensorType):
        return TensorType(elt, t.get_shape(), t.encoding)
    return elt


def like(t: Attribute, shape: tuple[int, ...], elt: Attribute | None = None, encoding: Attribute | None = None):
    """A tensor type of ``shape`` taking the element type and encoding of ``t`` unless given."""
    elt = element_type(t) if elt is None else elt
    if not shape:
        return elt
    if encoding is None:
        encoding = t.encoding if isinstance(t, TensorType) else NoneAttr()
    return TensorType(elt, shape, encoding)
