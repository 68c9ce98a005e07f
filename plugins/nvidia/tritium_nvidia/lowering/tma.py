"""TMA (the Tensor Memory Accelerator, sm_90): lowering of ``tt.descriptor_load`` /
``tt.descriptor_store`` whose descriptor is a CUtensorMap built on the host
(``runtime/tensor_map.py``), and of the ops the TMA passes (``passes/tma.py``) and the pipeline put
around them.

One access is self-contained, in a scratch buffer of the op's own (the allocation pass sizes it
with ``passes/tma.SCRATCH_SIZES``, which the plugin declares through ``tritium_scratch_sizes``):
the tile followed by one 8-byte mbarrier.  The tile is
laid out as the map's swizzle says (``tensor_map.map_swizzle``: a 2-d box whose rows are 32, 64
or 128 bytes is swizzled like a ``#ttg.nvmma_shared`` buffer, 1024-byte aligned, and a 2-d block
whose rows are a multiple of 128 bytes is moved as 128-byte columns, each such a swizzled box, one
after another as that layout has them, and a block of more than 256 rows as boxes of 256 rows
(``tensor_map.map_boxes``); any other box row-major, 128-byte aligned, as the copy engine
requires).

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

import llvmlite.ir as ir

from tritium.conversion.ttgir_to_llvm.lowering import FunctionLowering
from tritium.conversion.ttgir_to_llvm.matrix_store import tiles_per_placed_store, write_placed_tiles
from tritium.conversion.ttgir_to_llvm.shared_ops import read_linear, write_linear
from tritium.conversion.ttgir_to_llvm.types import I32, I64, const
from tritium.ttgir.layouts import bit_width

from ..passes.tma import DEFERRED, FENCE_ALWAYS, MAP_ACQUIRED, UNFENCED, box_encoding, tile_align, tile_bytes, tile_type
from ..runtime.tensor_map import map_boxes
from ..toolchain.tools import choose_ptx_version


class _Buffer:  # what read_linear / write_linear ask of a memdesc type
    def __init__(self, t):
        self.encoding = box_encoding(t)


def _asm(b: ir.IRBuilder, text: str, constraints: str, args: list):
    """Inline PTX that touches memory: the clobber keeps LLVM's own shared-memory accesses on
    their side of it (the tile's reads after the wait, its writes before the fence)."""
    fty = ir.FunctionType(ir.VoidType(), [a.type for a in args])
    constraints = f"{constraints},~{{memory}}" if constraints else "~{memory}"
    return b.asm(fty, text, constraints, args, True)


def _aligned_scratch(fl: FunctionLowering, op, align: int):
    """The start of ``op``'s shared scratch rounded up to ``align`` bytes (the allocation leaves
    room for it): its pointer and its 32-bit shared address."""
    b = fl.builder
    raw = fl.shared_ptr(fl.alloc_offset(op))
    addr = b.ptrtoint(raw, I32)
    pad = b.and_(b.sub(const(I32, 0), addr), const(I32, align - 1))
    return b.gep(raw, [pad], source_etype=ir.IntType(8)), b.add(addr, pad)


def _tile_and_barrier(fl: FunctionLowering, op):
    """The aligned tile pointer and the barrier's 32-bit shared address."""
    tile, tile_addr = _aligned_scratch(fl, op, tile_align(tile_type(op)))
    bar_addr = fl.builder.add(tile_addr, const(I32, tile_bytes(tile_type(op))))
    return tile, tile_addr, bar_addr


def _address(fl: FunctionLowering, v, addrspace: int = 0) -> ir.Value:
    """The address (i64) of pointer value ``v`` in ``addrspace``: generic (0, how the bulk copies
    name a tensor map the kernel got as a global pointer) or global (the map's storage and the
    tensor's base, as ``tensormap`` instructions name them)."""
    b = fl.builder
    p = fl.get(v)
    if isinstance(p.type, ir.PointerType) and p.type.addrspace != addrspace:
        p = b.addrspacecast(p, ir.PointerType(addrspace=addrspace))
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
    """The map's boxes making up tile ``t`` (``tensor_map.map_boxes``): (shared address, coordinates
    innermost first) each: one box, or boxes of 256 elements of the outermost dimension one after
    another, or 128-byte columns side by side (each a whole swizzled block of the tile's
    ``nvmma_shared`` layout), or both."""
    ebytes = max(bit_width(t.element_type) // 8, 1)
    out = []
    for offset, starts in map_boxes(_block_shape(t), ebytes):
        at = [b.add(c, const(I32, d)) if d else c for c, d in zip(coords, reversed(starts))]
        out.append((b.add(dst, const(I32, offset)) if offset else dst, at))
    return out


def _expect_and_copy(b: ir.IRBuilder, t, dst, tmap, bar, coords: list) -> None:
    """(One thread) expect the tile's bytes on barrier ``bar``, then copy the boxes at ``coords``
    (innermost first) of map ``tmap`` to shared address ``dst``, completing on ``bar``."""
    _expect(b, t, bar)
    _copy_boxes(b, t, dst, tmap, bar, coords)


def _expect(b: ir.IRBuilder, t, bar) -> None:
    _asm(b, f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], {tile_bytes(t)};", "r", [bar])


def _copy_boxes(b: ir.IRBuilder, t, dst, tmap, bar, coords: list, cta_mask: int | None = None) -> None:
    """The copies of :func:`_expect_and_copy`; with ``cta_mask``, into every CTA of the cluster the
    mask names (``.multicast::cluster``), each at the same shared address and completing on its
    own barrier at ``bar``."""
    rank = len(t.get_shape())
    multicast, mask, extra = "", [], []
    if cta_mask is not None:
        multicast, mask, extra = ".multicast::cluster", [ir.Constant(ir.IntType(16), cta_mask)], ["h"]
    for box_dst, box_coords in _boxes(b, t, dst, coords):
        tail = f", ${3 + rank}" if mask else ""
        _asm(b, f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes{multicast} "
                f"[$0], [$1, {_copy_operands(3, rank)}], [$2]{tail};",
             ",".join(["r", "l", "r"] + ["r"] * rank + extra), [box_dst, tmap, bar] + box_coords + mask)


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
    tmap = _address(fl, op.desc)
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
    tmap = _address(fl, op.desc)
    coords = _coords(fl, op)
    fl.target.barrier(b)
    regs = fl.get(op.value)
    bases = box_encoding(t).offset_bases(t.get_shape())
    per_store = tiles_per_placed_store(fl, t, regs[0].type, bases)
    if per_store:  # a 16-bit tensor-core accumulator: stmatrix, a tile row a lane (Triton's form)
        write_placed_tiles(fl, tile, regs, t, bases, per_store)
    else:
        write_linear(fl, tile, regs, t, _Buffer(t), t.get_shape())
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


def _acquire_unless_done(b: ir.IRBuilder, op, tmap) -> None:
    if MAP_ACQUIRED not in op.attributes:
        _asm(b, "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", "l", [tmap])


def lower_tensormap_acquire(fl: FunctionLowering, op) -> None:
    # the map was written by the host's copy before the launch: system scope, as CUDA's guide asks
    # for a map in global memory modified with cudaMemcpy
    tmap = _address(fl, op.map)
    with _thread0(fl):
        _asm(fl.builder, "fence.proxy.tensormap::generic.acquire.sys [$0], 128;", "l", [tmap])


def _replace(b: ir.IRBuilder, pred, smem, field: str, value, ordinal: int | None = None) -> None:
    """``tensormap.replace`` of one field of the map being built at shared address ``smem``, by the
    threads where ``pred`` holds: ``value`` an int (an immediate) or an i32/i64 value."""
    ord_text = f", {ordinal}" if ordinal is not None else ""
    if isinstance(value, int):
        _asm(b, f"@$1 tensormap.replace.tile.{field}.shared::cta.b1024.b32 [$0]{ord_text}, {value};", "r,b",
             [smem, pred])
    else:
        width, cons = (64, "l") if value.type == I64 else (32, "r")
        _asm(b, f"@$1 tensormap.replace.tile.{field}.shared::cta.b1024.b{width} [$0]{ord_text}, $2;",
             f"r,b,{cons}", [smem, pred, value])


#: on a ``ttng.tensormap_create``: the index of the map template it starts from (``make_llir``)
MAP_TEMPLATE = "tritium.map_template"


def template_name(index: int) -> str:
    return f"tritium_tensormap_template_{index}"


def _template(fl: FunctionLowering, op) -> ir.GlobalVariable:
    """The kernel's global holding the map template of ``op``: 128 bytes that the driver fills,
    when it loads the module, with a map the CUDA driver encoded for the op's element type, box,
    swizzle and fill (``runtime/tensor_map.template_map``), so that the fields no
    ``tensormap.replace`` sets (the L2 promotion, the box's byte size) are the driver's.  Left
    zero where the driver could not fill it: every field the kernel sets is still right."""
    name = template_name(op.attributes[MAP_TEMPLATE].value.data)
    g = fl.module.globals.get(name)
    if g is None:
        ty = ir.ArrayType(I32, 32)
        g = ir.GlobalVariable(fl.module, ty, name, addrspace=fl.target.global_address_space)
        g.initializer = ir.Constant(ty, None)
        g.align = 128
    return g


def lower_tensormap_create(fl: FunctionLowering, op) -> None:
    """The first warp builds the map in the op's shared scratch: copies the op's template (128
    bytes, a word a lane), thread 0 sets every field the map's tensor decides, then the warp
    copies it to ``desc_ptr`` with a release fence of the tensor-map proxy
    (``tensormap.cp_fenceproxy``, a warp-wide instruction) and acquires it
    (``fence.proxy.tensormap::generic.acquire``): thread 0, which issues the block's bulk copies,
    may use it from here on.  Instructions are predicated rather than branched around, as the
    ``.aligned`` copy must be reached by the whole warp at once."""
    b = fl.builder
    _, smem = _aligned_scratch(fl, op, 128)
    warp0 = b.icmp_unsigned("<", fl.tid, const(I32, 32))
    first = fl.first_thread_pred()
    gmap = _address(fl, op.desc_ptr, fl.target.global_address_space)
    if MAP_TEMPLATE in op.attributes:
        lane = b.and_(fl.tid, const(I32, 31))
        word = b.load(b.gep(_template(fl, op), [const(I32, 0), lane]))
    else:
        word = const(I32, 0)
    _asm(b, "@$2 st.shared.b32 [$0], $1;", "r,r,b", [b.add(smem, b.mul(fl.tid, const(I32, 4))), word, warp0])
    _asm(b, "@$0 bar.warp.sync -1;", "b", [warp0])
    rank = len(op.global_dim)
    _replace(b, first, smem, "global_address", _address(fl, op.global_address, fl.target.global_address_space))
    _replace(b, first, smem, "rank", rank - 1)
    for i, box in enumerate(op.box_dim):
        _replace(b, first, smem, "box_dim", box, i)
    for i, d in enumerate(op.global_dim):
        _replace(b, first, smem, "global_dim", fl.get(d), i)
    shift = _stride_shift(fl)
    for i, st in enumerate(op.global_stride):
        v = fl.get(st)
        _replace(b, first, smem, "global_stride", b.lshr(v, const(I64, shift)) if shift else v, i)
    for i in range(rank):
        _replace(b, first, smem, "element_stride", 1, i)
    _replace(b, first, smem, "elemtype", op.code("elem_type"))
    _replace(b, first, smem, "interleave_layout", 0)
    _replace(b, first, smem, "swizzle_mode", op.code("swizzle_mode"))
    _replace(b, first, smem, "fill_mode", op.code("fill_mode"))
    _asm(b, "@$0 bar.warp.sync -1;", "b", [warp0])
    _asm(b, "@$2 tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned "
            "[$0], [$1], 128;", "l,r,b", [gmap, smem, warp0])
    _asm(b, "@$1 fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", "l,b", [gmap, warp0])
    # the assembler must not move the acquire past the first copy through the map: an empty
    # bulk group waited for keeps the order (what Triton emits after it as well)
    _asm(b, "@$0 cp.async.bulk.commit_group;", "b", [warp0])
    _asm(b, "@$0 cp.async.bulk.wait_group.read 0;", "b", [warp0])


def _stride_shift(fl: FunctionLowering) -> int:
    """Assemblers of PTX ISA 8.5 and older read ``tensormap.replace``'s global stride in units of
    16 bytes (as Triton also works around): the bits to shift the byte stride right by."""
    try:
        ptx = choose_ptx_version("90a", getattr(fl.options, "ptx_version", None))
    except Exception:  # noqa: BLE001 - no toolchain to ask (a lowering test): the current ISA's form
        return 0
    return 4 if ptx <= 85 else 0


def lower_bulk_store_wait(fl: FunctionLowering, op) -> None:
    with _thread0(fl):
        _asm(fl.builder, "cp.async.bulk.wait_group.read 0;", "", [])


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


def lower_copy_descriptor_to_local(fl: FunctionLowering, op, mode=None) -> None:
    """Thread 0, where the predicate holds: expect the slot's bytes on its barrier, then the copy
    (completing on that barrier).  The proxy fence orders the block's earlier ordinary accesses of
    the slot's bytes (which the block barrier before this op finished) before the engine's writes;
    left out where ``passes/tma.UnfencedCopies`` found that none can precede the copy unfenced, and
    taken outside the predicate where later copies count on it.  ``mode`` (an i32 value: a
    ``ttng.pair_copy``'s, ``lowering/cluster_pairs.py``): 0 copy, 1 copy into both CTAs of the
    cluster (``.multicast::cluster``), 2 expect only (the other CTA copies)."""
    b = fl.builder
    t = op.result.type
    dst = b.ptrtoint(fl.get(op.result), I32)
    bar = _bar_address(fl, op.bars, op.index)
    coords = _coords(fl, op)
    if FENCE_ALWAYS in op.attributes:  # later copies count on this fence: whether or not this one runs
        with b.if_then(fl.first_thread_pred()):
            _asm(b, "fence.proxy.async.shared::cta;", "", [])
    with b.if_then(b.and_(fl.first_thread_pred(), fl.get(op.pred))):
        if UNFENCED not in op.attributes and FENCE_ALWAYS not in op.attributes:
            _asm(b, "fence.proxy.async.shared::cta;", "", [])
        if mode is None:
            _expect_and_copy(b, t, dst, _address(fl, op.desc), bar, coords)
            return
        tmap = _address(fl, op.desc)
        _expect(b, t, bar)
        with b.if_then(b.icmp_unsigned("==", mode, const(I32, 0))):
            _copy_boxes(b, t, dst, tmap, bar, coords)
        with b.if_then(b.icmp_unsigned("==", mode, const(I32, 1))):
            _copy_boxes(b, t, dst, tmap, bar, coords, cta_mask=0b11)


def lower_wait_barrier(fl: FunctionLowering, op) -> None:
    b = fl.builder
    _wait_parity(b, _bar_address(fl, op.bars, op.index), fl.get(op.phase))


LOWERINGS = {"tt.descriptor_load": lower_descriptor_load, "tt.descriptor_store": lower_descriptor_store,
             "ttng.bulk_store_wait": lower_bulk_store_wait, "ttng.tensormap_acquire": lower_tensormap_acquire,
             "ttg.init_barriers": lower_init_barriers, "ttg.inval_barriers": lower_inval_barriers,
             "ttg.async_copy_descriptor_to_local": lower_copy_descriptor_to_local,
             "ttg.wait_barrier": lower_wait_barrier, "ttng.tensormap_create": lower_tensormap_create}

__all__ = ["LOWERINGS"]
