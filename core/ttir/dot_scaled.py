"""``tt.dot_scaled``: the matrix product of two microscaled (OCP MX) operands.

    %d = tt.dot_scaled %a scale %as, %b scale %bs, %c lhs = e2m1 rhs = e4m3 {fastMath = false}
           : tensor<128x32xi8>, tensor<128x2xi8> * tensor<64x64xf8E4M3FN>, tensor<64x2xi8> -> tensor<128x64xf32>

``d = (a * 2^(as - 127)) @ (b * 2^(bs - 127)) + c`` where each ``i8`` scale (an e8m0 exponent, 0xFF
is NaN) covers 32 consecutive elements along K: ``as`` is ``[M, K/32]`` and ``bs`` is ``[N, K/32]``
(both indexed by their operand's non-K dimension first, as in Triton).  Either scale may be
absent (the operand is used as it is).  ``e2m1`` operands hold two values per ``i8``, the first in
the low nibble (bits 0-3), packed along K (``lhs_k_pack``/``rhs_k_pack`` false:
along M / N instead); fp8 operands are ``f8E4M3FN``/``f8E5M2`` (or their ``i8`` bits), ``bf16``/``fp16``
their own types.
``fastMath`` lets a lowering skip the NaN of scale 0xFF.
"""
from __future__ import annotations

from xdsl.dialects.builtin import (BFloat16Type, BoolAttr, Float8E4M3FNType, Float8E5M2Type, Float16Type,
                                   IntegerAttr, IntegerType, TensorType)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (AttrSizedOperandSegments, IRDLOperation, irdl_op_definition, operand_def,
                       opt_operand_def, prop_def, result_def, traits_def)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .attrs import SCALE_DOT_ELEM_TYPE

#: elements per e8m0 scale along K (the MX block size)
MX_BLOCK = 32

#: format -> the IR element types its operand may have
_STORAGE = {"e2m1": (IntegerType,), "e4m3": (Float8E4M3FNType, IntegerType), "e5m2": (Float8E5M2Type, IntegerType),
            "bf16": (BFloat16Type,), "fp16": (Float16Type,)}
FORMATS = tuple(_STORAGE)


def _bool(v: bool) -> BoolAttr:
    return BoolAttr(v, IntegerType(1))


def unpacked_shape(shape, fmt: str, k_pack: bool, k_axis: int) -> tuple[int, ...]:
    """The logical shape of an operand stored as ``shape`` (``e2m1`` doubles its packed axis)."""
    shape = list(shape)
    if fmt == "e2m1":
        axis = k_axis if k_pack else (len(shape) - 2 if k_axis == len(shape) - 1 else len(shape) - 1)
        shape[axis] *= 2
    return tuple(shape)


@irdl_op_definition
class DotScaledOp(IRDLOperation):
    name = "tt.dot_scaled"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = operand_def(TensorType)
    a_scale = opt_operand_def(TensorType)
    b_scale = opt_operand_def(TensorType)
    a_elem_type = prop_def(IntegerAttr)
    b_elem_type = prop_def(IntegerAttr)
    fastMath = prop_def(BoolAttr)
    lhs_k_pack = prop_def(BoolAttr)
    rhs_k_pack = prop_def(BoolAttr)
    d = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, a: SSAValue, a_scale: SSAValue | None, a_format: str, b: SSAValue, b_scale: SSAValue | None,
                 b_format: str, c: SSAValue, fast_math: bool = False, lhs_k_pack: bool = True,
                 rhs_k_pack: bool = True):
        c = SSAValue.get(c)
        super().__init__(
            operands=[a, b, c, [a_scale] if a_scale is not None else [], [b_scale] if b_scale is not None else []],
            result_types=[c.type],
            properties={"a_elem_type": SCALE_DOT_ELEM_TYPE.attr(a_format),
                        "b_elem_type": SCALE_DOT_ELEM_TYPE.attr(b_format),
                        "fastMath": _bool(fast_math), "lhs_k_pack": _bool(lhs_k_pack), "rhs_k_pack": _bool(rhs_k_pack)})

    # -- readable accessors ------------------------------------------------------------------------
    @property
    def a_format(self) -> str:
        return SCALE_DOT_ELEM_TYPE.keyword(self.a_elem_type)

    @property
    def b_format(self) -> str:
        return SCALE_DOT_ELEM_TYPE.keyword(self.b_elem_type)

    @property
    def fast_math(self) -> bool:
        return bool(self.fastMath.value.data)

    @property
    def k_packs(self) -> tuple[bool, bool]:
        return bool(self.lhs_k_pack.value.data), bool(self.rhs_k_pack.value.data)

    def logical_shapes(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The unpacked ``[.., M, K]`` and ``[.., K, N]`` shapes of the two operands."""
        ra = len(self.a.type.get_shape())
        lk, rk = self.k_packs
        return (unpacked_shape(self.a.type.get_shape(), self.a_format, lk, ra - 1),
                unpacked_shape(self.b.type.get_shape(), self.b_format, rk, ra - 2))

    def verify_(self) -> None:
        ta, tb, tc = self.a.type, self.b.type, self.c.type
        rank = len(ta.get_shape())
        if rank not in (2, 3) or len(tb.get_shape()) != rank or len(tc.get_shape()) != rank:
            raise VerifyException(f"tt.dot_scaled operands must all be 2-D or 3-D: {ta}, {tb}, {tc}")
        for fmt, t, which in ((self.a_format, ta, "lhs"), (self.b_format, tb, "rhs")):
            if fmt not in _STORAGE:
                raise VerifyException(f"tt.dot_scaled {which} format {fmt} is not supported")
            elt = t.element_type
            if not isinstance(elt, _STORAGE[fmt]) or (isinstance(elt, IntegerType) and elt.width.data != 8):
                raise VerifyException(f"tt.dot_scaled {which} format {fmt} cannot be stored as {elt}")
        lk, rk = self.k_packs
        if not lk and self.a_format != "e2m1" or not rk and self.b_format != "e2m1":
            raise VerifyException("tt.dot_scaled: only e2m1 operands can be packed along M or N")
        (*batch, m, k), (*batch_b, k2, n) = self.logical_shapes()
        if k != k2 or batch != batch_b or tuple(tc.get_shape()) != (*batch, m, n):
            raise VerifyException(f"tt.dot_scaled shapes do not agree: {ta} * {tb} -> {tc}")
        for scale, rows, which in ((self.a_scale, m, "lhs"), (self.b_scale, n, "rhs")):
            if scale is None:
                continue
            want = (*batch, rows, k // MX_BLOCK)
            elt = scale.type.element_type
            if k % MX_BLOCK or tuple(scale.type.get_shape()) != want or not (
                    isinstance(elt, IntegerType) and elt.width.data == 8):
                raise VerifyException(f"tt.dot_scaled {which} scale must be i8 of shape {list(want)}, got {scale.type}")

    # -- text ----------------------------------------------------------------------------------
    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.a)
        if self.a_scale is not None:
            printer.print_string(" scale ")
            printer.print_operand(self.a_scale)
        printer.print_string(", ")
        printer.print_operand(self.b)
        if self.b_scale is not None:
            printer.print_string(" scale ")
            printer.print_operand(self.b_scale)
        printer.print_string(", ")
        printer.print_operand(self.c)
        printer.print_string(f" lhs = {self.a_format} rhs = {self.b_format}")
        attrs = {"fastMath": self.fastMath, **self.attributes}
        lk, rk = self.k_packs
        if not lk:
            attrs["lhs_k_pack"] = self.lhs_k_pack
        if not rk:
            attrs["rhs_k_pack"] = self.rhs_k_pack
        printer.print_op_attributes(attrs)
        printer.print_string(" : ")
        printer.print_attribute(self.a.type)
        if self.a_scale is not None:
            printer.print_string(", ")
            printer.print_attribute(self.a_scale.type)
        printer.print_string(" * ")
        printer.print_attribute(self.b.type)
        if self.b_scale is not None:
            printer.print_string(", ")
            printer.print_attribute(self.b_scale.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.d.type)

    @classmethod
    def parse(cls, parser: Parser):
        a = parser.parse_unresolved_operand()
        a_s = parser.parse_unresolved_operand() if parser.parse_optional_keyword("scale") else None
        parser.parse_punctuation(",")
        b = parser.parse_unresolved_operand()
        b_s = parser.parse_unresolved_operand() if parser.parse_optional_keyword("scale") else None
        parser.parse_punctuation(",")
        c = parser.parse_unresolved_operand()
        formats = []
        for side in ("lhs", "rhs"):
            parser.parse_keyword(side)
            parser.parse_punctuation("=")
            formats.append(parser.parse_identifier())
        attrs = parser.parse_optional_attr_dict()
        flags = {k: bool(attrs.pop(k).value.data) if k in attrs else default
                 for k, default in (("fastMath", False), ("lhs_k_pack", True), ("rhs_k_pack", True))}
        parser.parse_punctuation(":")
        types = [parser.parse_type()]
        if a_s is not None:
            parser.parse_punctuation(",")
            types.append(parser.parse_type())
        parser.parse_punctuation("*")
        types.append(parser.parse_type())
        if b_s is not None:
            parser.parse_punctuation(",")
            types.append(parser.parse_type())
        parser.parse_punctuation("->")
        td = parser.parse_type()
        it = iter(types)
        va = parser.resolve_operand(a, next(it))
        vas = parser.resolve_operand(a_s, next(it)) if a_s is not None else None
        vb = parser.resolve_operand(b, next(it))
        vbs = parser.resolve_operand(b_s, next(it)) if b_s is not None else None
        op = cls(va, vas, formats[0], vb, vbs, formats[1], parser.resolve_operand(c, td),
                 flags["fastMath"], flags["lhs_k_pack"], flags["rhs_k_pack"])
        op.attributes.update(attrs)
        return op


__all__ = ["DotScaledOp", "FORMATS", "MX_BLOCK", "unpacked_shape"]
