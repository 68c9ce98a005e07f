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
Importing this module registers the dialect, so TTGIR text holding these ops parses."""
from __future__ import annotations

from xdsl.dialects.builtin import Float16Type, Float32Type, IntegerAttr, IntegerType, TensorType, i32
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (IRDLOperation, ParsePropInAttrDict, irdl_op_definition, operand_def, opt_prop_def, prop_def,
                       result_def, traits_def, var_operand_def, var_result_def)
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect
from xdsl.utils.exceptions import VerifyException

from tritium.ttgir.types import MemDescType
from tritium.ttir.attrs import INPUT_PRECISION
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


TritonNvidiaGPU = Dialect("ttng", [WarpGroupDotOp, WarpGroupDotWaitOp, FenceAsyncSharedOp, BulkStoreWaitOp,
                                   TensorMapAcquireOp], [])
register_dialect(TritonNvidiaGPU)
