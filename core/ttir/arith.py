"""The ``arith`` and ``math`` dialects as TTIR uses them: every op accepts tensors (with layout
encodings) as well as scalars.

xDSL's own comparison, select and cast ops only type-check scalars (``arith.cmpi`` on tensors
returns a scalar ``i1``), so those are defined here with MLIR's names and syntax; the binary
ops whose xDSL definitions already accept tensors are reused as they are.
"""
from __future__ import annotations

from typing import ClassVar

from xdsl.dialects import arith as xarith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import IntegerAttr, IntegerType, TensorType
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (AnyAttr, IRDLOperation, VarConstraint, irdl_op_definition, operand_def,
                       prop_def, result_def, traits_def)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .attrs import CMPF_PREDICATES, CMPI_PREDICATES
from .types import element_type, shape_of, with_element_type

I1 = IntegerType(1)


def bool_like(t: Attribute) -> Attribute:
    """``i1`` with the shape and encoding of ``t``."""
    return with_element_type(t, I1)


class _Compare(IRDLOperation):
    PREDICATES: ClassVar[list[str]] = []
    T: ClassVar = VarConstraint("T", AnyAttr())
    predicate = prop_def(IntegerAttr)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, predicate: str | int):
        lhs = SSAValue.get(lhs)
        code = self.PREDICATES.index(predicate) if isinstance(predicate, str) else predicate
        super().__init__(operands=[lhs, rhs], result_types=[bool_like(lhs.type)],
                         properties={"predicate": IntegerAttr(code, 64)})

    @property
    def predicate_name(self) -> str:
        return self.PREDICATES[self.predicate.value.data]

    def verify_(self) -> None:
        if self.result.type != bool_like(self.lhs.type):
            raise VerifyException(f"{self.name} result must be {bool_like(self.lhs.type)}, got {self.result.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.predicate_name}, ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)

    @classmethod
    def parse(cls, parser: Parser):
        pred = parser.parse_identifier()
        if pred not in cls.PREDICATES:
            parser.raise_error(f"unknown predicate {pred!r} for {cls.name}")
        parser.parse_punctuation(",")
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        b = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls(parser.resolve_operand(a, t), parser.resolve_operand(b, t), pred)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class CmpIOp(_Compare):
    name = "arith.cmpi"
    PREDICATES: ClassVar[list[str]] = CMPI_PREDICATES


@irdl_op_definition
class CmpFOp(_Compare):
    name = "arith.cmpf"
    PREDICATES: ClassVar[list[str]] = CMPF_PREDICATES


@irdl_op_definition
class SelectOp(IRDLOperation):
    """``arith.select %c, %a, %b : tensor<4xi1>, tensor<4xf32>`` (``: f32`` for a scalar ``i1``)."""

    name = "arith.select"
    T: ClassVar = VarConstraint("T", AnyAttr())
    cond = operand_def()
    true_value = operand_def(T)
    false_value = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())

    def __init__(self, cond, a, b):
        a = SSAValue.get(a)
        super().__init__(operands=[cond, a, b], result_types=[a.type])

    def verify_(self) -> None:
        ct = self.cond.type
        if element_type(ct) != I1:
            raise VerifyException(f"arith.select condition must be i1 or a tensor of i1, got {ct}")
        if isinstance(ct, TensorType) and shape_of(ct) != shape_of(self.result.type):
            raise VerifyException("arith.select condition and value shapes differ")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.cond, self.true_value, self.false_value], printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        if isinstance(self.cond.type, TensorType):
            printer.print_attribute(self.cond.type)
            printer.print_string(", ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        c = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        b = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        ct = I1
        if parser.parse_optional_punctuation(","):
            ct, t = t, parser.parse_type()
        op = cls(parser.resolve_operand(c, ct), parser.resolve_operand(a, t), parser.resolve_operand(b, t))
        op.attributes.update(attrs)
        return op


class _Cast(IRDLOperation):
    """``arith.extf %x : tensor<4xf16> to tensor<4xf32>``."""

    input = operand_def()
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, x: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[x], result_types=[result_type])

    def verify_(self) -> None:
        if shape_of(self.input.type) != shape_of(self.result.type):
            raise VerifyException(f"{self.name}: operand and result shapes differ")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        printer.print_string(" to ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        x = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src = parser.parse_type()
        parser.parse_keyword("to")
        dst = parser.parse_type()
        op = cls(parser.resolve_operand(x, src), dst)
        op.attributes.update(attrs)
        return op


def _cast(opname: str) -> type[_Cast]:
    cls = type(opname.split(".")[1].capitalize() + "Op", (_Cast,), {"name": opname})
    return irdl_op_definition(cls)


ExtSIOp = _cast("arith.extsi")
ExtUIOp = _cast("arith.extui")
TruncIOp = _cast("arith.trunci")
ExtFOp = _cast("arith.extf")
TruncFOp = _cast("arith.truncf")
SIToFPOp = _cast("arith.sitofp")
UIToFPOp = _cast("arith.uitofp")
FPToSIOp = _cast("arith.fptosi")
FPToUIOp = _cast("arith.fptoui")
BitcastOp = _cast("arith.bitcast")
IndexCastOp = _cast("arith.index_cast")


class _Binary(IRDLOperation):
    T: ClassVar = VarConstraint("T", AnyAttr())
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"

    def __init__(self, lhs, rhs):
        lhs = SSAValue.get(lhs)
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])


@irdl_op_definition
class RemFOp(_Binary):
    name = "arith.remf"


# Binary ops whose xDSL definitions accept tensors of any encoding.
AddIOp, SubIOp, MulIOp = xarith.AddiOp, xarith.SubiOp, xarith.MuliOp
DivSIOp, DivUIOp, RemSIOp, RemUIOp = xarith.DivSIOp, xarith.DivUIOp, xarith.RemSIOp, xarith.RemUIOp
AndIOp, OrIOp, XOrIOp = xarith.AndIOp, xarith.OrIOp, xarith.XOrIOp
ShLIOp, ShRSIOp, ShRUIOp = xarith.ShLIOp, xarith.ShRSIOp, xarith.ShRUIOp
MaxSIOp, MinSIOp, MaxUIOp, MinUIOp = xarith.MaxSIOp, xarith.MinSIOp, xarith.MaxUIOp, xarith.MinUIOp
AddFOp, SubFOp, MulFOp, DivFOp = xarith.AddfOp, xarith.SubfOp, xarith.MulfOp, xarith.DivfOp
NegFOp = xarith.NegfOp
MaximumFOp, MinimumFOp, MaxNumFOp, MinNumFOp = (xarith.MaximumfOp, xarith.MinimumfOp,
                                                 xarith.MaxnumfOp, xarith.MinnumfOp)
ConstantOp = xarith.ConstantOp

ARITH_OPS = [
    ConstantOp, AddIOp, SubIOp, MulIOp, DivSIOp, DivUIOp, RemSIOp, RemUIOp, AndIOp, OrIOp, XOrIOp,
    ShLIOp, ShRSIOp, ShRUIOp, MaxSIOp, MinSIOp, MaxUIOp, MinUIOp, AddFOp, SubFOp, MulFOp, DivFOp,
    RemFOp, NegFOp, MaximumFOp, MinimumFOp, MaxNumFOp, MinNumFOp, CmpIOp, CmpFOp, SelectOp,
    ExtSIOp, ExtUIOp, TruncIOp, ExtFOp, TruncFOp, SIToFPOp, UIToFPOp, FPToSIOp, FPToUIOp,
    BitcastOp, IndexCastOp,
]
Arith = Dialect("arith", ARITH_OPS, list(xarith.Arith.attributes))

MATH_OPS = [
    xmath.ExpOp, xmath.Exp2Op, xmath.LogOp, xmath.Log2Op, xmath.SqrtOp, xmath.RsqrtOp, xmath.SinOp,
    xmath.CosOp, xmath.AbsFOp, xmath.AbsIOp, xmath.FloorOp, xmath.CeilOp, xmath.ErfOp, xmath.FmaOp,
    xmath.TanhOp, xmath.Log1pOp, xmath.ExpM1Op, xmath.PowFOp, xmath.RoundEvenOp, xmath.RoundOp,
    xmath.TanOp, xmath.AtanOp, xmath.Atan2Op, xmath.CountLeadingZerosOp, xmath.CtPopOp,
]
Math = Dialect("math", MATH_OPS, list(xmath.Math.attributes))
