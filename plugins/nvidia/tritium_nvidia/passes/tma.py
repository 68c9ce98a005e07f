"""TMA (the Tensor Memory Accelerator, sm_90) on the compiler's side of the lowering: the tile a
descriptor access moves and the TTGIR passes around it.

* The tile's geometry: its bytes, the swizzle the host encodes its map with
  (``runtime/tensor_map.map_swizzle``), its alignment, and where the copy engine puts a box in
  shared memory (:func:`box_encoding`: row-major, or the ``#ttg.nvmma_shared`` layout of the map's
  swizzle).
* The scratch an access needs (:data:`SCRATCH_SIZES`, which the plugin declares through
  ``tritium_scratch_sizes``): the tile followed by one 8-byte mbarrier, with room to align it.
* The passes: :class:`OwnStoreTiles` (before the pipeline), :class:`StoreTilesInPlace` and
  :class:`AcquireMapsOnce` (after it), :class:`DeferStoreWaits` (after allocation), and the
  pipeline's rule for copying a descriptor load straight into its slots (:func:`descriptor_copy`).

``lowering/tma.py`` lowers the ops; it reads the marks these passes leave (:data:`MAP_ACQUIRED`,
:data:`DEFERRED`)."""
from __future__ import annotations

from math import prod

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, UnitAttr, i32
from xdsl.rewriter import InsertPoint, Rewriter

from tritium.conversion.ttgir_to_llvm.shared_ops import row_major_bases
from tritium.ttgir.layouts import bit_width
from tritium.ttgir.ops import (AsyncCopyDescriptorToLocalOp, ConvertLayoutOp, InitBarriersOp, InvalBarriersOp,
                               LocalAllocOp, LocalDeallocOp, MemDescIndexOp, MemDescTransOp, WaitBarrierOp)
from tritium.ttgir.types import MemDescType
from tritium.ttir.descriptor_ops import DescriptorLoadOp, DescriptorStoreOp
from tritium.ttir.memory_ops import LoadOp
from tritium.ttir.ops import CallOp, FuncOp, ReturnOp
from tritium.ttgir.passes.allocate_shared_memory import SCRATCH_ACROSS_LOOPS, outermost_loop
from tritium.ttgir.passes.membar import Membar
from tritium.ttgir.passes.software_pipeline import barrier_type
from tritium.ttgir.scratch import convert_scratch_gathering

from .dialect import BulkStoreWaitOp, TensorMapAcquireOp, TensorMapCreateOp, WarpGroupDotOp, WarpGroupDotWaitOp
from .encodings import NvidiaMmaEncodingAttr, NVMMASharedEncodingAttr
from ..options import capability
from ..runtime.tensor_map import map_swizzle


#: the copy engine's shared-memory operand alignment (bytes), and a swizzled box's (one whole
#: pattern: the hardware swizzles on address bits)
TILE_ALIGN = 128
SWIZZLED_TILE_ALIGN = 1024
_BARRIER_BYTES = 16


def tile_type(op):
    return op.results[0].type if isinstance(op, DescriptorLoadOp) else op.value.type


def tile_bytes(t) -> int:
    return prod(t.get_shape()) * max(bit_width(t.element_type) // 8, 1)


def tile_swizzle(t) -> int:
    """The swizzle (bytes, 0 for none) the host encodes this tile's map with (``map_swizzle``)."""
    return map_swizzle(t.get_shape(), max(bit_width(t.element_type) // 8, 1))


def tile_align(t) -> int:
    return SWIZZLED_TILE_ALIGN if tile_swizzle(t) else TILE_ALIGN


def scratch_bytes(op) -> int:
    """Tile + mbarrier, with room to round the buffer's start up to the tile's alignment."""
    t = tile_type(op)
    return tile_align(t) + tile_bytes(t) + _BARRIER_BYTES


#: where ``ttng.tensormap_create`` builds a map: 128 bytes on a 128-byte boundary
MAP_BUILD_BYTES = 2 * 128

#: the plugin's scratch rules (``tritium_scratch_sizes``): TMA's, and conversions into an 8-bit
#: matrix operand that fetch words across lanes (``NVIDIATargetInfo.warp_gather``) take none
SCRATCH_SIZES = {"tt.descriptor_load": scratch_bytes, "tt.descriptor_store": scratch_bytes,
                 "ttng.tensormap_create": lambda op: MAP_BUILD_BYTES,
                 "ttg.convert_layout": convert_scratch_gathering}


class _RowMajor:
    """A placement in the ``offset_bases`` form the shared-memory helpers vectorise: row-major,
    which is where the copy engine puts an unswizzled box."""

    def __init__(self, ebytes: int):
        self.ebytes = ebytes

    def offset_bases(self, shape):
        return row_major_bases(shape, self.ebytes)


def box_encoding(t):
    """Where the copy engine puts the box of tile type ``t`` in shared memory: row-major, or for a
    swizzled map the ``#ttg.nvmma_shared`` layout of that swizzle (rows of ``swizzle`` bytes, each
    16-byte chunk's index XORed with the row's within the 8-row pattern)."""
    swz = tile_swizzle(t)
    if swz:
        return NVMMASharedEncodingAttr(swz, False, max(bit_width(t.element_type), 8))
    return _RowMajor(max(bit_width(t.element_type) // 8, 1))


#: on a descriptor access whose map ``AcquireMapsOnce`` acquired at the kernel's start
MAP_ACQUIRED = "tritium.map_acquired"


class AcquireMapsOnce:
    """Every bulk tensor copy must see its map through the tensor-map proxy: a map the host wrote
    needs ``fence.proxy.tensormap::generic.acquire`` by the issuing thread before its first use.
    Where a map is known at the kernel's start (made in the function's entry block, as a host
    descriptor's address argument is), this pass puts one ``ttng.tensormap_acquire`` there and
    marks the map's accesses (``MAP_ACQUIRED``), which then fence no more: the pipelined copies
    had no fence of their own, and a persistent kernel's store fenced once per tile, on thread 0's
    way from one tile's store to the next tile's copies.  Other maps keep their per-access fence."""

    name = "nvidia-acquire-maps-once"
    USERS = (DescriptorLoadOp, DescriptorStoreOp, AsyncCopyDescriptorToLocalOp)

    def run(self, module) -> None:
        from xdsl.ir import Block
        from xdsl.rewriter import InsertPoint, Rewriter
        for func in [op for op in module.walk() if isinstance(op, FuncOp)]:
            if not func.body.blocks:
                continue
            entry = func.body.blocks[0]
            maps: dict = {}
            for op in func.walk():
                if isinstance(op, self.USERS):
                    maps.setdefault(op.desc, []).append(op)
            for m, users in maps.items():
                if any(isinstance(u.operation, TensorMapCreateOp) for u in m.uses):
                    continue  # made by the kernel: its create publishes it (``tensor_maps``)
                owner = m.owner
                if isinstance(owner, Block):
                    if owner is not entry:
                        continue
                    at = InsertPoint.at_start(entry)
                elif owner.parent_block() is entry:
                    at = InsertPoint.after(owner)
                else:
                    continue
                Rewriter.insert_op(TensorMapAcquireOp(m), at)
                for op in users:
                    op.attributes[MAP_ACQUIRED] = UnitAttr()


#: on a ``tt.descriptor_store`` whose wait for the engine's read ``DeferStoreWaits`` moved
DEFERRED = "tritium.store_wait_deferred"

class DeferStoreWaits:
    """A descriptor store need not wait for the engine to read its tile until something writes
    those bytes again: this pass (after allocation, before membar) puts ``ttng.bulk_store_wait``
    before every op of the function that may write shared memory overlapping a store's tile (a
    call: any), and before each return (a block's shared memory must outlive the engine's read),
    and marks the stores, whose lowering then issues no wait of its own.  A persistent matmul's
    next tile then issues its copies into the bytes the store does not use while the engine reads
    it; a wait with no store outstanding returns at once.  ``membar`` sees the store's tile read
    and the later write as before, so the block barrier it puts between them follows the wait (a
    wait also goes before each loop around such a write, where membar may put that barrier)."""

    name = "nvidia-defer-store-waits"

    def run(self, module) -> None:
        from xdsl.dialects.builtin import UnitAttr
        from xdsl.rewriter import InsertPoint, Rewriter
        reader = Membar(scratch_rules=SCRATCH_SIZES)
        reader.whole = 1 << 30  # only ops with placed buffers matter here
        for func in [op for op in module.walk() if isinstance(op, FuncOp)]:
            stores = [op for op in func.walk() if isinstance(op, DescriptorStoreOp)]
            tiles = [a for op in stores for a in reader.accesses(op) if not a.write]
            if not stores or len(tiles) != len(stores):
                continue  # a store without a placed tile: leave its own wait
            waited: set = set()
            for op in list(func.walk()):
                if isinstance(op, (ReturnOp, CallOp)) or any(
                        a.conflicts(t) and _needs_wait(s, op)  # tiles are reads: a write
                        for a in reader.accesses(op) for s, t in zip(stores, tiles)):
                    # before the op, and before each loop around it: membar may put the block
                    # barrier the first iteration needs before the loop, which must follow a wait
                    at, targets = op, [op]
                    while (at := at.parent_op()) is not None and at is not func:
                        if isinstance(at, (scf.ForOp, scf.WhileOp)):
                            targets.append(at)
                    for target in targets:
                        if target not in waited:
                            waited.add(target)
                            Rewriter.insert_op(BulkStoreWaitOp(), InsertPoint.before(target))
            for op in stores:
                op.attributes[DEFERRED] = UnitAttr()


def _needs_wait(store, op) -> bool:
    """Whether ``op`` (which writes bytes of ``store``'s tile) needs the engine's read of that tile
    waited for first. Always, except where ``op`` is the store itself and no loop holds it: then
    no earlier run of the store can be outstanding. That wait, in a one-tile kernel's epilogue,
    made ptxas serialize the main loop's wgmma (C7514: each waited for before the next; 128x128x64
    with 4 warps and 3 stages ran at 0.82 of Triton).

    Writes a store can only follow (the main loop's copies into slots the epilogue's tile reuses)
    keep their wait too, though none can be outstanding there: without them the 8-warp 128x128x64
    matmul measured 0.92x at 8192^3 on the H200 (interleaved A/B; 4096^3: 0.99x), not yet
    understood, so they stay until it is.  Measured again with the host-descriptor matmul and
    Triton 3.6's attention tutorial: 128x128x64 w8 s3 at 8192^3 0.962x Triton without them,
    1.118x with; attention d128 128x128 w8 1.128 / 1.161, d64 causal 0.974 / 0.959."""
    return store is not op or outermost_loop(op) is not op


#: with the deferred waits: a store's tile in a loop gets bytes of its own over that loop
#: (``OwnStoreTiles``), where they fit beside the inner loops' slots within this many bytes (an
#: sm_90 block may take 227 KB)
OWN_STORE_TILE_LIMIT = 220 * 1024


class OwnStoreTiles:
    """A persistent kernel stores tile ``i`` while tile ``i + 1``'s copies are issued.  Where the
    store's tile shares bytes with the next tile's slots, thread 0 must wait for the copy engine to
    read it before those copies go (the wait ``DeferStoreWaits`` moves can go no later).  This pass
    (before the pipeline, which then counts the tile among the loop's other buffers and gives the
    inner loop no spare slot where both do not fit) marks each ``tt.descriptor_store`` inside a loop
    with ``SCRATCH_ACROSS_LOOPS``, so its tile is its own over the outermost loop: the wait then
    goes before the next tile's store, as in Triton's persistent matmul, and the engine reads the
    tile while the next tile's main loop runs.  Only where ``num_stages`` slots of every inner
    loop's tile loads and the store's tile fit in ``OWN_STORE_TILE_LIMIT``."""

    name = "nvidia-own-store-tiles"

    def __init__(self, num_stages: int):
        self.num_stages = max(int(num_stages), 1)

    def run(self, module) -> None:
        from xdsl.dialects.builtin import TensorType, UnitAttr
        for op in [o for o in module.walk() if isinstance(o, DescriptorStoreOp)]:
            top = outermost_loop(op)
            if top is op:
                continue
            slots = 0
            for load in top.walk():
                if not isinstance(load, (LoadOp, DescriptorLoadOp)):
                    continue
                t = load.results[0].type
                loop = load.parent_op()
                while not isinstance(loop, (scf.ForOp, scf.WhileOp)):  # the loop whose slots the tile would take
                    loop = loop.parent_op()
                if isinstance(t, TensorType) and len(t.get_shape()) >= 2 and loop is not top \
                        and not loop.is_ancestor(op):
                    slots += tile_bytes(t)
            if self.num_stages * slots + scratch_bytes(op) <= OWN_STORE_TILE_LIMIT:
                op.attributes[SCRATCH_ACROSS_LOOPS] = UnitAttr()


class StoreTilesInPlace:
    """``tt.descriptor_store`` writes its tile into shared memory itself, from whatever distributed
    layout its value has (:func:`lower_descriptor_store`), so the ``ttg.convert_layout`` that
    ``coalesce`` put before it (to the blocked layout a global store would want) only adds a round
    trip through shared memory and a barrier.  Where a tensor-core result is stored into a swizzled
    tile (``tile_swizzle``), the conversion goes: each warp's 8-row pieces of the accumulator land
    in eight different 16-byte columns of the swizzle, so the direct writes meet no bank conflicts
    (a persistent matmul's epilogue: one pass over shared memory instead of three)."""

    name = "nvidia-store-tiles-in-place"

    def run(self, module) -> None:
        for op in [o for o in module.walk() if isinstance(o, DescriptorStoreOp)]:
            cvt = op.value.owner
            if not isinstance(cvt, ConvertLayoutOp) or len(list(cvt.results[0].uses)) != 1:
                continue
            src = cvt.operands[0]
            if not isinstance(getattr(src.type, "encoding", None), NvidiaMmaEncodingAttr) or not tile_swizzle(src.type):
                continue
            op.operands = [*op.operands[:-1], src]
            cvt.detach()
            cvt.erase()


class TilesIntoShared:
    """A tile loaded through a descriptor only to be put in shared memory, ``ttg.local_alloc(
    tt.descriptor_load)`` outside any loop (attention's Q, which every iteration's first ``wgmma``
    reads), becomes one copy of the engine straight into the allocation, completing on a barrier
    of its own: no trip through registers and shared memory's store path, and no stores before a
    warp-specialized loop (the producer warps would run them too).  The copy is issued where the
    load was; the wait goes before the first op of the block that reads the tile, and the barrier
    is retired after the last (membar puts a block barrier between the two).  Taken where the
    engine's box placement is the allocation's layout (:func:`descriptor_copy`'s rule, the
    pipeline's for its slots); a load inside a loop is the pipeline's."""

    name = "nvidia-tiles-into-shared"

    def __init__(self, target):
        self.accepts = descriptor_copy(target)

    def run(self, module) -> None:
        if self.accepts is None:
            return
        for load in [o for o in module.walk() if isinstance(o, DescriptorLoadOp)]:
            allocs = [u.operation for u in load.result.uses]
            if not allocs or not all(isinstance(a, LocalAllocOp) and a.parent_block() is load.parent_block()
                                     and outermost_loop(a) is a and a.result.type == allocs[0].result.type
                                     for a in allocs):
                continue
            if self.accepts(load, allocs[0].result.type, False) and any(a.result.uses for a in allocs):
                self._rewrite(load, allocs)

    @staticmethod
    def _rewrite(load, allocs: list) -> None:
        """One copy for every allocation of the tile (a tile two loops read, each with its own
        ``local_alloc`` from accelerate-matmul, is copied once)."""
        block = load.parent_block()
        t = allocs[0].result.type
        buf = LocalAllocOp(MemDescType(t.get_shape(), t.element_type, t.encoding, t.memory_space, mutable=True))
        bar = LocalAllocOp(barrier_type(1))
        zero = arith.ConstantOp(IntegerAttr(0, i32))
        true = arith.ConstantOp(IntegerAttr(1, IntegerType(1)))
        copy = AsyncCopyDescriptorToLocalOp(load.desc, list(load.indices), buf.results[0], bar.results[0],
                                            zero.result, true.result)
        Rewriter.insert_op([buf, bar, InitBarriersOp(bar.results[0], 1), zero, true, copy], InsertPoint.before(load))
        readers = {block.find_ancestor_op_in_block(u.operation) for a in allocs for u in a.result.uses}
        ordered = [op for op in block.ops if op in readers]
        for a in allocs:
            a.result.replace_all_uses_with(buf.results[0])
        Rewriter.insert_op(WaitBarrierOp(bar.results[0], zero.result, zero.result), InsertPoint.before(ordered[0]))
        Rewriter.insert_op(InvalBarriersOp(bar.results[0]), InsertPoint.after(ordered[-1]))
        for op in (*allocs, load):
            op.detach()
            op.erase()


# ---- pipelined copies: the pipeline pass's slots, each completed on an mbarrier of its own --------

#: on a ``ttg.async_copy_descriptor_to_local`` that needs no proxy fence before it (``UnfencedCopies``)
UNFENCED = "tritium.unfenced_copy"
#: on one that keeps its fence at the function's top level: fenced even where its iteration does not
#: exist, so that every later copy may count on it
FENCE_ALWAYS = "tritium.fence_always"
#: ops that touch a buffer only through the async proxy, or not at all (views, the wgmma wait)
_ASYNC_USERS = (WarpGroupDotOp, WarpGroupDotWaitOp, AsyncCopyDescriptorToLocalOp, LocalDeallocOp)


def _async_users_only(view) -> bool:
    """Whether every user of the buffer that ``view`` is a view of (through ``ttg.memdesc_index`` /
    ``memdesc_trans``) is a wgmma, a copy of the engine or a dealloc.  An initial value, or a buffer
    passed on through a loop or a function: no."""
    root = view
    while isinstance(root.owner, (MemDescIndexOp, MemDescTransOp)):
        root = root.owner.operands[0]
    if not isinstance(root.owner, LocalAllocOp) or root.owner.src is not None:
        return False
    todo = [root]
    while todo:
        for use in todo.pop().uses:
            user = use.operation
            if isinstance(user, (MemDescIndexOp, MemDescTransOp)):
                todo.append(user.results[0])
            elif not isinstance(user, _ASYNC_USERS):
                return False
    return True


def _share_loop(a, b) -> bool:
    """Whether a loop holds both ops (a run of ``a`` in one iteration may follow ``b`` of another):
    they have the same outermost loop."""
    outer = outermost_loop(a)
    return outer is not a and outer is outermost_loop(b)


class UnfencedCopies:
    """A copy of the engine into a buffer needs ``fence.proxy.async`` before it only where an
    ordinary (generic-proxy) access of the same bytes may precede it with no fence between.  This
    pass (after allocation) marks the copies where none can: every user of the buffer is a wgmma or
    a copy, and every other op whose bytes overlap it (a conversion's scratch, a tensor map staged
    in shared memory, an epilogue tile placed over the slots) either cannot run before the copy
    (it is later in the function and shares no loop with it) or is followed, before the copy, by a
    fenced copy into bytes it overlaps at the function's top level (which runs on every path, its
    fence then taken whether or not its iteration exists: ``FENCE_ALWAYS``).  So the pipeline's
    prologue copies fence once after a tensor map was built in the slots' bytes and the loop's do
    not; a persistent kernel's epilogue inside the tile loop, over the slots' bytes, keeps the
    loop's fences.  On sm_90 the fence is a ``MEMBAR.ALL.CTA``, which holds the issuing warp, and
    with it its warp group's next wgmma, until the warp's earlier memory accesses complete (Triton
    3.6's attention tutorial at d64, 128x64 tiles: 0.977 -> 0.986 of Triton at N 4096, 0.995 ->
    1.017 at 16384)."""

    name = "nvidia-unfenced-copies"

    def run(self, module) -> None:
        reader = Membar(scratch_rules=SCRATCH_SIZES)
        for func in [op for op in module.walk() if isinstance(op, FuncOp)]:
            ops = list(func.walk())
            copies = [op for op in ops if isinstance(op, AsyncCopyDescriptorToLocalOp)]
            if not copies:
                continue
            shared = func.attributes.get("ttg.shared")
            reader.whole = max(shared.value.data if shared is not None else 1 << 30, 1)
            order = {op: i for i, op in enumerate(ops)}
            generic = [(op, a) for op in ops if not isinstance(op, _ASYNC_USERS) for a in reader.accesses(op)]
            fences = []  # (copy, its bytes): fenced at the function's top level, on every path
            for copy in copies:
                writes = reader.accesses(copy)
                unfenced = _async_users_only(copy.result) and not any(
                    self._unordered(op, a, copy, writes, fences, order) for op, a in generic)
                if unfenced:
                    copy.attributes[UNFENCED] = UnitAttr()
                elif copy.parent_op() is func:
                    copy.attributes[FENCE_ALWAYS] = UnitAttr()
                    fences.append((copy, writes))

    @staticmethod
    def _unordered(op, access, copy, writes, fences, order) -> bool:
        """Whether the ordinary access ``access`` of ``op`` may precede ``copy`` into bytes it
        overlaps with no fence between them."""
        if not any(access.conflicts(w) for w in writes):
            return False
        if _share_loop(op, copy):
            return True
        if order[op] > order[copy]:
            return False
        # a top-level fenced copy between them into bytes the access overlaps (so membar has put a
        # block barrier between the access and that copy's fence)
        return not any(order[op] < order[f] < order[copy] and any(access.conflicts(w) for w in fw)
                       for f, fw in fences)


def descriptor_copy(target):
    """The pipeline pass's ``descriptor_copy(load, buffer_type, transposed) -> bool`` for ``target``:
    a ``tt.descriptor_load`` may be copied by the engine straight into a slot of ``buffer_type``
    when the engine's box placement (:func:`box_encoding`) is that buffer's (``transposed``: the
    buffer holds the box's transpose, as ``tl.dot(a, b.T)``'s ``B``), and each slot starts on the
    box's alignment."""
    if capability(target) < 90:
        return None

    def accepts(load, buf_t, transposed: bool) -> bool:
        tile = load.results[0].type
        enc = getattr(buf_t, "encoding", None)
        if len(tile.get_shape()) != 2 or not hasattr(enc, "offset_bases") or buf_t.element_type != tile.element_type:
            return False
        if buf_t.size_in_bytes() % tile_align(tile):
            return False
        box = box_encoding(tile).offset_bases(tile.get_shape())
        want = [box[1], box[0]] if transposed else box
        return [list(r) for r in enc.offset_bases(buf_t.get_shape())] == [list(r) for r in want]
    return accepts

__all__ = ["DEFERRED", "MAP_ACQUIRED", "SCRATCH_SIZES", "SWIZZLED_TILE_ALIGN", "TILE_ALIGN",
           "AcquireMapsOnce", "DeferStoreWaits", "FENCE_ALWAYS", "UNFENCED", "UnfencedCopies",
           "OwnStoreTiles", "StoreTilesInPlace", "TilesIntoShared", "box_encoding", "descriptor_copy",
           "scratch_bytes", "tile_align", "tile_bytes", "tile_swizzle", "tile_type"]
