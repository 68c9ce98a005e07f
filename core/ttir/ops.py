"""Ops of the ``tt`` dialect: functions and calls, program ids, tensor creation and shape ops,
pointer arithmetic, elementwise extras, dot, debugging.  Memory ops (load, store, atomics,
block pointers) are in ``memory_ops``; region ops (reduce, scan) in ``region_ops``.

Custom syntax follows Triton's TTIR so text from either parses in the other; enum properties
are ``i32`` attributes printed by keyword (see ``attrs``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (ArrayAttr, BoolAttr, DenseArrayBase, DictionaryAttr, FunctionType,
                                   IntegerAttr, IntegerType, StringAttr, SymbolRefAttr, TensorType,
                                   UnitAttr, i32)
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (AnyAttr, IRDLOperation, ParsePropInAttrDict, VarConstraint, irdl_op_definition,
                       opt_prop_def, operand_def, prop_def, region_def, result_def, traits_def,
                       var_operand_def, var_result_def)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (CallableOpInterface, HasParent, IsolatedFromAbove, IsTerminator, MemoryEffect,
                         MemoryWriteEffect, Pure, ReturnLike, SymbolOpInterface)
from xdsl.utils.exceptions import VerifyException

from .attrs import INPUT_PRECISION, PROGRAM_DIM, PROPAGATE_NAN, ROUNDING_MODE
from .types import PointerType, element_type, shape_of


def _unresolved_list(parser: Parser):
    """Operands separated by commas, stopping at the first comma followed by something else; returns
    ``(operands, trailing_comma)`` so the caller can go on with a ``, keyword = value`` clause."""
    names = [parser.parse_unresolved_operand()]
    while parser.parse_optional_punctuation(","):
        name = parser.parse_optional_unresolved_operand()
        if name is None:
            return names, True
        names.append(name)
    return names, False


class _FuncCallable(CallableOpInterface):
    @classmethod
    def get_callable_region(cls, op: Operation) -> Region:
        return op.body

    @classmethod
    def get_argument_types(cls, op: Operation) -> tuple[Attribute, ...]:
        return op.function_type.inputs.data

    @classmethod
    def get_result_types(cls, op: Operation) -> tuple[Attribute, ...]:
        return op.function_type.outputs.data


@irdl_op_definition
class FuncOp(IRDLOperation):
    """``tt.func public @k(%arg0: !tt.ptr<f32> {tt.divisibility = 16 : i32}) attributes {noinline = false} {...}``"""

    name = "tt.func"
    body = region_def()
    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    sym_visibility = opt_prop_def(StringAttr)
    arg_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    res_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface(), _FuncCallable())

    def __init__(self, name: str, inputs: Sequence[Attribute], outputs: Sequence[Attribute],
                 visibility: str | None = "public", region: Region | None = None,
                 arg_attrs: ArrayAttr | None = None, res_attrs: ArrayAttr | None = None):
        ft = FunctionType.from_lists(list(inputs), list(outputs))
        if region is None:
            region = Region(Block(arg_types=ft.inputs))
        super().__init__(regions=[region], properties={
            "sym_name": StringAttr(name), "function_type": ft,
            "sym_visibility": StringAttr(visibility) if visibility else None,
            "arg_attrs": arg_attrs, "res_attrs": res_attrs})

    @property
    def entry(self) -> Block:
        return self.body.blocks[0]

    @property
    def is_public(self) -> bool:
        """A kernel (public), not a function only other functions call (private)."""
        return self.sym_visibility is None or self.sym_visibility.data == "public"

    def set_result_types(self, outputs: Sequence[Attribute]) -> None:
        self.function_type = FunctionType.from_lists(list(self.function_type.inputs.data), list(outputs))

    def verify_(self) -> None:
        if self.body.blocks and tuple(self.entry.arg_types) != self.function_type.inputs.data:
            raise VerifyException("tt.func entry block arguments differ from the function type")

    def print(self, printer: Printer) -> None:
        if self.sym_visibility:
            printer.print_string(" " + self.sym_visibility.data)
        print_func_op_like(printer, self.sym_name, self.function_type, self.body, self.attributes,
                           arg_attrs=self.arg_attrs, res_attrs=self.res_attrs,
                           reserved_attr_names=("sym_name", "function_type", "sym_visibility", "arg_attrs"))

    @classmethod
    def parse(cls, parser: Parser) -> "FuncOp":
        vis = parser.parse_optional_visibility_keyword()
        name, ins, outs, region, extra, arg_attrs, res_attrs = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "function_type", "sym_visibility"))
        op = cls(name, ins, outs, vis.data if vis else None, region, arg_attrs, res_attrs)
        if extra is not None:
            op.attributes |= extra.data
        return op


@irdl_op_definition
class ReturnOp(IRDLOperation):
    name = "tt.return"
    srcs = var_operand_def()
    traits = traits_def(IsTerminator(), ReturnLike(), HasParent(FuncOp))
    assembly_format = "attr-dict ($srcs^ `:` type($srcs))?"

    def __init__(self, values: Sequence[SSAValue] = ()):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class CallOp(IRDLOperation):
    name = "tt.call"
    operands_ = var_operand_def()
    callee = prop_def(SymbolRefAttr)
    res = var_result_def()
    assembly_format = "$callee `(` $operands_ `)` attr-dict `:` functional-type($operands_, $res)"

    def __init__(self, callee: str, args: Sequence[SSAValue], result_types: Sequence[Attribute]):
        super().__init__(operands=[list(args)], result_types=[list(result_types)],
                         properties={"callee": SymbolRefAttr(callee)})


class _AxisOp(IRDLOperation):
    axis = prop_def(IntegerAttr)
    result = result_def(i32)
    traits = traits_def(Pure())

    def __init__(self, axis: int):
        super().__init__(result_types=[i32], properties={"axis": IntegerAttr(axis, i32)})

    def print(self, printer: Printer) -> None:
        printer.print_string(" " + PROGRAM_DIM.keyword(self.axis) + " : i32")

    @classmethod
    def parse(cls, parser: Parser):
        kw = parser.parse_identifier()
        parser.parse_punctuation(":")
        parser.parse_type()
        return cls(PROGRAM_DIM.by_kw[kw])


@irdl_op_definition
class GetProgramIdOp(_AxisOp):
    name = "tt.get_program_id"


@irdl_op_definition
class GetNumProgramsOp(_AxisOp):
    name = "tt.get_num_programs"


@irdl_op_definition
class MakeRangeOp(IRDLOperation):
    """``tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>``"""

    name = "tt.make_range"
    start = prop_def(IntegerAttr)
    end = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, start: int, end: int, result_type: Attribute | None = None):
        result_type = result_type or TensorType(i32, [end - start])
        super().__init__(result_types=[result_type],
                         properties={"start": IntegerAttr(start, i32), "end": IntegerAttr(end, i32)})

    def verify_(self) -> None:
        n = self.end.value.data - self.start.value.data
        if shape_of(self.result.type) != (n,):
            raise VerifyException(f"tt.make_range result must have {n} elements")


class _UnaryShape(IRDLOperation):
    """Ops printed as ``%x attr-dict : type($src) -> type($result)``."""

    src = operand_def()
    result = result_def()
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue | Operation, result_type: Attribute, **props: Attribute):
        super().__init__(operands=[src], result_types=[result_type], properties=props)


@irdl_op_definition
class SplatOp(_UnaryShape):
    name = "tt.splat"


@irdl_op_definition
class BroadcastOp(_UnaryShape):
    name = "tt.broadcast"

    def verify_(self) -> None:
        a, b = shape_of(self.src.type), shape_of(self.result.type)
        if len(a) != len(b) or any(x != y and x != 1 for x, y in zip(a, b)):
            raise VerifyException(f"tt.broadcast cannot broadcast {list(a)} to {list(b)}")


@irdl_op_definition
class ExpandDimsOp(_UnaryShape):
    name = "tt.expand_dims"
    axis = prop_def(IntegerAttr)


@irdl_op_definition
class ReshapeOp(_UnaryShape):
    """``tt.reshape %x allow_reorder : ...``; ``allow_reorder`` lets the backend permute elements
    (``tl.view``), the default keeps row-major order (``tl.reshape``)."""

    name = "tt.reshape"
    allow_reorder = opt_prop_def(UnitAttr)
    efficient_layout = opt_prop_def(UnitAttr)
    assembly_format = ("$src (`allow_reorder` $allow_reorder^)? (`efficient_layout` $efficient_layout^)? "
                       "attr-dict `:` type($src) `->` type($result)")


@irdl_op_definition
class TransOp(_UnaryShape):
    name = "tt.trans"
    order = prop_def(DenseArrayBase)


@irdl_op_definition
class BitcastOp(_UnaryShape):
    name = "tt.bitcast"


@irdl_op_definition
class IntToPtrOp(_UnaryShape):
    name = "tt.int_to_ptr"


@irdl_op_definition
class PtrToIntOp(_UnaryShape):
    name = "tt.ptr_to_int"


@irdl_op_definition
class SplitOp(IRDLOperation):
    """``tt.split %x : tensor<4x2xf32> -> tensor<4xf32>``: the last dimension must be 2."""

    name = "tt.split"
    T: ClassVar = VarConstraint("T", AnyAttr())
    src = operand_def()
    out_lhs = result_def(T)
    out_rhs = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($src) `->` type($out_lhs)"

    def __init__(self, src: SSAValue, result_type: Attribute):
        super().__init__(operands=[src], result_types=[result_type, result_type])


class _Combine2(IRDLOperation):
    """Two operands of one type making a result of another shape:
    ``%a, %b : type($lhs) -> type($result)``."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)"

    def __init__(self, a: SSAValue, b: SSAValue, result_type: Attribute):
        super().__init__(operands=[a, b], result_types=[result_type])


@irdl_op_definition
class JoinOp(_Combine2):
    """``tt.join %a, %b : tensor<4xf32> -> tensor<4x2xf32>``: stacks along a new minor dimension."""

    name = "tt.join"


@irdl_op_definition
class CatOp(_Combine2):
    """``tt.cat %a, %b : tensor<4xf32> -> tensor<8xf32>``: concatenation along dimension 0 where
    the order of elements in the result is unspecified unless the frontend fixes it."""

    name = "tt.cat"


@irdl_op_definition
class GatherOp(IRDLOperation):
    """``tt.gather %src[%indices] {axis = 0 : i32} : (tensor<..>, tensor<..xi32>) -> tensor<..>``:
    ``result[.., i, ..] = src[.., indices[.., i, ..], ..]`` along ``axis``.  The result has the
    indices' shape (and, in TTGIR, their layout) and the source's element type; off the axis the
    two operands have equal extents.  An index outside ``[0, src.shape[axis])`` gives an
    unspecified value (Tritium's backends read ``index mod src.shape[axis]``)."""

    name = "tt.gather"
    src = operand_def()
    indices = operand_def()
    result = result_def()
    axis = prop_def(IntegerAttr)
    efficient_layout = opt_prop_def(UnitAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src `[` $indices `]` attr-dict `:` functional-type(operands, results)"

    def __init__(self, src: SSAValue, indices: SSAValue, axis: int, result_type: Attribute):
        super().__init__(operands=[src, indices], result_types=[result_type],
                         properties={"axis": IntegerAttr(axis, i32)})

    def verify_(self) -> None:
        src_t, idx_t, res_t = self.src.type, self.indices.type, self.result.type
        if not all(isinstance(t, TensorType) for t in (src_t, idx_t, res_t)):
            raise VerifyException("tt.gather takes and returns tensors")
        src, idx, res = src_t.get_shape(), idx_t.get_shape(), res_t.get_shape()
        if tuple(idx) != tuple(res):
            raise VerifyException(f"tt.gather: the result's shape {list(res)} must be the indices' {list(idx)}")
        if src_t.element_type != res_t.element_type:
            raise VerifyException(f"tt.gather: the result's element type {res_t.element_type} must be "
                                  f"the source's {src_t.element_type}")
        if not isinstance(idx_t.element_type, IntegerType):
            raise VerifyException(f"tt.gather: indices must be integers, got {idx_t.element_type}")
        if len(src) != len(idx):
            raise VerifyException(f"tt.gather: source rank {len(src)} and indices rank {len(idx)} differ")
        axis = self.axis.value.data
        if not 0 <= axis < len(src):
            raise VerifyException(f"tt.gather: axis {axis} is out of range for rank {len(src)}")
        for d in range(len(src)):
            if d != axis and src[d] != idx[d]:
                raise VerifyException(f"tt.gather: indices dimension {d} ({idx[d]}) must equal the "
                                      f"source's ({src[d]}) off the gather axis")
        enc_i, enc_r = getattr(idx_t, "encoding", None), getattr(res_t, "encoding", None)
        if enc_i != enc_r:
            raise VerifyException("tt.gather: the result's layout must be the indices'")


@irdl_op_definition
class AddPtrOp(IRDLOperation):
    """``tt.addptr %p, %off : tensor<128x!tt.ptr<f32>>, tensor<128xi32>`` (offset in elements)."""

    name = "tt.addptr"
    T: ClassVar = VarConstraint("T", AnyAttr())
    ptr = operand_def(T)
    offset = operand_def()
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$ptr `,` $offset attr-dict `:` type($result) `,` type($offset)"

    def __init__(self, ptr: SSAValue, offset: SSAValue):
        ptr = SSAValue.get(ptr)
        super().__init__(operands=[ptr, offset], result_types=[ptr.type])

    def verify_(self) -> None:
        if not isinstance(element_type(self.ptr.type), PointerType):
            raise VerifyException(f"tt.addptr needs a pointer operand, got {self.ptr.type}")
        if shape_of(self.ptr.type) != shape_of(self.offset.type):
            raise VerifyException("tt.addptr pointer and offset shapes differ")


class _SameTypeBinary(IRDLOperation):
    """Elementwise ops printed as ``%x, %y : type``; operands and result share one type."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    x = operand_def(T)
    y = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$x `,` $y attr-dict `:` type($x)"

    def __init__(self, x: SSAValue, y: SSAValue):
        x = SSAValue.get(x)
        super().__init__(operands=[x, y], result_types=[x.type])


@irdl_op_definition
class MulhiUIOp(_SameTypeBinary):
    """The high half of the unsigned product."""

    name = "tt.mulhiui"


@irdl_op_definition
class PreciseDivFOp(_SameTypeBinary):
    """IEEE-rounded division (``tl.div_rn``), where ``arith.divf`` may be approximate."""

    name = "tt.precise_divf"


@irdl_op_definition
class PreciseSqrtOp(IRDLOperation):
    """IEEE-rounded square root (``tl.sqrt_rn``)."""

    name = "tt.precise_sqrt"
    T: ClassVar = VarConstraint("T", AnyAttr())
    x = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$x attr-dict `:` type($x)"

    def __init__(self, x: SSAValue):
        x = SSAValue.get(x)
        super().__init__(operands=[x], result_types=[x.type])


@irdl_op_definition
class ClampFOp(IRDLOperation):
    """``tt.clampf %x, %lo, %hi, propagateNan = none : tensor<4xf32>``"""

    name = "tt.clampf"
    T: ClassVar = VarConstraint("T", AnyAttr())
    x = operand_def(T)
    min = operand_def(T)
    max = operand_def(T)
    propagateNan = prop_def(IntegerAttr)
    result = result_def(T)
    traits = traits_def(Pure())

    def __init__(self, x: SSAValue, lo: SSAValue, hi: SSAValue, propagate_nan: str = "none"):
        x = SSAValue.get(x)
        super().__init__(operands=[x, lo, hi], result_types=[x.type],
                         properties={"propagateNan": PROPAGATE_NAN.attr(propagate_nan)})

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.x, self.min, self.max], printer.print_operand)
        printer.print_string(f", propagateNan = {PROPAGATE_NAN.keyword(self.propagateNan)}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.x.type)

    @classmethod
    def parse(cls, parser: Parser):
        (a, lo, hi), _ = _unresolved_list(parser)
        parser.parse_keyword("propagateNan")
        parser.parse_punctuation("=")
        kw = parser.parse_identifier()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls(*(parser.resolve_operand(v, t) for v in (a, lo, hi)), kw)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class FpToFpOp(IRDLOperation):
    """Float-to-float conversions involving fp8 (``tt.fp_to_fp %x, rounding = rtne : ...``)."""

    name = "tt.fp_to_fp"
    src = operand_def()
    result = result_def()
    rounding = opt_prop_def(IntegerAttr)
    traits = traits_def(Pure())

    def __init__(self, src: SSAValue, result_type: Attribute, rounding: str | None = None):
        super().__init__(operands=[src], result_types=[result_type],
                         properties={"rounding": ROUNDING_MODE.attr(rounding) if rounding else None})

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.src)
        if self.rounding is not None:
            printer.print_string(f", rounding = {ROUNDING_MODE.keyword(self.rounding)}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        x = parser.parse_unresolved_operand()
        rounding = None
        if parser.parse_optional_punctuation(","):
            parser.parse_keyword("rounding")
            parser.parse_punctuation("=")
            rounding = parser.parse_identifier()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src = parser.parse_type()
        parser.parse_punctuation("->")
        dst = parser.parse_type()
        op = cls(parser.resolve_operand(x, src), dst, rounding)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class DotOp(IRDLOperation):
    """``tt.dot %a, %b, %c, inputPrecision = tf32 : tensor<MxK> * tensor<KxN> -> tensor<MxN>``"""

    name = "tt.dot"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = operand_def(TensorType)
    inputPrecision = prop_def(IntegerAttr)
    maxNumImpreciseAcc = prop_def(IntegerAttr)
    d = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue, input_precision: str = "ieee",
                 max_num_imprecise_acc: int = 0):
        c = SSAValue.get(c)
        super().__init__(operands=[a, b, c], result_types=[c.type], properties={
            "inputPrecision": INPUT_PRECISION.attr(input_precision),
            "maxNumImpreciseAcc": IntegerAttr(max_num_imprecise_acc, i32)})

    @property
    def input_precision(self) -> str:
        return INPUT_PRECISION.keyword(self.inputPrecision)

    def verify_(self) -> None:
        (m, k), (k2, n) = shape_of(self.a.type)[-2:], shape_of(self.b.type)[-2:]
        if k != k2 or shape_of(self.d.type)[-2:] != (m, n):
            raise VerifyException(f"tt.dot shapes do not agree: {m}x{k} * {k2}x{n} -> {list(shape_of(self.d.type))}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.a, self.b, self.c], printer.print_operand)
        if self.input_precision != "ieee":
            printer.print_string(f", inputPrecision = {self.input_precision}")
        attrs = dict(self.attributes)
        if self.maxNumImpreciseAcc.value.data:
            attrs["maxNumImpreciseAcc"] = self.maxNumImpreciseAcc
        printer.print_op_attributes(attrs)
        printer.print_string(" : ")
        printer.print_attribute(self.a.type)
        printer.print_string(" * ")
        printer.print_attribute(self.b.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.d.type)

    @classmethod
    def parse(cls, parser: Parser):
        (a, b, c), more = _unresolved_list(parser)
        prec = "ieee"
        if more:
            parser.parse_keyword("inputPrecision")
            parser.parse_punctuation("=")
            prec = parser.parse_identifier()
        attrs = parser.parse_optional_attr_dict()
        imprecise = attrs.pop("maxNumImpreciseAcc", None)
        parser.parse_punctuation(":")
        ta = parser.parse_type()
        parser.parse_punctuation("*")
        tb = parser.parse_type()
        parser.parse_punctuation("->")
        td = parser.parse_type()
        op = cls(parser.resolve_operand(a, ta), parser.resolve_operand(b, tb), parser.resolve_operand(c, td),
                 prec, imprecise.value.data if imprecise else 0)
        op.attributes.update(attrs)
        return op


class PureWhenMarked(MemoryEffect):
    """The effects of an op whose ``pure`` property is the author's word (a library call, inline
    assembly): none where it is set, so CSE merges the op, DCE drops it unused and layout passes
    treat it as the elementwise op it is (as Triton does); unknown otherwise, so nothing moves it."""

    @classmethod
    def get_effects(cls, op: Operation):
        return frozenset() if op.pure.value.data else None


def is_pure(op: Operation) -> bool:
    """``op`` has no effects and may be recomputed or evaluated in another layout: the ``Pure``
    trait, or :class:`PureWhenMarked` with its ``pure`` property set."""
    return op.has_trait(Pure) or (op.has_trait(PureWhenMarked) and bool(op.pure.value.data))


@irdl_op_definition
class ExternElementwiseOp(IRDLOperation):
    name = "tt.extern_elementwise"
    srcs = var_operand_def()
    libname = prop_def(StringAttr)
    libpath = prop_def(StringAttr)
    symbol = prop_def(StringAttr)
    pure = prop_def(BoolAttr)
    result = result_def()
    traits = traits_def(PureWhenMarked())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "operands attr-dict `:` functional-type(operands, $result)"

    def __init__(self, args: Sequence[SSAValue], result_type: Attribute, symbol: str,
                 libname: str = "", libpath: str = "", pure: bool = True):
        super().__init__(operands=[list(args)], result_types=[result_type], properties={
            "libname": StringAttr(libname), "libpath": StringAttr(libpath),
            "symbol": StringAttr(symbol), "pure": BoolAttr(pure, IntegerType(1))})


@irdl_op_definition
class ElementwiseInlineAsmOp(IRDLOperation):
    """``tl.inline_asm_elementwise``: target assembly applied to ``packed_element`` elements of
    every operand at a time; one result per dtype.  Backends without inline assembly reject it."""

    name = "tt.elementwise_inline_asm"
    args = var_operand_def()
    asm_string = prop_def(StringAttr)
    constraints = prop_def(StringAttr)
    pure = prop_def(BoolAttr)
    packed_element = prop_def(IntegerAttr)
    res = var_result_def()
    traits = traits_def(PureWhenMarked())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$asm_string attr-dict ($args^ `:` type($args))? `->` type($res)"

    def __init__(self, args: Sequence[SSAValue], result_types: Sequence[Attribute], asm: str, constraints: str,
                 pure: bool, pack: int):
        super().__init__(operands=[list(args)], result_types=[list(result_types)], properties={
            "asm_string": StringAttr(asm), "constraints": StringAttr(constraints),
            "pure": BoolAttr(pure, IntegerType(1)), "packed_element": IntegerAttr(pack, i32)})


@irdl_op_definition
class PrintOp(IRDLOperation):
    """``tt.print " x: " {hex = false, isSigned = array<i32: 1>} : %x : tensor<4xi32>``"""

    name = "tt.print"
    prefix = prop_def(StringAttr)
    hex = prop_def(BoolAttr)
    isSigned = prop_def(DenseArrayBase)
    args = var_operand_def()
    traits = traits_def(MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$prefix attr-dict (`:` $args^ `:` type($args))?"

    def __init__(self, prefix: str, hex: bool, args: Sequence[SSAValue], is_signed: Sequence[int]):
        super().__init__(operands=[list(args)], properties={
            "prefix": StringAttr(prefix), "hex": BoolAttr(hex, IntegerType(1)),
            "isSigned": DenseArrayBase.from_list(i32, list(is_signed))})


@irdl_op_definition
class AssertOp(IRDLOperation):
    """``tt.assert %cond, "message" : tensor<4xi1>``: fails where any element is false."""

    name = "tt.assert"
    condition = operand_def()
    message = prop_def(StringAttr)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$condition `,` $message attr-dict `:` type($condition)"

    def __init__(self, cond: SSAValue, message: str):
        super().__init__(operands=[cond], properties={"message": StringAttr(message)})
