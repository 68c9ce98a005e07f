"""Fixes for the pinned xDSL (0.74) that TTIR text depends on.

Imported by ``dialect`` before any parsing happens.  Each fix is checked against the version it
was written for, so a new pin fails loudly instead of silently re-patching.
"""
from __future__ import annotations

import struct

import xdsl
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type
from xdsl.parser.attribute_parser import AttrParser

_PINNED = "0.74.0"


def _hex_float(text: str, ty) -> float | None:
    """MLIR writes non-finite float elements (``dense<0xFF800000>``) as their bit pattern; xDSL's
    dense-literal parser reads those as integers.  Reinterpret the bits for the element type."""
    neg = text.startswith("-")
    t = text[1:] if neg else text
    if not t[:2].lower() == "0x":
        return None
    bits = int(t, 16)
    if isinstance(ty, Float32Type):
        v = struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]
    elif isinstance(ty, Float64Type):
        v = struct.unpack("<d", struct.pack("<Q", bits & 0xFFFFFFFFFFFFFFFF))[0]
    elif isinstance(ty, Float16Type):
        v = struct.unpack("<e", struct.pack("<H", bits & 0xFFFF))[0]
    elif isinstance(ty, BFloat16Type):
        v = struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]
    else:
        return None
    return -v if neg else v


def _while_print(self, printer) -> None:
    """``scf.while``'s printer calls ``print_operation_type``, which also prints the location when
    locations are on, putting ``loc(...)`` before the regions where no parser accepts it."""
    printer.print_string(" (")
    printer.print_list(zip(self.before_region.block.args, self.arguments, strict=True),
                       lambda pair: self._print_pair(printer, pair))
    printer.print_string(") : ")
    printer.print_function_type(self.operand_types, self.result_types)
    printer.print_string(" ")
    printer.print_region(self.before_region, print_entry_block_args=False)
    printer.print_string(" do ")
    printer.print_region(self.after_region)
    if self.attributes:
        printer.print_op_attributes(self.attributes, print_keyword=True)


def _install() -> None:
    version = str(xdsl.__version__)
    if not version.startswith(_PINNED):
        raise ImportError(f"tritium needs xdsl=={_PINNED}, found {version}")
    elem = AttrParser._TensorLiteralElement
    if getattr(elem.to_type, "_tritium_fixed", False):
        return
    original = elem.to_type

    def to_type(self, parser, type):
        v = _hex_float(self.span.text, type)
        return v if v is not None else original(self, parser, type)

    to_type._tritium_fixed = True
    elem.to_type = to_type
    from xdsl.dialects.scf import WhileOp
    WhileOp.print = _while_print


_install()
