"""Tensor maps the kernel builds: ``tt.make_tensor_descriptor`` (what the frontend emits for a
``tl.make_tensor_descriptor`` the plugin accepted, ``runtime/tensor_map.device_map_alignment``)
becomes 128 bytes of the program's global scratch and a ``ttng.tensormap_create`` filling them::

    %m = tt.make_tensor_descriptor %a, [%M, %K], [%K64, %c1] {block_shape = array<i32: 128, 64>, ...}
  ->
    %m = ttg.global_scratch_alloc {alignment = 128 : i32, nbytes = 128 : i32} : !tt.ptr<i8>
    ttng.tensormap_create %m, %a, [%K, %M], [%Kbytes] {box_dim = array<i32: 64, 128>, ...}

The map is encoded as the host's would be for the same block (``tensor_map.map_box``,
``map_swizzle``), so the accesses lower exactly as a host descriptor's.  Its users read it after
the create, which publishes it (``lowering/tma.py``): they are marked ``MAP_ACQUIRED``.

A map made inside a loop of a pipelined kernel (a persistent kernel's per-tile descriptor) may
still be read by the copies and stores of the iterations in flight when the next iteration makes
the next one, so it gets a ring of ``num_stages - 1`` maps (one more where the loop's dot is a
wgmma, which the pipeline keeps one iteration longer), the sizes Triton gives them, and a counter
the loop carries picks the next slot each time the op runs."""
from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, IntegerAttr, UnitAttr, i32, i64
from xdsl.ir import Block, Region
from xdsl.rewriter import InsertPoint, Rewriter

from tritium.ttgir.ops import AsyncCopyDescriptorToLocalOp, GlobalScratchAllocOp
from tritium.ttgir.passes._util import with_extra_iter_args
from tritium.ttir.descriptor_ops import DescriptorLoadOp, DescriptorStoreOp, MakeTensorDescriptorOp
from tritium.ttir.ops import AddPtrOp
from tritium.ttgir.layouts import bit_width

from .dialect import TensorMapCreateOp, WarpGroupDotOp
from .tma import MAP_ACQUIRED
from ..runtime.tensor_map import MAP_TYPE_CODES, SWIZZLE_CODES, map_box, map_swizzle

#: bytes of a tensor map, and the alignment of its storage in global memory
MAP_BYTES = 128
MAP_STORAGE_ALIGN = 128


def element_code(t) -> int:
    """The copy engine's code for element type ``t`` (integers and fp8 as unsigned bits)."""
    if isinstance(t, Float16Type):
        name = "FLOAT16"
    elif type(t).__name__ == "BFloat16Type":
        name = "BFLOAT16"
    elif isinstance(t, Float32Type):
        name = "FLOAT32"
    elif isinstance(t, Float64Type):
        name = "FLOAT64"
    else:
        name = {8: "UINT8", 16: "UINT16", 32: "UINT32", 64: "UINT64"}[bit_width(t)]
    return MAP_TYPE_CODES[name]


def _ring_size(op, num_stages: int) -> tuple[int, scf.ForOp | None]:
    """(maps in the op's ring, the loop that carries its counter): one, unless the op sits in a
    loop of a pipelined kernel (``num_stages`` of 2 or more) that copies through maps, directly
    or inside ``scf.if`` branches of it (a map made in a nested ``while`` or reduction body gets
    one map: no counter can leave those)."""
    loop = op.parent_op()
    while isinstance(loop, scf.IfOp):  # the counter is threaded out of branches, nothing else
        loop = loop.parent_op()
    if not isinstance(loop, scf.ForOp) or num_stages < 2:
        return 1, None
    body = list(loop.walk())
    if not any(isinstance(o, (AsyncCopyDescriptorToLocalOp, DescriptorLoadOp, DescriptorStoreOp)) for o in body):
        return 1, None
    ring = max(num_stages - 1, 1) + (1 if any(isinstance(o, WarpGroupDotOp) for o in body) else 0)
    return ring, loop


def _with_extra_result(if_op: scf.IfOp, then_value, else_value) -> scf.IfOp:
    """A copy of ``if_op`` (replacing it) that also yields ``then_value`` / ``else_value``."""
    regions = []
    for region, value in ((if_op.true_region, then_value), (if_op.false_region, else_value)):
        if not region.blocks:
            region.add_block(Block())
            region.blocks[0].add_op(scf.YieldOp())
        y = region.blocks[0].last_op
        y.operands = [*y.operands, value]
        regions.append(region)
    new = scf.IfOp(if_op.cond, [r.type for r in if_op.results] + [then_value.type], Region(), Region())
    for i, region in enumerate(regions):
        region.move_blocks(new.regions[i])
    new.attributes.update(if_op.attributes)
    Rewriter.insert_op(new, InsertPoint.before(if_op))
    for old, res in zip(if_op.results, new.results):
        old.replace_all_uses_with(res)
    if_op.detach()
    if_op.erase()
    return new


class DeviceTensorMaps:
    name = "nvidia-device-tensor-maps"

    def __init__(self, num_stages: int):
        self.num_stages = int(num_stages)

    def run(self, module) -> None:
        for op in [o for o in module.walk() if isinstance(o, MakeTensorDescriptorOp)]:
            ring, loop = _ring_size(op, self.num_stages)
            alloc = GlobalScratchAllocOp(MAP_BYTES * ring, MAP_STORAGE_ALIGN, op.result.type)
            if loop is None:
                Rewriter.insert_op(alloc, InsertPoint.before(op))
                slot = alloc.result
            else:
                Rewriter.insert_op(alloc, InsertPoint.before(loop))
                slot = self._ring_slot(op, alloc.result, loop, ring)
            self._create(op, slot)

    @staticmethod
    def _ring_slot(op, ring_base, loop: scf.ForOp, ring: int):
        """``ring_base`` + 128 x the op's counter, which the loop carries and the op advances."""
        zero = arith.ConstantOp(IntegerAttr(0, i32))
        Rewriter.insert_op(zero, InsertPoint.before(loop))
        new_loop, body = with_extra_iter_args(loop, [zero.result])
        loop.detach()
        for old, res in zip(loop.results, new_loop.results):
            old.replace_all_uses_with(res)
        loop.erase()
        counter = body.args[-1]
        at = InsertPoint.before(op)
        size = arith.ConstantOp(IntegerAttr(MAP_BYTES, i32))
        one = arith.ConstantOp(IntegerAttr(1, i32))
        n = arith.ConstantOp(IntegerAttr(ring, i32))
        offset = arith.MuliOp(counter, size.result)
        slot = AddPtrOp(ring_base, offset.result)
        bumped = arith.AddiOp(counter, one.result)
        wrapped = arith.RemUIOp(bumped.result, n.result)
        for o in (size, one, n, offset, slot, bumped, wrapped):
            Rewriter.insert_op(o, at)
        # the advanced counter leaves every scf.if around the op (the other branch keeps it)
        value, cur = wrapped.result, op
        while (parent := cur.parent_op()) is not new_loop:  # only scf.if between (``_ring_size``)
            taken = cur.parent_region() is parent.true_region
            new_if = _with_extra_result(parent, value if taken else counter, counter if taken else value)
            value, cur = new_if.results[-1], new_if
        y = body.last_op
        y.operands = [*y.operands, value]
        return slot.results[0]

    @staticmethod
    def _create(op: MakeTensorDescriptorOp, slot) -> None:
        elt = op.base.type.pointee_type
        ebytes = max(bit_width(elt) // 8, 1)
        block = op.block_shape
        at = InsertPoint.before(op)
        width = arith.ConstantOp(IntegerAttr(ebytes, i64))
        Rewriter.insert_op(width, at)
        strides = []
        for s in reversed(list(op.strides)[:-1]):
            m = arith.MuliOp(s, width.result)
            Rewriter.insert_op(m, at)
            strides.append(m.result)
        create = TensorMapCreateOp(slot, op.base, list(reversed(list(op.shape))), strides,
                                   list(reversed(map_box(block, ebytes))), element_code(elt),
                                   SWIZZLE_CODES[map_swizzle(block, ebytes)], 1 if op.padding == "nan" else 0)
        create.location = op.location
        Rewriter.insert_op(create, at)
        op.result.replace_all_uses_with(slot)
        op.detach()
        op.erase()
        for use in list(slot.uses):
            if isinstance(use.operation, (DescriptorLoadOp, DescriptorStoreOp, AsyncCopyDescriptorToLocalOp)):
                use.operation.attributes[MAP_ACQUIRED] = UnitAttr()
