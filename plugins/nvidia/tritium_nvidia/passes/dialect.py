"""The NVIDIA-only ops of TTGIR (dialect ``ttng``), in Triton's syntax::

    %d = ttng.warp_group_dot %a, %b, %c {inputPrecision = 0 : i32, isAsync = true} :
             !ttg.memdesc<128x64xf16, #shared, #smem> * !ttg.memdesc<64x256xf16, #shared1, #smem>
             , tensor<128x256xf32, #mma> -> tensor<128x256xf32, #mma>
    %r = ttng.warp_group_dot_wait %d {pendings = 1 : i32} : tensor<128x256xf32, #mma> -> tensor<...>
    ttng.fence_async_shared

``warp_group_dot`` is ``wgmma.mma_async``: B in shared memory, A in shared memory or in registers
(a ``dot_op`` layout of the accumulator's encoding); with ``isAsync`` its
result may still be in flight until a ``warp_group_dot_wait`` with fewer ``pendings`` returns it.
``fence_async_shared`` orders ordinary shared-memory writes before the tensor cores read them.
``tensormap_create`` / ``tensormap_acquire`` build and publish TMA tensor maps.  Importing this module registers the dialect, so TTGIR text holding these ops parses."""
from __future__ import annotations

from xdsl.dialects.builtin import (DenseArrayBase, Float16Type, Float32Type, IntegerAttr, IntegerType, StringAttr,
                                   TensorType, i32, i64)
from xdsl.ir import Attribute, Dialect, Region, SSAValue
from xdsl.irdl import (AttrSizedOperandSegments, IRDLOperation, ParsePropInAttrDict, irdl_op_definition, operand_def, opt_prop_def, prop_def,
                       region_def, result_def, traits_def, var_operand_def, var_result_def)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, NoTerminator
from xdsl.utils.exceptions import VerifyException

from tritium.ttgir.types import MemDescType
from tritium.ttir.attrs import INPUT_PRECISION
from tritium.ttir.descriptor_ops import parse_shape_and_strides, print_shape_and_strides
from tritium.ttir.dialect import register_dialect


def element_kind(t) -> str:
    """A tensor type's element as the tensor cores name it: ``f16``, ``bf16``, ``f32``, ``f64``, ``i8``, ``e4m3``, ``e5m2`` or another name."""
    e = t.element_type
    name = type(e).__name__
    if isinstance(e, Float16Type):
        return "f16"
    if name == "BFloat16Type":
        return "bf16"
    if isinstance(e, Float32Type):
        return "f32"
    if isinstance(e, IntegerType):
        return f"i{e.width.data}"
    # the tensor cores' fp8 formats only: the FNUZ variants and fp8e4b15 have other biases
    if name == "Float8E4M3FNType":
        return "e4m3"
    if name == "Float8E5M2Type":
        return "e5m2"
    return name


@irdl_op_definition
class WarpGroupDotOp(IRDLOperation):
    name = "ttng.warp_group_dot"
    a = operand_def()                       # a buffer, or registers in a dot_op layout
    b = operand_def(MemDescType)
    c = operand_def(TensorType)
    inputPrecision = prop_def(IntegerAttr)
    isAsync = prop_def(IntegerAttr)
    maxNumImpreciseAcc = opt_prop_def(IntegerAttr)
    d = result_def(TensorType)
    traits = traits_def(MemoryReadEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$a `,` $b `,` $c attr-dict `:` type($a) `*` type($b) `,` type($c) `->` type($d)"

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue, input_precision: str = "ieee", is_async: bool = True,
                 max_num_imprecise_acc: int = 0):
        props = {"inputPrecision": INPUT_PRECISION.attr(input_precision), "isAsync": IntegerAttr(int(is_async), i32)}
        if max_num_imprecise_acc:
            props["maxNumImpreciseAcc"] = IntegerAttr(max_num_imprecise_acc, i32)
        super().__init__(operands=[a, b, c], result_types=[SSAValue.get(c).type], properties=props)

    @property
    def max_num_imprecise_acc(self) -> int:
        return self.maxNumImpreciseAcc.value.data if self.maxNumImpreciseAcc is not None else 0

    def needs_partial_accumulator(self) -> bool:
        """fp8 products summed into fp32 in chunks of at most ``maxNumImpreciseAcc`` (a chunk's sum in
        the tensor core's reduced-precision accumulator, the chunks added in fp32)."""
        return (element_kind(self.a.type) in ("e4m3", "e5m2") and element_kind(self.d.type) == "f32"
                and self.max_num_imprecise_acc <= self.a.type.get_shape()[-1])

    @property
    def input_precision(self) -> str:
        return INPUT_PRECISION.keyword(self.inputPrecision)

    def verify_(self) -> None:
        (m, k), (k2, n) = self.a.type.get_shape(), self.b.type.shape
        if k != k2 or tuple(self.d.type.get_shape()) != (m, n):
            raise VerifyException(f"ttng.warp_group_dot shapes do not agree: {m}x{k} * {k2}x{n} -> "
                                  f"{list(self.d.type.get_shape())}")
        enc = getattr(self.d.type, "encoding", None)
        wm = getattr(enc, "warps_per_cta", (4,))[0]
        if wm % 4:
            raise VerifyException("ttng.warp_group_dot needs its accumulator layout's warpsPerCTA[0] divisible by 4 "
                                  f"(a warpgroup of four warps along M), got {wm}")


@irdl_op_definition
class WarpGroupDotWaitOp(IRDLOperation):
    """Wait until at most ``pendings`` warp-group dots are in flight; returns its operands (the
    accumulators), now safe to read."""

    name = "ttng.warp_group_dot_wait"
    inputs = var_operand_def(Attribute)
    pendings = prop_def(IntegerAttr)
    outputs = var_result_def(Attribute)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$inputs attr-dict `:` type($inputs) `->` type($outputs)"

    def __init__(self, inputs: list[SSAValue], pendings: int):
        super().__init__(operands=[inputs], result_types=[[SSAValue.get(v).type for v in inputs]],
                         properties={"pendings": IntegerAttr(pendings, i32)})


@irdl_op_definition
class FenceAsyncSharedOp(IRDLOperation):
    name = "ttng.fence_async_shared"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class BulkStoreWaitOp(IRDLOperation):
    """Thread 0 waits until the copy engine has read the tiles of its bulk stores issued so far
    (``cp.async.bulk.wait_group.read 0``): put before whatever next writes those bytes
    (``tma.DeferStoreWaits``)."""
    name = "ttng.bulk_store_wait"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class TensorMapAcquireOp(IRDLOperation):
    """Thread 0 makes the tensor map at ``map`` (written before the kernel, by the host's copy)
    visible to the copy engine's reads of it: ``fence.proxy.tensormap::generic.acquire`` once, at
    the kernel's start, before every bulk tensor copy through the map
    (``tma.AcquireMapsOnce``)."""
    name = "ttng.tensormap_acquire"
    map = operand_def()
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$map attr-dict `:` type($map)"

    def __init__(self, tensor_map: SSAValue):
        super().__init__(operands=[tensor_map])


@irdl_op_definition
class TensorMapCreateOp(IRDLOperation):
    """The block fills the 128-byte tensor map at ``desc_ptr`` (global memory) for the tensor at
    ``global_address`` with ``global_dim`` (i32) and ``global_stride`` (i64, bytes, every
    dimension but the innermost), all innermost first, moved in boxes of ``box_dim``; the copy
    engine's codes for the element type, swizzle and out-of-bounds fill.  Built in shared memory
    (``tensormap.replace``), copied out with a release fence, then acquired by the first warp,
    whose thread 0 issues the block's copies through it (``lowering/tma.py``)::

        ttng.tensormap_create %map, %base, [%n, %m], [%stride] {box_dim = array<i32: 64, 128>,
            elem_type = 6 : i32, fill_mode = 0 : i32, swizzle_mode = 3 : i32} : !tt.ptr<i8>, !tt.ptr<f16>
    """

    name = "ttng.tensormap_create"
    desc_ptr = operand_def()
    global_address = operand_def()
    global_dim = var_operand_def(i32)
    global_stride = var_operand_def(i64)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, desc_ptr: SSAValue, global_address: SSAValue, global_dim, global_stride, box_dim,
                 elem_type: int, swizzle_mode: int, fill_mode: int):
        super().__init__(operands=[desc_ptr, global_address, list(global_dim), list(global_stride)],
                         attributes={"box_dim": DenseArrayBase.from_list(i32, [int(b) for b in box_dim]),
                                     "elem_type": IntegerAttr(elem_type, i32),
                                     "swizzle_mode": IntegerAttr(swizzle_mode, i32),
                                     "fill_mode": IntegerAttr(fill_mode, i32)})

    @property
    def box_dim(self) -> list[int]:
        return [int(v) for v in self.attributes["box_dim"].get_values()]

    def code(self, name: str) -> int:
        return self.attributes[name].value.data

    def verify_(self) -> None:
        n = len(self.global_dim)
        if not 1 <= n <= 5 or len(self.global_stride) != n - 1 or len(self.box_dim) != n:
            raise VerifyException(f"ttng.tensormap_create: {n} dimensions, {len(self.global_stride)} strides "
                                  f"and {len(self.box_dim)} box dimensions")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.desc_ptr)
        printer.print_string(", ")
        printer.print_operand(self.global_address)
        print_shape_and_strides(printer, self.global_dim, self.global_stride)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list([self.desc_ptr.type, self.global_address.type], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser):
        desc = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        addr = parser.parse_unresolved_operand()
        dims, strides = parse_shape_and_strides(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        dt = parser.parse_type()
        parser.parse_punctuation(",")
        at = parser.parse_type()
        codes = {k: attrs.pop(k).value.data for k in ("elem_type", "swizzle_mode", "fill_mode")}
        box = [int(v) for v in attrs.pop("box_dim").get_values()]
        op = cls(parser.resolve_operand(desc, dt), parser.resolve_operand(addr, at),
                 [parser.resolve_operand(d, i32) for d in dims], [parser.resolve_operand(v, i64) for v in strides],
                 box, codes["elem_type"], codes["swizzle_mode"], codes["fill_mode"])
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class ArriveBarrierOp(IRDLOperation):
    """Each warp arrives once on barrier ``bars[index]`` where ``pred`` holds (lane 0, after the
    warp's earlier instructions): a consumer warp hands a pipeline slot back to the producer
    (``nvidia-warp-specialize``), so the barrier counts warps."""

    name = "ttng.arrive_barrier"
    bars = operand_def(MemDescType)
    index = operand_def(i32)
    pred = operand_def(IntegerType(1))
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$bars `[` $index `]` `,` $pred attr-dict `:` type($bars)"

    def __init__(self, bars: SSAValue, index: SSAValue, pred: SSAValue):
        super().__init__(operands=[bars, index, pred])


@irdl_op_definition
class ProducerPartitionOp(IRDLOperation):
    """The producer of a warp-specialized loop (``nvidia-warp-specialize``): the block runs with
    ``producer_warps`` more warps than its layouts' ``consumer_warps``; those extra warps (one
    warp group, after the consumers) run ``body`` (the loop's copies), lowering their register
    budget to ``producer_regs`` first, and exit; the consumer warps raise theirs to
    ``consumer_regs`` (``setmaxnreg``) and go on after the op.  ``body`` synchronises with the
    consumers only through barriers in shared memory, never a block barrier.  Its copies are
    issued by the producer's first thread."""

    name = "ttng.producer_partition"
    body = region_def()
    producer_warps = prop_def(IntegerAttr)
    consumer_warps = prop_def(IntegerAttr)
    producer_regs = prop_def(IntegerAttr)
    consumer_regs = prop_def(IntegerAttr)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect(), NoTerminator())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict-with-keyword $body"

    def __init__(self, body: Region, producer_warps: int, consumer_warps: int, producer_regs: int, consumer_regs: int):
        super().__init__(regions=[body], properties={
            "producer_warps": IntegerAttr(producer_warps, i32), "consumer_warps": IntegerAttr(consumer_warps, i32),
            "producer_regs": IntegerAttr(producer_regs, i32), "consumer_regs": IntegerAttr(consumer_regs, i32)})

    def count(self, name: str) -> int:
        return getattr(self, name).value.data


@irdl_op_definition
class WarpGroupTurnOp(IRDLOperation):
    """The turns of two consumer warp groups issuing their ``wgmma`` (``nvidia-warp-specialize``'s
    ping-pong): ``step`` is ``start`` (before the loop: group 1 gives group 0 the first turn),
    ``wait`` (a group waits for its turn), ``pass`` (it gives the other group the turn) or ``end``
    (after the loop: group 0 takes the turn group 1 gave last, so every barrier ends balanced).
    Named barriers ``TURN_BARRIER + g`` count both groups' threads."""

    name = "ttng.warp_group_turn"
    step = prop_def(StringAttr)
    threads = prop_def(IntegerAttr)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    def __init__(self, step: str, threads: int):
        super().__init__(properties={"step": StringAttr(step), "threads": IntegerAttr(threads, i32)})


@irdl_op_definition
class PairSetupOp(IRDLOperation):
    """Before a loop whose copies two CTAs of a cluster may share (``passes/cluster_pairs.py``).
    In a cluster of two CTAs, thread 0 initialises the ``nslots`` *empty* barriers at
    ``empty_offset`` (two arrivals a phase: one from each CTA) and both CTAs exchange ``lb``,
    ``ub``, ``step`` and the ``invariants`` each copy's coordinates and predicate are computed
    from (``widths[k]`` of them for copy ``k``) through distributed shared memory at
    ``allocation.offset``: ``paired`` where the bounds agree, ``shares[k]`` where also copy ``k``'s
    invariants do (then its coordinates agree at every iteration).  False everywhere otherwise
    (and without a cluster).  Every thread of both CTAs takes part.  The empty barriers are
    (re)initialised, with ``empty_count`` arrivals a phase, only where paired (a warp-specialized
    loop's own empty barriers, initialised for one CTA's consumer warps before, then count both
    CTAs')."""

    name = "ttng.pair_setup"
    lb = operand_def(i32)
    ub = operand_def(i32)
    step = operand_def(i32)
    invariants = var_operand_def(i32)
    paired = result_def(IntegerType(1))
    shares = var_result_def(IntegerType(1))
    widths = prop_def(DenseArrayBase)
    nslots = prop_def(IntegerAttr)
    empty_offset = prop_def(IntegerAttr)
    empty_count = prop_def(IntegerAttr)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lb `,` $ub `,` $step `,` `[` $invariants `]` attr-dict `:` type($shares)"

    def __init__(self, lb: SSAValue, ub: SSAValue, step: SSAValue, invariants, widths: list[int], nslots: int,
                 empty_offset: int, empty_count: int = 2):
        super().__init__(operands=[lb, ub, step, list(invariants)],
                         result_types=[IntegerType(1), [IntegerType(1)] * len(widths)],
                         properties={"widths": DenseArrayBase.from_list(i32, widths),
                                     "nslots": IntegerAttr(nslots, i32), "empty_offset": IntegerAttr(empty_offset, i32),
                                     "empty_count": IntegerAttr(empty_count, i32)})

    @property
    def width_list(self) -> list[int]:
        return [int(v) for v in self.widths.get_values()]


@irdl_op_definition
class PairRefillOp(IRDLOperation):
    """After the block barrier before a paired loop's refills into slot ``slot`` (iteration ``t``
    of the loop, counted from 0), where ``paired``: thread 0 tells both CTAs' empty barrier of the
    slot that this CTA is done with it (``mbarrier.arrive`` here and, through ``mapa``, in the
    peer); ``modes[k]`` is 0 where copy ``k`` is not shared, else 1 in the CTA of rank
    ``(t + k) % 2`` (it issues the copy into both CTAs: its thread 0 first waits until the slot's
    empty barrier has both arrivals of this round, ``(t // nslots) % 2``) and 2 in the other
    (it expects the bytes).  Without ``handoff`` (a warp-specialized loop's producer, which waits
    on the consumers' empty barriers of both CTAs itself) only the modes."""

    name = "ttng.pair_refill"
    paired = operand_def(IntegerType(1))
    t = operand_def(i32)
    slot = operand_def(i32)
    shares = var_operand_def(IntegerType(1))
    modes = var_result_def(i32)
    nslots = prop_def(IntegerAttr)
    empty_offset = prop_def(IntegerAttr)
    handoff = prop_def(IntegerAttr)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$paired `,` $t `,` $slot `,` `[` $shares `]` attr-dict `:` type($modes)"

    def __init__(self, paired: SSAValue, t: SSAValue, slot: SSAValue, shares, nslots: int, empty_offset: int,
                 handoff: bool = True):
        super().__init__(operands=[paired, t, slot, list(shares)], result_types=[[i32] * len(shares)],
                         properties={"nslots": IntegerAttr(nslots, i32), "empty_offset": IntegerAttr(empty_offset, i32),
                                     "handoff": IntegerAttr(int(handoff), i32)})


@irdl_op_definition
class PairArriveOp(IRDLOperation):
    """``ttng.arrive_barrier`` of a warp-specialized paired loop's consumers: lane 0 of each warp,
    where ``pred``, arrives on ``bars[index]`` here and, where ``paired``, on the same barrier in
    the peer CTA, whose producer may then copy into this CTA's slot too."""

    name = "ttng.pair_arrive"
    bars = operand_def(MemDescType)
    index = operand_def(i32)
    pred = operand_def(IntegerType(1))
    paired = operand_def(IntegerType(1))
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$bars `[` $index `]` `,` $pred `,` $paired attr-dict `:` type($bars)"

    def __init__(self, bars: SSAValue, index: SSAValue, pred: SSAValue, paired: SSAValue):
        super().__init__(operands=[bars, index, pred, paired])


@irdl_op_definition
class PairTeardownOp(IRDLOperation):
    """After a paired loop: where ``paired``, a cluster barrier, so that neither CTA leaves (or
    reuses its shared memory) while its peer may still copy into its slots or arrive on its
    barriers."""

    name = "ttng.pair_teardown"
    paired = operand_def(IntegerType(1))
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$paired attr-dict"

    def __init__(self, paired: SSAValue):
        super().__init__(operands=[paired])


@irdl_op_definition
class PairCopyOp(IRDLOperation):
    """``ttg.async_copy_descriptor_to_local`` of a paired loop, with the ``mode`` its
    ``ttng.pair_exchange`` gave it: 0 copy into this CTA, 1 copy into both CTAs of the cluster
    (``.multicast::cluster``), 2 expect the bytes the peer copies."""

    name = "ttng.pair_copy"
    desc = operand_def()
    indices = var_operand_def(i32)
    result = operand_def(MemDescType)
    bars = operand_def(MemDescType)
    index = operand_def(i32)
    pred = operand_def(IntegerType(1))
    mode = operand_def(i32)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, desc: SSAValue, indices, dst: SSAValue, bars: SSAValue, index: SSAValue, pred: SSAValue,
                 mode: SSAValue):
        super().__init__(operands=[desc, list(indices), dst, bars, index, pred, mode])


TritonNvidiaGPU = Dialect("ttng", [WarpGroupDotOp, WarpGroupDotWaitOp, FenceAsyncSharedOp, BulkStoreWaitOp,
                                   TensorMapAcquireOp, TensorMapCreateOp, ArriveBarrierOp, ProducerPartitionOp,
                                   WarpGroupTurnOp, PairSetupOp, PairRefillOp, PairTeardownOp, PairCopyOp, PairArriveOp], [])
register_dialect(TritonNvidiaGPU)
