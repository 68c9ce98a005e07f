"""TMA (the Tensor Memory Accelerator, sm_90): lowering of ``tt.descriptor_load`` /
``tt.descriptor_store`` whose descriptor is a CUtensorMap built on the host (``tensor_map.py``).

One access is self-contained, in a scratch buffer of the op's own (the allocation pass sizes it
with :data:`SCRATCH_SIZES`, which the plugin declares through ``tritium_scratch_sizes``): the tile followed by one 8-byte mbarrier.  The tile is
laid out as the map's swizzle says (``tensor_map.map_swizzle``: a 2-d box whose rows are 32, 64
or 128 bytes is swizzled like a ``#ttg.nvmma_shared`` buffer, 1024-byte aligned, and a 2-d block
whose rows are a multiple of 128 bytes is moved as 128-byte columns, each such a swizzled box, one
after another as that layout has them (``tensor_map.map_box``); any other box row-major, 128-byte
aligned, as the copy engine requires).

load::

    fence.proxy.async.shared::cta; bar.sync   (the scratch's earlier users are done)
    thread 0: mbarrier.init [bar], 1; fence.mbarrier_init
    bar.sync                                  (every thread sees the initialised barrier)
    thread 0: fence.proxy.tensormap::generic.acquire [map]   (unless acquired at the kernel's
              start: ``AcquireMapsOnce``)
              mbarrier.arrive.expect_tx [bar], <tile bytes>
              cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes
    all:      mbarrier.try_wait.parity [bar], 0 (loop)   -> the tile is in shared memory
    all:      read the tile into the result's registers
    bar.sync; thread 0: mbarrier.inval [bar]

The barrier is initialised and invalidated around each access, so its phase is always 0 when
waited on.  store: every thread writes its registers into the tile and orders them for the copy
engine (``fence.proxy.async.shared::cta``), ``bar.sync``, then thread 0 issues
``cp.async.bulk.tensor ... global.shared::cta.bulk_group``, commits, and waits until the engine
has read the tile (``wait_group.read``: the global writes complete on their own, visible to
later kernels; as in Triton, a load of the same memory later in the same kernel is not ordered
after them).
Coordinates are given innermost first, as the map's dimensions are."""
from __future__ import annotations

from math import prod

import llvmlite.ir as ir

from tritium.conversion.ttgir_to_llvm.lowering import FunctionLowering
from tritium.conversion.ttgir_to_llvm.shared_ops import read_linear, write_linear
from tritium.conversion.ttgir_to_llvm.types import I32, I64, const
from tritium.ttgir.layouts import bit_width
from tritium.ttgir.ops import ConvertLayoutOp
from tritium.ttgir.passes.allocate_shared_memory import SCRATCH_ACROSS_LOOPS, outermost_loop
from tritium.ttgir.passes.membar import Membar

from .dialect import BulkStoreWaitOp, TensorMapAcquireOp
from .encodings import NvidiaMmaEncodingAttr, NVMMASharedEncodingAttr
from .options import capability
from .tensor_map import map_box, map_box_count, map_swizzle


#: the copy engine's shared-memory operand alignment (bytes), and a swizzled box's (one whole
#: pattern: the hardware swizzles on address bits)
TILE_ALIGN = 128
SWIZZLED_TILE_ALIGN = 1024
_BARRIER_BYTES = 16


def _tile_type(op):
    return op.results[0].type if op.name == "tt.descriptor_load" else op.value.type


def tile_bytes(t) -> int:
    return prod(t.get_shape()) * max(bit_width(t.element_type) // 8, 1)


def tile_swizzle(t) -> int:
    """The swizzle (bytes, 0 for none) the host encodes this tile's map with (``map_swizzle``)."""
    return map_swizzle(t.get_shape(), max(bit_width(t.element_type) // 8, 1))


def tile_align(t) -> int:
    return SWIZZLED_TILE_ALIGN if tile_swizzle(t) else TILE_ALIGN


def scratch_bytes(op) -> int:
    """Tile + mbarrier, with room to round the buffer's start up to the tile's alignment."""
    t = _tile_type(op)
    return tile_align(t) + tile_bytes(t) + _BARRIER_BYTES


#: the plugin's scratch rules (``tritium_scratch_sizes``)
SCRATCH_SIZES = {"tt.descriptor_load": scratch_bytes, "tt.descriptor_store": scratch_bytes}


class _RowMajor:
    """A placement in the ``offset_bases`` form the shared-memory helpers vectorise: row-major,
    which is where the copy engine puts an unswizzled box."""

    def __init__(self, ebytes: int):
        self.ebytes = ebytes

    def offset_bases(self, shape):
        out, stride = [], self.ebytes
        for s in reversed(shape):
            out.insert(0, [stride << bit for bit in range(max(int(s) - 1, 0).bit_length())])
            stride *= int(s)
        return out


def box_encoding(t):
    """Where the copy engine puts the box of tile type ``t`` in shared memory: row-major, or for a
    swizzled map the ``#ttg.nvmma_shared`` layout of that swizzle (rows of ``swizzle`` bytes, each
    16-byte chunk's index XORed with the row's within the 8-row pattern)."""
    swz = tile_swizzle(t)
    if swz:
        return NVMMASharedEncodingAttr(swz, False, max(bit_width(t.element_type), 8))
    return _RowMajor(max(bit_width(t.element_type) // 8, 1))


class _Buffer:  # what read_linear / write_linear ask of a memdesc type
    def __init__(self, t):
        self.encoding = box_encoding(t)


def _asm(b: ir.IRBuilder, text: str, constraints: str, args: list):
    """Inline PTX that touches memory: the clobber keeps LLVM's own shared-memory accesses on
    their side of it (the tile's reads after the wait, its writes before the fence)."""
    fty = ir.FunctionType(ir.VoidType(), [a.type for a in args])
    constraints = f"{constraints},~{{memory}}" if constraints else "~{memory}"
    return b.asm(fty, text, constraints, args, True)


def _tile_and_barrier(fl: FunctionLowering, op):
    """The aligned tile pointer and the barrier's 32-bit shared address."""
    b = fl.builder
    raw = fl.shared_ptr(fl.alloc_offset(op))
    addr = b.ptrtoint(raw, I32)
    pad = b.and_(b.sub(const(I32, 0), addr), const(I32, tile_align(_tile_type(op)) - 1))
    tile = b.gep(raw, [pad], source_etype=ir.IntType(8))
    tile_addr = b.add(addr, pad)
    bar_addr = b.add(tile_addr, const(I32, tile_bytes(_tile_type(op))))
    return tile, tile_addr, bar_addr


def _map_address(fl: FunctionLowering, tensor_map) -> ir.Value:
    """The generic address (i64) of the tensor map ``tensor_map`` (a value the kernel got as a
    global pointer)."""
    b = fl.builder
    p = fl.get(tensor_map)
    if isinstance(p.type, ir.PointerType) and p.type.addrspace != 0:
        p = b.addrspacecast(p, ir.PointerType())
    return b.ptrtoint(p, I64)


def _coords(fl: FunctionLowering, op) -> list:
    """The tile's i32 coordinates, innermost dimension first (the map's order)."""
    return [fl.get(v) for v in reversed(list(op.indices))]


def _copy_operands(first: int, n: int) -> str:
    return "{" + ", ".join(f"${first + i}" for i in range(n)) + "}"


def _thread0(fl: FunctionLowering):
    return fl.builder.if_then(fl.first_thread_pred())


def _block_shape(t) -> list:
    """The descriptor's block shape for tile (or slot) type ``t``: a slot holding the block's
    transpose (``nvmma_shared`` with ``transposed``: ``tl.dot(a, b.T)``'s ``B``) has it reversed."""
    shape = list(t.get_shape())
    return shape[::-1] if getattr(getattr(t, "encoding", None), "transposed", False) else shape


def _boxes(b: ir.IRBuilder, t, dst, coords: list) -> list:
    """The map's boxes making up tile ``t`` (``tensor_map.map_box``): (shared address, coordinates
    innermost first) each; one box, or 128-byte columns side by side, each a whole swizzled block
    of the tile's ``nvmma_shared`` layout."""
    ebytes = max(bit_width(t.element_type) // 8, 1)
    shape = _block_shape(t)
    n = map_box_count(shape, ebytes)
    if n == 1:
        return [(dst, coords)]
    width = map_box(shape, ebytes)[-1]
    box_bytes = tile_bytes(t) // n
    return [(b.add(dst, const(I32, j * box_bytes)) if j else dst,
             [b.add(coords[0], const(I32, j * width)) if j else coords[0]] + coords[1:]) for j in range(n)]


def _expect_and_copy(b: ir.IRBuilder, t, dst, tmap, bar, coords: list) -> None:
    """(One thread) expect the tile's bytes on barrier ``bar``, then copy the boxes at ``coords``
    (innermost first) of map ``tmap`` to shared address ``dst``, completing on ``bar``."""
    rank = len(t.get_shape())
    _asm(b, f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], {tile_bytes(t)};", "r", [bar])
    for box_dst, box_coords in _boxes(b, t, dst, coords):
        _asm(b, f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes "
                f"[$0], [$1, {_copy_operands(3, rank)}], [$2];",
             ",".join(["r", "l", "r"] + ["r"] * rank), [box_dst, tmap, bar] + box_coords)


def _wait_parity(b: ir.IRBuilder, bar, phase) -> None:
    """Every thread: spin until barrier ``bar`` completes the phase of parity ``phase`` (an int
    or an i32 value).  Not ``.uni``: the lanes need not agree."""
    if isinstance(phase, int):
        text, constraints, args = f"done, [$0], {phase}", "r", [bar]
    else:
        text, constraints, args = "done, [$0], $1", "r,r", [bar, phase]
    _asm(b, "{\n.reg .pred done;\nwait:\n"
            f"mbarrier.try_wait.parity.shared::cta.b64 {text};\n"
            "@!done bra wait;\n}", constraints, args)


def lower_descriptor_load(fl: FunctionLowering, op) -> None:
    b = fl.builder
    t = op.results[0].type
    tile, tile_addr, bar = _tile_and_barrier(fl, op)
    tmap = _map_address(fl, op.desc)
    coords = _coords(fl, op)
    # the scratch's earlier ordinary accesses come before the copy engine's writes
    _asm(b, "fence.proxy.async.shared::cta;", "", [])
    fl.target.barrier(b)
    with _thread0(fl):
        _asm(b, "mbarrier.init.shared::cta.b64 [$0], 1;", "r", [bar])
        _asm(b, "fence.mbarrier_init.release.cluster;", "", [])
    fl.target.barrier(b)
    with _thread0(fl):
        _acquire_unless_done(b, op, tmap)
        _expect_and_copy(b, t, tile_addr, tmap, bar, coords)
    _wait_parity(b, bar, 0)
    fl.set(op.results[0], read_linear(fl, tile, t, _Buffer(t), t.get_shape()))
    fl.target.barrier(b)
    with _thread0(fl):
        _asm(b, "mbarrier.inval.shared::cta.b64 [$0];", "r", [bar])


def lower_descriptor_store(fl: FunctionLowering, op) -> None:
    b = fl.builder
    t = op.value.type
    rank = len(t.get_shape())
    tile, tile_addr, _ = _tile_and_barrier(fl, op)
    tmap = _map_address(fl, op.desc)
    coords = _coords(fl, op)
    fl.target.barrier(b)
    write_linear(fl, tile, fl.get(op.value), t, _Buffer(t), t.get_shape())
    # the copy engine reads through the async proxy: order each thread's writes before it
    _asm(b, "fence.proxy.async.shared::cta;", "", [])
    fl.target.barrier(b)
    with _thread0(fl):
        _acquire_unless_done(b, op, tmap)
        for box_src, box_coords in _boxes(b, t, tile_addr, coords):
            _asm(b, f"cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group [$0, {_copy_operands(2, rank)}], [$1];",
                 ",".join(["l", "r"] + ["r"] * rank), [tmap, box_src] + box_coords)
        _asm(b, "cp.async.bulk.commit_group;", "", [])
        if DEFERRED not in op.attributes:
            # until the engine has read the tile: the scratch is free for the next user (after
            # the barrier membar places before it); the writes to global memory complete in the
            # background, as Triton's stores do
            _asm(b, "cp.async.bulk.wait_group.read 0;", "", [])


#: on a descriptor access whose map ``AcquireMapsOnce`` acquired at the kernel's start
MAP_ACQUIRED = "tritium.map_acquired"


def _acquire_unless_done(b: ir.IRBuilder, op, tmap) -> None:
    if MAP_ACQUIRED not in op.attributes:
        _asm(b, "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", "l", [tmap])


def lower_tensormap_acquire(fl: FunctionLowering, op) -> None:
    # the map was written by the host's copy before the launch: system scope, as CUDA's guide asks
    # for a map in global memory modified with cudaMemcpy
    tmap = _map_address(fl, op.map)
    with _thread0(fl):
        _asm(fl.builder, "fence.proxy.tensormap::generic.acquire.sys [$0], 128;", "l", [tmap])


class AcquireMapsOnce:
    """Every bulk tensor copy must see its map through the tensor-map proxy: a map the host wrote
    needs ``fence.proxy.tensormap::generic.acquire`` by the issuing thread before its first use.
    Where a map is known at the kernel's start (made in the function's entry block, as a host
    descriptor's address argument is), this pass puts one ``ttng.tensormap_acquire`` there and
    marks the map's accesses (``MAP_ACQUIRED``), which then fence no more: the pipelined copies
    had no fence of their own, and a persistent kernel's store fenced once per tile, on thread 0's
    way from one tile's store to the next tile's copies.  Other maps keep their per-access fence."""

    name = "nvidia-acquire-maps-once"
    USERS = ("tt.descriptor_load", "tt.descriptor_store", "ttg.async_copy_descriptor_to_local")

    def run(self, module) -> None:
        from xdsl.dialects.builtin import UnitAttr
        from xdsl.ir import Block
        from xdsl.rewriter import InsertPoint, Rewriter
        for func in [op for op in module.walk() if op.name == "tt.func"]:
            if not func.body.blocks:
                continue
            entry = func.body.blocks[0]
            maps: dict = {}
            for op in func.walk():
                if op.name in self.USERS:
                    maps.setdefault(op.desc, []).append(op)
            for m, users in maps.items():
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


def lower_bulk_store_wait(fl: FunctionLowering, op) -> None:
    with _thread0(fl):
        _asm(fl.builder, "cp.async.bulk.wait_group.read 0;", "", [])


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
        for func in [op for op in module.walk() if op.name == "tt.func"]:
            stores = [op for op in func.walk() if op.name == "tt.descriptor_store"]
            tiles = [a for op in stores for a in reader.accesses(op) if not a.write]
            if not stores or len(tiles) != len(stores):
                continue  # a store without a placed tile: leave its own wait
            waited: set = set()
            for op in list(func.walk()):
                if op.name in ("tt.return", "tt.call") or any(
                        a.conflicts(t) for a in reader.accesses(op) for t in tiles):  # tiles are reads: a write
                    # before the op, and before each loop around it: membar may put the block
                    # barrier the first iteration needs before the loop, which must follow a wait
                    at, targets = op, [op]
                    while (at := at.parent_op()) is not None and at is not func:
                        if at.name in ("scf.for", "scf.while"):
                            targets.append(at)
                    for target in targets:
                        if target not in waited:
                            waited.add(target)
                            Rewriter.insert_op(BulkStoreWaitOp(), InsertPoint.before(target))
            for op in stores:
                op.attributes[DEFERRED] = UnitAttr()


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
        for op in [o for o in module.walk() if o.name == "tt.descriptor_store"]:
            top = outermost_loop(op)
            if top is op:
                continue
            slots = 0
            for load in top.walk():
                if load.name not in ("tt.load", "tt.descriptor_load"):
                    continue
                t = load.results[0].type
                loop = load.parent_op()
                while loop.name != "scf.for":  # the loop whose slots the tile would take
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
        for op in [o for o in module.walk() if o.name == "tt.descriptor_store"]:
            cvt = op.value.owner
            if not isinstance(cvt, ConvertLayoutOp) or len(list(cvt.results[0].uses)) != 1:
                continue
            src = cvt.operands[0]
            if not isinstance(getattr(src.type, "encoding", None), NvidiaMmaEncodingAttr) or not tile_swizzle(src.type):
                continue
            op.operands = [*op.operands[:-1], src]
            cvt.detach()
            cvt.erase()


# ---- pipelined copies: the pipeline pass's slots, each completed on an mbarrier of its own --------

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


def _bar_address(fl: FunctionLowering, bars, index) -> ir.Value:
    b = fl.builder
    base = b.ptrtoint(fl.get(bars), I32)
    return b.add(base, b.mul(fl.get(index), const(I32, 8)))


def lower_init_barriers(fl: FunctionLowering, op) -> None:
    b = fl.builder
    base = b.ptrtoint(fl.get(op.bars), I32)
    with _thread0(fl):
        for k in range(op.bars.type.shape[0]):
            _asm(b, f"mbarrier.init.shared::cta.b64 [$0], {op.count.value.data};", "r",
                 [b.add(base, const(I32, 8 * k))])
        # membar puts a block barrier between this and the first wait
        _asm(b, "fence.mbarrier_init.release.cluster;", "", [])


def lower_inval_barriers(fl: FunctionLowering, op) -> None:
    b = fl.builder
    base = b.ptrtoint(fl.get(op.bars), I32)
    with _thread0(fl):
        for k in range(op.bars.type.shape[0]):
            _asm(b, "mbarrier.inval.shared::cta.b64 [$0];", "r", [b.add(base, const(I32, 8 * k))])


def lower_copy_descriptor_to_local(fl: FunctionLowering, op) -> None:
    """Thread 0, where the predicate holds: expect the slot's bytes on its barrier, then the copy
    (completing on that barrier).  The proxy fence orders the block's earlier ordinary reads of the
    slot (which the block barrier before this op finished) before the engine's writes."""
    b = fl.builder
    t = op.result.type
    dst = b.ptrtoint(fl.get(op.result), I32)
    bar = _bar_address(fl, op.bars, op.index)
    coords = _coords(fl, op)
    with b.if_then(b.and_(fl.first_thread_pred(), fl.get(op.pred))):
        _asm(b, "fence.proxy.async.shared::cta;", "", [])
        _expect_and_copy(b, t, dst, _map_address(fl, op.desc), bar, coords)


def lower_wait_barrier(fl: FunctionLowering, op) -> None:
    b = fl.builder
    _wait_parity(b, _bar_address(fl, op.bars, op.index), fl.get(op.phase))


LOWERINGS = {"tt.descriptor_load": lower_descriptor_load, "tt.descriptor_store": lower_descriptor_store,
             "ttng.bulk_store_wait": lower_bulk_store_wait, "ttng.tensormap_acquire": lower_tensormap_acquire,
             "ttg.init_barriers": lower_init_barriers, "ttg.inval_barriers": lower_inval_barriers,
             "ttg.async_copy_descriptor_to_local": lower_copy_descriptor_to_local,
             "ttg.wait_barrier": lower_wait_barrier}

__all__ = ["LOWERINGS", "SWIZZLED_TILE_ALIGN", "TILE_ALIGN", "box_encoding", "descriptor_copy", "scratch_bytes",
           "tile_bytes", "tile_swizzle"]
