"""Ops of the ``ttg`` dialect, in Triton 3.x syntax::

    %1 = ttg.convert_layout %0 : tensor<128xf32, #blocked> -> tensor<128xf32, #blocked1>
    %m = ttg.local_alloc %t : (tensor<64x64xf16, #blocked>) -> !ttg.memdesc<64x64xf16, #shared, #smem>
    %e = ttg.local_alloc : () -> !ttg.memdesc<2x64x64xf16, #shared, #smem, mutable>
    %v = ttg.local_load %m : !ttg.memdesc<64x64xf16, #shared, #smem> -> tensor<64x64xf16, #blocked>
    ttg.local_store %t, %e : tensor<64x64xf16, #blocked> -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable>
    ttg.local_dealloc %e : !ttg.memdesc<64x64xf16, #shared, #smem, mutable>
    %tok = ttg.async_copy_global_to_local %ptrs, %e mask %msk : tensor<64x64x!tt.ptr<f16>, #blocked> -> !ttg.memdesc<...>
    %grp = ttg.async_commit_group tokens %tok
    %w = ttg.async_wait %grp {num = 0 : i32}
    %s = ttg.memdesc_index %e[%i] : !ttg.memdesc<3x64x64xf16, ...> -> !ttg.memdesc<64x64xf16, ...>
    ttg.barrier

Effects drive xDSL's CSE/DCE: convert_layout is pure; allocations are left unmarked (never merged).
"""
from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, IntegerType, TensorType, i32
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (AttrSizedOperandSegments, IRDLOperation, ParsePropInAttrDict, irdl_op_definition,
                       operand_def, opt_operand_def, opt_prop_def, prop_def, result_def, traits_def,
                       var_operand_def)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryAllocEffect, MemoryReadEffect, MemoryWriteEffect, Pure
from xdsl.utils.exceptions import VerifyException

from ..ttir.attrs import CACHE_MODIFIER, EVICTION_POLICY
from ..ttir.memory_ops import _parse_cache_evict, _print_cache_evict, pointee_value_type
from ..ttir.types import element_type, shape_of, with_element_type
from .encodings import DistributedEncoding, SharedEncoding
from .types import AsyncTokenType, MemDescType


def _check_distributed(t: Attribute, what: str) -> None:
    if isinstance(t, TensorType) and not isinstance(t.encoding, DistributedEncoding):
        raise VerifyException(f"{what} must be a tensor with a distributed encoding, got {t}")


def _check_same_tensor(a: Attribute, m: MemDescType, what: str) -> None:
    if shape_of(a) != m.shape[-len(shape_of(a)):] or element_type(a) != m.element_type:
        raise VerifyException(f"{what}: {a} does not match {m}")


@irdl_op_definition
class ConvertLayoutOp(IRDLOperation):
    """Move a tensor between distributed layouts (through shared memory or shuffles)."""

    name = "ttg.convert_layout"
    src = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, result_type: Attribute):
        super().__init__(operands=[src], result_types=[result_type])

    def verify_(self) -> None:
        s, r = self.src.type, self.result.type
        if s.get_shape() != r.get_shape() or s.element_type != r.element_type:
            raise VerifyException(f"ttg.convert_layout changes only the encoding: {s} -> {r}")
        _check_distributed(s, "ttg.convert_layout source")
        _check_distributed(r, "ttg.convert_layout result")


@irdl_op_definition
class LocalAllocOp(IRDLOperation):
    """A shared-memory buffer, optionally initialised from a tensor (then immutable)."""

    name = "ttg.local_alloc"
    src = opt_operand_def(TensorType)
    result = result_def(MemDescType)
    alignment = opt_prop_def(IntegerAttr)
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, result_type: MemDescType, src: SSAValue | None = None):
        super().__init__(operands=[[src] if src is not None else []], result_types=[result_type])

    def verify_(self) -> None:
        if not isinstance(self.result.type.encoding, SharedEncoding):
            raise VerifyException(f"ttg.local_alloc needs a shared encoding, got {self.result.type.encoding}")
        if self.src is not None:
            _check_same_tensor(self.src.type, self.result.type, "ttg.local_alloc")

    def print(self, printer: Printer) -> None:
        if self.src is not None:
            printer.print_string(" ")
            printer.print_operand(self.src)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : (")
        if self.src is not None:
            printer.print_attribute(self.src.type)
        printer.print_string(") -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        name = parser.parse_optional_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        parser.parse_punctuation("(")
        src_t = parser.parse_optional_type()
        parser.parse_punctuation(")")
        parser.parse_punctuation("->")
        op = cls(parser.parse_type(), parser.resolve_operand(name, src_t) if name else None)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class LocalLoadOp(IRDLOperation):
    name = "ttg.local_load"
    src = operand_def(MemDescType)
    token = opt_operand_def(AsyncTokenType)
    result = result_def(TensorType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$src (`token` $token^)? attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, result_type: Attribute, token: SSAValue | None = None):
        super().__init__(operands=[src, [token] if token else []], result_types=[result_type])

    def verify_(self) -> None:
        _check_same_tensor(self.result.type, self.src.type, "ttg.local_load")
        _check_distributed(self.result.type, "ttg.local_load result")


@irdl_op_definition
class LocalStoreOp(IRDLOperation):
    name = "ttg.local_store"
    src = operand_def(TensorType)
    dst = operand_def(MemDescType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$src `,` $dst attr-dict `:` type($src) `->` type($dst)"

    def __init__(self, src: SSAValue, dst: SSAValue):
        super().__init__(operands=[src, dst])

    def verify_(self) -> None:
        _check_same_tensor(self.src.type, self.dst.type, "ttg.local_store")
        if not self.dst.type.is_mutable:
            raise VerifyException("ttg.local_store needs a mutable buffer")


@irdl_op_definition
class LocalDeallocOp(IRDLOperation):
    name = "ttg.local_dealloc"
    src = operand_def(MemDescType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$src attr-dict `:` type($src)"

    def __init__(self, src: SSAValue):
        super().__init__(operands=[src])


@irdl_op_definition
class AsyncCopyGlobalToLocalOp(IRDLOperation):
    """Asynchronous gather of a tensor of pointers into a shared buffer (``cp.async``)."""

    name = "ttg.async_copy_global_to_local"
    src = operand_def(TensorType)
    result = operand_def(MemDescType)
    mask = opt_operand_def()
    other = opt_operand_def()
    cache = prop_def(IntegerAttr)
    evict = prop_def(IntegerAttr)
    token = result_def(AsyncTokenType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, src: SSAValue, dst: SSAValue, mask: SSAValue | None = None, other: SSAValue | None = None,
                 cache: str = "none", evict: str = "evict_normal"):
        super().__init__(operands=[src, dst, [mask] if mask else [], [other] if other else []],
                         result_types=[AsyncTokenType()],
                         properties={"cache": CACHE_MODIFIER.attr(cache), "evict": EVICTION_POLICY.attr(evict)})

    def verify_(self) -> None:
        _check_same_tensor(pointee_value_type(self.src.type), self.result.type, "ttg.async_copy_global_to_local")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.src, self.result], printer.print_operand)
        for kw, v in (("mask", self.mask), ("other", self.other)):
            if v is not None:
                printer.print_string(f" {kw} ")
                printer.print_operand(v)
        _print_cache_evict(printer, self)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        src, dst = parser.parse_unresolved_operand(), None
        parser.parse_punctuation(",")
        dst = parser.parse_unresolved_operand()
        mask = parser.parse_unresolved_operand() if parser.parse_optional_keyword("mask") else None
        other = parser.parse_unresolved_operand() if parser.parse_optional_keyword("other") else None
        cache, evict = _parse_cache_evict(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src_t = parser.parse_type()
        parser.parse_punctuation("->")
        dst_t = parser.parse_type()
        vt = pointee_value_type(src_t)
        op = cls(parser.resolve_operand(src, src_t), parser.resolve_operand(dst, dst_t),
                 parser.resolve_operand(mask, with_element_type(vt, IntegerType(1))) if mask else None,
                 parser.resolve_operand(other, vt) if other else None, cache, evict)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class AsyncCommitGroupOp(IRDLOperation):
    name = "ttg.async_commit_group"
    inputTokens = var_operand_def(AsyncTokenType)
    asyncToken = result_def(AsyncTokenType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "(`tokens` $inputTokens^)? attr-dict"

    def __init__(self, tokens=()):
        super().__init__(operands=[list(tokens)], result_types=[AsyncTokenType()])


@irdl_op_definition
class AsyncWaitOp(IRDLOperation):
    """Wait until at most ``num`` committed groups are still in flight."""

    name = "ttg.async_wait"
    asyncToken = var_operand_def(AsyncTokenType)
    num = prop_def(IntegerAttr)
    retToken = result_def(AsyncTokenType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$asyncToken attr-dict"

    def __init__(self, tokens=(), num: int = 0):
        super().__init__(operands=[list(tokens)], result_types=[AsyncTokenType()],
                         properties={"num": IntegerAttr(num, i32)})


@irdl_op_definition
class MemDescIndexOp(IRDLOperation):
    """Slot ``index`` of a multi-buffered allocation: the view of its leading dimension's ``index``-th
    sub-buffer (what a software-pipelined loop reads and refills in turn)."""

    name = "ttg.memdesc_index"
    src = operand_def(MemDescType)
    index = operand_def(i32)
    result = result_def(MemDescType)
    traits = traits_def(Pure())
    assembly_format = "$src `[` $index `]` attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, index: SSAValue):
        t = src.type
        super().__init__(operands=[src, index], result_types=[
            MemDescType(t.shape[1:], t.element_type, t.encoding, t.memory_space, t.is_mutable)])

    def verify_(self) -> None:
        s, r = self.src.type, self.result.type
        if s.shape[1:] != r.shape or s.element_type != r.element_type:
            raise VerifyException(f"ttg.memdesc_index drops the leading dimension only: {s} -> {r}")


@irdl_op_definition
class MemDescTransOp(IRDLOperation):
    """A transposed view of a 2-d buffer: the same bytes, indexed with the dimensions swapped (its
    type's encoding places element ``(j, i)`` where the source's places ``(i, j)``).  Reads nothing."""

    name = "ttg.memdesc_trans"
    src = operand_def(MemDescType)
    result = result_def(MemDescType)
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, result_type: MemDescType):
        super().__init__(operands=[src], result_types=[result_type])

    def verify_(self) -> None:
        s, r = self.src.type, self.result.type
        if len(s.shape) != 2 or tuple(reversed(s.shape)) != r.shape or s.element_type != r.element_type:
            raise VerifyException(f"ttg.memdesc_trans swaps the two dimensions of a 2-d buffer: {s} -> {r}")


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """A CTA-wide execution and shared-memory barrier (``bar.sync 0`` / ``s_barrier``), placed by membar."""

    name = "ttg.barrier"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


# ---- copies completed on barriers in shared memory (a tile-copy engine: NVIDIA's TMA) -------------
#
# A backend whose hardware copies a whole tile named by a descriptor (``tt.descriptor_load``'s map)
# into shared memory, and signals the copy's completion on a barrier object that lives in shared
# memory, asks the pipeline pass for these instead of ``async_copy_global_to_local`` + groups:
#
#   %bars = ttg.local_alloc : () -> !ttg.memdesc<3xi64, #shared, #smem, mutable>
#   ttg.init_barriers %bars {count = 1 : i32}     // every barrier, visible to all threads after it
#   ttg.async_copy_descriptor_to_local %map[%i, %j], %slot, %bars[%k], %pred : !tt.ptr<i8>, !ttg.memdesc<...>, !ttg.memdesc<3xi64, ...>
#   ttg.wait_barrier %bars[%k], %phase : !ttg.memdesc<3xi64, ...>   // the copy's tile is visible to this thread
#   ttg.inval_barriers %bars
#
# The copy is issued once for the whole block (where ``%pred`` holds) and completes barrier ``%k``'s
# current phase when its bytes have landed; the waiting thread then reads the slot without a block
# barrier.  ``%phase`` is the parity of that barrier's completions so far.  Only the backend that
# asked for them lowers these ops.


def _print_bar(printer: Printer, bars, index) -> None:
    printer.print_operand(bars)
    printer.print_string("[")
    printer.print_operand(index)
    printer.print_string("]")


def _parse_bar(parser: Parser):
    bars = parser.parse_unresolved_operand()
    parser.parse_punctuation("[")
    index = parser.parse_unresolved_operand()
    parser.parse_punctuation("]")
    return bars, index


@irdl_op_definition
class InitBarriersOp(IRDLOperation):
    """Initialise every barrier of ``bars`` to expect ``count`` arrivals a phase."""

    name = "ttg.init_barriers"
    bars = operand_def(MemDescType)
    count = prop_def(IntegerAttr)
    traits = traits_def(MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$bars attr-dict `:` type($bars)"

    def __init__(self, bars: SSAValue, count: int = 1):
        super().__init__(operands=[bars], properties={"count": IntegerAttr(count, i32)})


@irdl_op_definition
class InvalBarriersOp(IRDLOperation):
    """Retire every barrier of ``bars`` (no copy may be pending on them): the memory is plain again."""

    name = "ttg.inval_barriers"
    bars = operand_def(MemDescType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$bars attr-dict `:` type($bars)"

    def __init__(self, bars: SSAValue):
        super().__init__(operands=[bars])


@irdl_op_definition
class AsyncCopyDescriptorToLocalOp(IRDLOperation):
    """Copy the tile of descriptor map ``desc`` at ``indices`` (outermost first) into ``result``,
    completing on barrier ``bars[index]``; issued where ``pred`` holds."""

    name = "ttg.async_copy_descriptor_to_local"
    desc = operand_def()
    indices = var_operand_def(i32)
    result = operand_def(MemDescType)
    bars = operand_def(MemDescType)
    index = operand_def(i32)
    pred = operand_def(IntegerType(1))
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, desc: SSAValue, indices, dst: SSAValue, bars: SSAValue, index: SSAValue, pred: SSAValue):
        super().__init__(operands=[desc, list(indices), dst, bars, index, pred])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.desc)
        printer.print_string("[")
        printer.print_list(list(self.indices), printer.print_operand)
        printer.print_string("], ")
        printer.print_operand(self.result)
        printer.print_string(", ")
        _print_bar(printer, self.bars, self.index)
        printer.print_string(", ")
        printer.print_operand(self.pred)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list([self.desc.type, self.result.type, self.bars.type], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser):
        desc = parser.parse_unresolved_operand()
        idx = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        parser.parse_punctuation(",")
        dst = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        bars, index = _parse_bar(parser)
        parser.parse_punctuation(",")
        pred = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        dt = parser.parse_type()
        parser.parse_punctuation(",")
        mt = parser.parse_type()
        parser.parse_punctuation(",")
        bt = parser.parse_type()
        op = cls(parser.resolve_operand(desc, dt), [parser.resolve_operand(i, i32) for i in idx],
                 parser.resolve_operand(dst, mt), parser.resolve_operand(bars, bt), parser.resolve_operand(index, i32),
                 parser.resolve_operand(pred, IntegerType(1)))
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class WaitBarrierOp(IRDLOperation):
    """Wait until barrier ``bars[index]`` has completed the phase of parity ``phase``."""

    name = "ttg.wait_barrier"
    bars = operand_def(MemDescType)
    index = operand_def(i32)
    phase = operand_def(i32)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(self, bars: SSAValue, index: SSAValue, phase: SSAValue):
        super().__init__(operands=[bars, index, phase])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_bar(printer, self.bars, self.index)
        printer.print_string(", ")
        printer.print_operand(self.phase)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.bars.type)

    @classmethod
    def parse(cls, parser: Parser):
        bars, index = _parse_bar(parser)
        parser.parse_punctuation(",")
        phase = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        bt = parser.parse_type()
        op = cls(parser.resolve_operand(bars, bt), parser.resolve_operand(index, i32), parser.resolve_operand(phase, i32))
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class GlobalScratchAllocOp(IRDLOperation):
    """``nbytes`` of global memory of this program's own, aligned to ``alignment``::

        %p = ttg.global_scratch_alloc {alignment = 128 : i32, nbytes = 128 : i32} : !tt.ptr<i8>

    ``allocate-global-scratch`` places every such buffer in the program's part of the launch's
    scratch (``ttg.global_scratch_memory_offset``); the launcher asks ``tritium.set_allocator``'s
    allocator for the whole launch's.  Never merged or removed as a common subexpression."""

    name = "ttg.global_scratch_alloc"
    nbytes = prop_def(IntegerAttr)
    alignment = prop_def(IntegerAttr)
    result = result_def()
    traits = traits_def(MemoryAllocEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, nbytes: int, alignment: int, result_type):
        super().__init__(result_types=[result_type],
                         properties={"nbytes": IntegerAttr(nbytes, i32), "alignment": IntegerAttr(alignment, i32)})


TTG_OPS = [ConvertLayoutOp, LocalAllocOp, LocalLoadOp, LocalStoreOp, LocalDeallocOp,
           AsyncCopyGlobalToLocalOp, AsyncCommitGroupOp, AsyncWaitOp, MemDescIndexOp, MemDescTransOp, BarrierOp,
           InitBarriersOp, InvalBarriersOp, AsyncCopyDescriptorToLocalOp, WaitBarrierOp, GlobalScratchAllocOp]
