"""Memory ops of the ``tt`` dialect: load, store, atomics and block pointers."""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import BoolAttr, DenseArrayBase, IntegerAttr, IntegerType, i32
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (AttrSizedOperandSegments, IRDLOperation, ParsePropInAttrDict, irdl_op_definition,
                       operand_def, opt_operand_def, opt_prop_def, prop_def, result_def, traits_def,
                       var_operand_def)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import EffectInstance, MemoryEffectKind, MemoryReadEffect, MemoryWriteEffect, Pure
from xdsl.utils.exceptions import VerifyException

from .attrs import CACHE_MODIFIER, EVICTION_POLICY, MEM_SEMANTIC, MEM_SYNC_SCOPE, PADDING_OPTION, RMW_OP
from .types import PointerType, element_type, shape_of, with_element_type


def pointee_value_type(ptr_type: Attribute) -> Attribute:
    """What loading through ``ptr_type`` yields: for a block pointer its tensor, for a (tensor of)
    pointer(s) the pointee with the pointer tensor's shape."""
    elt = element_type(ptr_type)
    if not isinstance(elt, PointerType):
        raise VerifyException(f"expected a pointer or tensor of pointers, got {ptr_type}")
    if elt.is_block_pointer:
        return elt.pointee_type
    return with_element_type(ptr_type, elt.pointee_type)


def _boundary_attr(boundary_check: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, list(boundary_check))


def _print_cache_evict(printer: Printer, op: IRDLOperation) -> None:
    if CACHE_MODIFIER.keyword(op.cache) != "none":
        printer.print_string(f" cacheModifier = {CACHE_MODIFIER.keyword(op.cache)}")
    if EVICTION_POLICY.keyword(op.evict) != "evict_normal":
        printer.print_string(f" evictionPolicy = {EVICTION_POLICY.keyword(op.evict)}")


def _parse_cache_evict(parser: Parser) -> tuple[str, str]:
    cache, evict = "none", "evict_normal"
    while True:
        if parser.parse_optional_keyword("cacheModifier"):
            parser.parse_punctuation("=")
            cache = parser.parse_identifier()
        elif parser.parse_optional_keyword("evictionPolicy"):
            parser.parse_punctuation("=")
            evict = parser.parse_identifier()
        else:
            return cache, evict


def _print_access(printer: Printer, op: IRDLOperation, operands) -> None:
    """``%ptr, ... [cacheModifier = ..] [evictionPolicy = ..] {attrs} : type(ptr)``"""
    printer.print_string(" ")
    printer.print_list([v for v in operands if v is not None], printer.print_operand)
    _print_cache_evict(printer, op)
    printer.print_op_attributes(_extra_attrs(op))
    printer.print_string(" : ")
    printer.print_attribute(op.ptr.type)


def _parse_access(parser: Parser):
    """The inverse of ``_print_access``: operand names, cache, evict, attributes, the pointer type
    and the type of the value it points at."""
    names = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
    cache, evict = _parse_cache_evict(parser)
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    pt = _parse_ptr_type(parser)
    return names, cache, evict, attrs, pt, pointee_value_type(pt)


def _extra_attrs(op: IRDLOperation) -> dict[str, Attribute]:
    """Non-default properties shown in the attribute dictionary of the custom form."""
    out = dict(op.attributes)
    if op.boundaryCheck.get_values():
        out["boundaryCheck"] = op.boundaryCheck
    if getattr(op, "padding", None) is not None:
        out["padding"] = op.padding
    if getattr(op, "isVolatile", None) is not None and op.isVolatile.value.data:
        out["isVolatile"] = op.isVolatile
    return out


class _LoadEffect(MemoryReadEffect):
    """A load reads; a volatile load also counts as a write (as in Triton) so that CSE, DCE and
    LICM neither merge, drop nor hoist it."""

    _VOLATILE = frozenset((EffectInstance(MemoryEffectKind.READ), EffectInstance(MemoryEffectKind.WRITE)))

    @classmethod
    def get_effects(cls, op):
        vol = op.properties.get("isVolatile")
        return cls._VOLATILE if vol is not None and vol.value.data else super().get_effects(op)


def cache_evict(op) -> tuple[str, str]:
    """A load's or store's cache modifier and eviction policy as keywords (``("cg", "evict_last")``),
    what a new load, store or copy built in its place takes."""
    return CACHE_MODIFIER.keyword(op.cache), EVICTION_POLICY.keyword(op.evict)


@irdl_op_definition
class LoadOp(IRDLOperation):
    """``tt.load %ptr, %mask, %other cacheModifier = cg : tensor<128x!tt.ptr<f32>>``"""

    name = "tt.load"
    ptr = operand_def()
    mask = opt_operand_def()
    other = opt_operand_def()
    boundaryCheck = prop_def(DenseArrayBase)
    padding = opt_prop_def(IntegerAttr)
    cache = prop_def(IntegerAttr)
    evict = prop_def(IntegerAttr)
    isVolatile = prop_def(BoolAttr)
    result = result_def()
    traits = traits_def(_LoadEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, ptr: SSAValue, mask: SSAValue | None = None, other: SSAValue | None = None,
                 cache: str = "none", evict: str = "evict_normal", is_volatile: bool = False,
                 boundary_check: Sequence[int] = (), padding: str | None = None):
        ptr = SSAValue.get(ptr)
        super().__init__(
            operands=[ptr, [mask] if mask is not None else [], [other] if other is not None else []],
            result_types=[pointee_value_type(ptr.type)],
            properties={"cache": CACHE_MODIFIER.attr(cache), "evict": EVICTION_POLICY.attr(evict),
                        "isVolatile": BoolAttr(is_volatile, IntegerType(1)),
                        "boundaryCheck": _boundary_attr(boundary_check),
                        "padding": PADDING_OPTION.attr(padding) if padding else None})

    def verify_(self) -> None:
        if self.result.type != pointee_value_type(self.ptr.type):
            raise VerifyException(f"tt.load result must be {pointee_value_type(self.ptr.type)}")
        if self.mask is not None and shape_of(self.mask.type) != shape_of(self.result.type):
            raise VerifyException("tt.load mask shape differs from the pointer's")

    def print(self, printer: Printer) -> None:
        _print_access(printer, self, (self.ptr, self.mask, self.other))

    @classmethod
    def parse(cls, parser: Parser):
        names, cache, evict, attrs, pt, vt = _parse_access(parser)
        ptr = parser.resolve_operand(names[0], pt)
        mask = parser.resolve_operand(names[1], with_element_type(vt, IntegerType(1))) if len(names) > 1 else None
        other = parser.resolve_operand(names[2], vt) if len(names) > 2 else None
        bc = attrs.pop("boundaryCheck", None)
        pad = attrs.pop("padding", None)
        vol = attrs.pop("isVolatile", None)
        op = cls(ptr, mask, other, cache, evict, bool(vol and vol.value.data),
                 bc.get_values() if bc else (), PADDING_OPTION.keyword(pad) if pad else None)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class StoreOp(IRDLOperation):
    """``tt.store %ptr, %value, %mask : tensor<128x!tt.ptr<f32>>``"""

    name = "tt.store"
    ptr = operand_def()
    value = operand_def()
    mask = opt_operand_def()
    boundaryCheck = prop_def(DenseArrayBase)
    cache = prop_def(IntegerAttr)
    evict = prop_def(IntegerAttr)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, ptr: SSAValue, value: SSAValue, mask: SSAValue | None = None, cache: str = "none",
                 evict: str = "evict_normal", boundary_check: Sequence[int] = ()):
        super().__init__(
            operands=[ptr, value, [mask] if mask is not None else []],
            properties={"cache": CACHE_MODIFIER.attr(cache), "evict": EVICTION_POLICY.attr(evict),
                        "boundaryCheck": _boundary_attr(boundary_check)})

    def verify_(self) -> None:
        if self.value.type != pointee_value_type(self.ptr.type):
            raise VerifyException(f"tt.store value must be {pointee_value_type(self.ptr.type)}, got {self.value.type}")

    def print(self, printer: Printer) -> None:
        _print_access(printer, self, (self.ptr, self.value, self.mask))

    @classmethod
    def parse(cls, parser: Parser):
        names, cache, evict, attrs, pt, vt = _parse_access(parser)
        mask = parser.resolve_operand(names[2], with_element_type(vt, IntegerType(1))) if len(names) > 2 else None
        bc = attrs.pop("boundaryCheck", None)
        op = cls(parser.resolve_operand(names[0], pt), parser.resolve_operand(names[1], vt), mask,
                 cache, evict, bc.get_values() if bc else ())
        op.attributes.update(attrs)
        return op


def _parse_ptr_type(parser: Parser) -> Attribute:
    """Triton elides ``!tt.ptr`` before block-pointer types (``: <tensor<64xf16>>``)."""
    if parser.parse_optional_punctuation("<"):
        pointee = parser.parse_type()
        space = 1
        if parser.parse_optional_punctuation(","):
            space = parser.parse_integer()
        parser.parse_punctuation(">")
        return PointerType(pointee, space)
    return parser.parse_type()


class _Atomic(IRDLOperation):
    def _print_head(self, printer: Printer, *kws: str) -> None:
        printer.print_string(" " + ", ".join(kws) + ", ")
        printer.print_list(list(self.operands), printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : (")
        printer.print_list([o.type for o in self.operands], printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(self.result.type)

    @staticmethod
    def _parse_tail(parser: Parser, n_kws: int):
        kws = [parser.parse_identifier()]
        for _ in range(n_kws - 1):
            parser.parse_punctuation(",")
            kws.append(parser.parse_identifier())
        parser.parse_punctuation(",")
        names = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        parser.parse_punctuation("->")
        parser.parse_type()
        vals = [parser.resolve_operand(n, t) for n, t in zip(names, types)]
        return kws, vals, attrs


@irdl_op_definition
class AtomicRMWOp(_Atomic):
    """``tt.atomic_rmw fadd, acq_rel, gpu, %ptr, %val, %mask : (...) -> tensor<4xf32>``"""

    name = "tt.atomic_rmw"
    ptr = operand_def()
    val = operand_def()
    mask = opt_operand_def()
    atomic_rmw_op = prop_def(IntegerAttr)
    sem = prop_def(IntegerAttr)
    scope = prop_def(IntegerAttr)
    result = result_def()
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(self, rmw: str, ptr: SSAValue, val: SSAValue, mask: SSAValue | None = None,
                 sem: str = "acq_rel", scope: str = "gpu"):
        val = SSAValue.get(val)
        super().__init__(operands=[ptr, val, [mask] if mask is not None else []], result_types=[val.type],
                         properties={"atomic_rmw_op": RMW_OP.attr(rmw), "sem": MEM_SEMANTIC.attr(sem),
                                     "scope": MEM_SYNC_SCOPE.attr(scope)})

    @property
    def rmw(self) -> str:
        return RMW_OP.keyword(self.atomic_rmw_op)

    def print(self, printer: Printer) -> None:
        self._print_head(printer, self.rmw, MEM_SEMANTIC.keyword(self.sem), MEM_SYNC_SCOPE.keyword(self.scope))

    @classmethod
    def parse(cls, parser: Parser):
        (rmw, sem, scope), vals, attrs = cls._parse_tail(parser, 3)
        op = cls(rmw, vals[0], vals[1], vals[2] if len(vals) > 2 else None, sem, scope)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class AtomicCASOp(_Atomic):
    """``tt.atomic_cas acq_rel, gpu, %ptr, %cmp, %val : (...) -> i32``"""

    name = "tt.atomic_cas"
    ptr = operand_def()
    cmp = operand_def()
    val = operand_def()
    sem = prop_def(IntegerAttr)
    scope = prop_def(IntegerAttr)
    result = result_def()
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(self, ptr: SSAValue, cmp: SSAValue, val: SSAValue, sem: str = "acq_rel", scope: str = "gpu"):
        val = SSAValue.get(val)
        super().__init__(operands=[ptr, cmp, val], result_types=[val.type],
                         properties={"sem": MEM_SEMANTIC.attr(sem), "scope": MEM_SYNC_SCOPE.attr(scope)})

    def print(self, printer: Printer) -> None:
        self._print_head(printer, MEM_SEMANTIC.keyword(self.sem), MEM_SYNC_SCOPE.keyword(self.scope))

    @classmethod
    def parse(cls, parser: Parser):
        (sem, scope), vals, attrs = cls._parse_tail(parser, 2)
        op = cls(*vals, sem, scope)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class MakeTensorPtrOp(IRDLOperation):
    """``tt.make_tensor_ptr %base, [%M, %N], [%sM, %sN], [%o0, %o1] {order = array<i32: 1, 0>} : <tensor<64x64xf16>>``"""

    name = "tt.make_tensor_ptr"
    base = operand_def()
    shape = var_operand_def()
    strides = var_operand_def()
    offsets = var_operand_def()
    order = prop_def(DenseArrayBase)
    result = result_def(PointerType)
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict(),)

    def __init__(self, base: SSAValue, shape: Sequence[SSAValue], strides: Sequence[SSAValue],
                 offsets: Sequence[SSAValue], order: Sequence[int], result_type: Attribute):
        super().__init__(operands=[base, list(shape), list(strides), list(offsets)], result_types=[result_type],
                         properties={"order": DenseArrayBase.from_list(i32, list(order))})

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.base)
        for group in (self.shape, self.strides, self.offsets):
            printer.print_string(", [")
            printer.print_list(list(group), printer.print_operand)
            printer.print_string("]")
        printer.print_op_attributes({**self.attributes, "order": self.order})
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        base = parser.parse_unresolved_operand()
        groups = []
        for _ in range(3):
            parser.parse_punctuation(",")
            groups.append(parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand))
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        rt = _parse_ptr_type(parser)
        i64 = IntegerType(64)
        base_t = PointerType(element_type(rt.pointee_type), rt.address_space.data)
        shape = [parser.resolve_operand(n, i64) for n in groups[0]]
        strides = [parser.resolve_operand(n, i64) for n in groups[1]]
        offsets = [parser.resolve_operand(n, i32) for n in groups[2]]
        order = attrs.pop("order")
        op = cls(parser.resolve_operand(base, base_t), shape, strides, offsets, order.get_values(), rt)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class AdvanceOp(IRDLOperation):
    """``tt.advance %bp, [%o0, %o1] : <tensor<64x64xf16>>``"""

    name = "tt.advance"
    ptr = operand_def(PointerType)
    offsets = var_operand_def()
    result = result_def(PointerType)
    traits = traits_def(Pure())

    def __init__(self, ptr: SSAValue, offsets: Sequence[SSAValue]):
        ptr = SSAValue.get(ptr)
        super().__init__(operands=[ptr, list(offsets)], result_types=[ptr.type])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.ptr)
        printer.print_string(", [")
        printer.print_list(list(self.offsets), printer.print_operand)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        ptr = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        offs = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = _parse_ptr_type(parser)
        op = cls(parser.resolve_operand(ptr, t), [parser.resolve_operand(o, i32) for o in offs])
        op.attributes.update(attrs)
        return op
