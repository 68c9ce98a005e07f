"""The write half of a layout conversion with a target's 8x8 matrix store.

A tensor-core accumulator of 16-bit elements (``nvidia_mma`` versions 2 and 3, after its cast)
gives each lane of a warp the same piece of every 8x8 tile: lane ``l`` holds row ``l // 4``,
columns ``2 (l % 4)`` and ``2 (l % 4) + 1``, one 32-bit register pair.  A target that stores such
tiles whole (``TargetInfo.stores_matrices``: NVIDIA's ``stmatrix`` from sm_90) writes up to four
tiles per instruction, each lane naming one tile row's address, where element stores need one
32-bit store per pair.  The rows land in the conversion's row-major scratch, so the read half is
unchanged.

Which registers qualify is a fact of the linear layout: register bit 0 is the next column, the
five lane bits are columns 2, 4 and rows 1, 2, 4, and every other register or warp basis moves by
whole tiles (multiples of 8 in both dimensions)."""
from __future__ import annotations

import llvmlite.ir as ir

from .lowering import FunctionLowering
from .types import I32, bits_of, const

#: the lane bases of a tile fragment: (row, column) steps of lane bits 0..4
_TILE_LANES = [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]


def tiles_per_store(fl: FunctionLowering, t, ety: ir.Type, pad: int, offset: int) -> int:
    """How many 8x8 tiles one matrix store of ``t``'s registers writes (4, 2 or 1), or 0 when
    ``t`` is not stored that way: the target has no matrix store, the elements are not 16-bit, the
    layout is not the tile fragment, or a tile row would not be a 16-byte aligned scratch row."""
    per_store = _fragment_tiles(fl, t, ety)
    if not per_store or offset % 16 or (t.get_shape()[-1] + pad) * 2 % 16:
        return 0
    return per_store


def _words(b: ir.IRBuilder, regs: list, ety: ir.Type) -> list:
    """The registers as 32-bit words, two 16-bit elements each (a matrix store's operands)."""
    words = []
    for r in range(0, len(regs), 2):
        v = ir.Constant(ir.VectorType(ety, 2), ir.Undefined)
        v = b.insert_element(v, regs[r], const(I32, 0))
        v = b.insert_element(v, regs[r + 1], const(I32, 1))
        words.append(b.bitcast(v, I32))
    return words


def write_tiles(fl: FunctionLowering, base, regs: list, t, pad: int, per_store: int) -> None:
    """Every register of ``t`` into the row-major scratch at ``base`` (rows ``shape[-1] + pad``
    long), ``per_store`` tiles per matrix store."""
    b = fl.builder
    info = fl.layout(t)
    ll = info.ll
    width = t.get_shape()[-1] + pad
    ety = regs[0].type
    lane = fl.lane
    # the tile this lane addresses in a store (lane // 8) and its row in the tile (lane % 8)
    tile = b.lshr(lane, const(I32, 3))
    row = b.and_(lane, const(I32, 7))
    col = const(I32, 0)
    thread_bits = [0, 0]  # the coordinate bits this lane's address depends on (row, column)
    terms = [(tile, bit, ll.register[1 + bit]) for bit in range(per_store.bit_length() - 1)]
    terms += [(fl.warp, bit, v) for bit, v in enumerate(ll.warp)]
    for ident, bit, v in terms:
        on = b.and_(b.lshr(ident, const(I32, bit)), const(I32, 1))
        if v[0]:
            row = b.xor(row, b.mul(on, const(I32, v[0])))
        if v[1]:
            col = b.xor(col, b.mul(on, const(I32, v[1])))
        thread_bits = [thread_bits[0] | v[0], thread_bits[1] | v[1]]
    thread_bits[0] |= 7
    lane_index = b.add(b.mul(row, const(I32, width)), col)
    words = _words(b, regs, ety)
    group = 2 * per_store
    for r0 in range(0, len(regs), group):
        orow, ocol = (int(x) for x in info.reg_offsets[r0])
        if orow & thread_bits[0] or ocol & thread_bits[1]:  # overlapping bits: combine by xor
            idx = b.add(b.mul(b.xor(row, const(I32, orow)), const(I32, width)), b.xor(col, const(I32, ocol)))
        else:
            idx = b.add(lane_index, const(I32, orow * width + ocol)) if orow or ocol else lane_index
        ptr = b.gep(base, [idx], source_etype=ety)
        fl.target.store_matrices(b, ptr, words[r0 // 2:r0 // 2 + per_store])


def _fragment_tiles(fl: FunctionLowering, t, ety: ir.Type) -> int:
    """The tiles per matrix store (4, 2 or 1) of ``t``'s registers when its layout is the tile
    fragment and the target stores matrices; 0 otherwise (the checks of :func:`tiles_per_store`
    that do not concern the buffer)."""
    if not getattr(fl.target, "stores_matrices", False) or fl.target.warp_size != 32:
        return 0
    if isinstance(ety, ir.PointerType) or bits_of(ety) != 16:
        return 0
    info = fl.layout(t)
    ll = info.ll
    if len(t.get_shape()) != 2 or any(info.free.values()) or list(map(tuple, ll.lane)) != _TILE_LANES:
        return 0
    if not ll.register or tuple(ll.register[0]) != (0, 1):
        return 0
    if any(v[0] % 8 or v[1] % 8 for v in (*ll.register[1:], *ll.warp)):
        return 0
    pairs = len(info.reg_offsets) // 2
    return 4 if pairs % 4 == 0 else 2 if pairs % 2 == 0 else 1


def _placed_offset(bases, row: int, col: int) -> int:
    out = 0
    for d, c in enumerate((row, col)):
        for bit, v in enumerate(bases[d]):
            if c >> bit & 1:
                out ^= v
    return out


def tiles_per_placed_store(fl: FunctionLowering, t, ety: ir.Type, bases) -> int:
    """As :func:`tiles_per_store`, for a buffer placed by ``bases`` (a byte offset per coordinate
    bit, combined with XOR: a swizzled tensor-core or copy-engine layout): every 8-element row of a
    tile must be 16 consecutive bytes, 16-byte aligned, wherever the other coordinate bits put it
    (true of the 32/64/128-byte swizzles, which permute whole 16-byte chunks)."""
    per_store = _fragment_tiles(fl, t, ety)
    if not per_store or len(bases) != 2 or len(bases[1]) < 3:
        return 0
    if bases[1][:3] != [2, 4, 8]:
        return 0
    others = list(bases[0]) + list(bases[1][3:])
    return per_store if not any(v & 15 for v in others) else 0


def write_placed_tiles(fl: FunctionLowering, base, regs: list, t, bases, per_store: int) -> None:
    """Every register of ``t`` into the buffer at ``base`` placed by ``bases`` (see
    :func:`tiles_per_placed_store`), ``per_store`` tiles per matrix store: each lane names the
    placed address of one tile row."""
    b = fl.builder
    info = fl.layout(t)
    ll = info.ll
    ety = regs[0].type
    lane = fl.lane
    # lane // 8: the tile of the store this lane addresses; lane % 8: its row in that tile
    tile = b.lshr(lane, const(I32, 3))
    terms = [(lane, bit, (1 << bit, 0)) for bit in range(3)]
    terms += [(tile, bit, ll.register[1 + bit]) for bit in range(per_store.bit_length() - 1)]
    terms += [(fl.warp, bit, v) for bit, v in enumerate(ll.warp)]
    off = const(I32, 0)
    dynamic = 0  # the offset bits the lane and warp part can set
    for ident, bit, v in terms:
        placed = _placed_offset(bases, int(v[0]), int(v[1]))
        if placed:
            on = b.and_(b.lshr(ident, const(I32, bit)), const(I32, 1))
            off = b.xor(off, b.mul(on, const(I32, placed)))
            dynamic |= placed
    words = _words(b, regs, ety)
    for r0 in range(0, len(regs), 2 * per_store):
        orow, ocol = (int(x) for x in info.reg_offsets[r0])
        placed = _placed_offset(bases, orow, ocol)
        # XOR where the lane part may set the same bits, else an add the access's offset absorbs
        at = b.xor(off, const(I32, placed)) if placed & dynamic else b.add(off, const(I32, placed)) if placed else off
        ptr = b.gep(base, [at], source_etype=ir.IntType(8))
        fl.target.store_matrices(b, ptr, words[r0 // 2:r0 // 2 + per_store])


__all__ = ["tiles_per_store", "write_tiles", "tiles_per_placed_store", "write_placed_tiles"]
