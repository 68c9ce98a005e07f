"""``ttg.convert_layout`` and the shared-memory element access every cross-thread exchange uses.

When both layouts give each element to the same (lane, warp) the conversion only renames
registers; otherwise the tensor makes one round trip through the scratch buffer the allocation pass
reserved (the whole tensor, rows padded: :func:`tritium.ttgir.layouts.convert_vectors`), written
row-major by each element's owner and read back, both with vector accesses where a thread holds
consecutive elements of a row (a 16-bit tensor-core accumulator on a target with a matrix store:
written tile by tile, :mod:`.matrix_store`).  A target may place the tensor otherwise within the
same bytes (``TargetInfo.convert_scratch_encoding``: AMD's swizzled, K-contiguous MFMA/WMMA operands)."""
from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects.builtin import TensorType

from ...ttgir.layouts import bit_width, convert_chunks, convert_vectors, scratch_limit, linear_layout
from .lowering import FunctionLowering, lowers
from .matrix_store import tiles_per_store, write_tiles
from .shared_ops import read_linear, write_linear
from .types import I1, I32, bits_of, const, elem_bytes, shared_load, shared_store
from .shape_ops import linear_index
from ...ttgir.register_plans import GatherPlan, LaneMove, affine_lanes, deciding_bits, warp_exchange_plan
from ...ttgir.scratch import exchangeable, gather_plan


def _uniform(v) -> bool:
    """Every element equal (a splat): the same register list in any layout with as many registers."""
    owner = v.owner
    if getattr(owner, "name", None) == "tt.splat":
        return True
    if getattr(owner, "name", None) == "arith.constant":
        val = owner.value
        return getattr(val, "is_splat", lambda: False)() if hasattr(val, "is_splat") else \
            len({repr(x) for x in (val.get_values() if hasattr(val, "get_values") else [])}) <= 1
    return False


def layout_free_chain(op) -> set | None:
    """Values derived from ``op``'s result only through elementwise ops and consumed only by
    whole-tensor reductions to scalars: where their elements live does not matter, so they can keep
    the source layout's register order.  Returns the chain's values, or None."""
    chain: set = set()
    work = [op.results[0]]
    while work:
        v = work.pop()
        if v in chain:
            continue
        chain.add(v)
        for use in v.uses:
            user = use.operation
            if user.name == "tt.reduce":
                if isinstance(user.results[0].type, TensorType) or \
                        any(o is not v and not _derived(o, op) for o in user.operands):
                    return None
                continue
            if not (user.name.startswith(("arith.", "math.")) and len(user.results) == 1 and
                    isinstance(user.results[0].type, TensorType) and
                    user.results[0].type.get_shape() == v.type.get_shape()):
                return None
            for o in user.operands:
                if o is not v and isinstance(o.type, TensorType) and not _uniform(o):
                    if o not in chain and not _derived(o, op):
                        return None
            work.append(user.results[0])
    return chain


def _derived(v, op) -> bool:
    """Whether ``v`` is computed elementwise from ``op``'s result (checked by walking operands)."""
    seen, work = set(), [v]
    while work:
        x = work.pop()
        if x is op.results[0]:
            return True
        if x in seen or not hasattr(x.owner, "name") or not x.owner.name.startswith(("arith.", "math.")):
            continue
        seen.add(x)
        work.extend(o for o in x.owner.operands if isinstance(o.type, TensorType) and not _uniform(o))
    return False


def _same_register_count(src_t, dst_t) -> bool:
    a, b = linear_layout(src_t.encoding, src_t.get_shape()), linear_layout(dst_t.encoding, dst_t.get_shape())
    return a.num_registers == b.num_registers and not any(a.free_masks().values()) and \
        not any(b.free_masks().values())


def registers_only(la, lb) -> bool:
    """Whether a conversion only renames registers: each (lane, warp) keeps the same elements and
    every register of the result is one of the source's."""
    return la.ll.lane == lb.ll.lane and la.ll.warp == lb.ll.warp and \
        all(tuple(int(x) for x in off) in la.reg_index for off in lb.reg_offsets)


@lowers("ttg.convert_layout")
def _convert(fl: FunctionLowering, op) -> None:
    src_t, dst_t = op.operands[0].type, op.results[0].type
    chain = layout_free_chain(op) if _same_register_count(src_t, dst_t) else None
    if chain is not None:
        # keep the source's registers; reductions of the chain read them in the source layout
        fl.set(op.results[0], list(fl.get(op.operands[0])))
        for v in chain:
            fl.layout_override[v] = src_t
        return
    regs = fl.get(op.operands[0])
    la, lb = fl.layout(src_t), fl.layout(dst_t)
    if la.ll == lb.ll:
        fl.set(op.results[0], list(regs))
        return
    if registers_only(la, lb):
        out = [regs[la.reg_index[tuple(int(x) for x in off)]] for off in lb.reg_offsets]
        fl.set(op.results[0], out)
        return
    if fl.target.warp_exchange and exchangeable(src_t.element_type):
        moves = warp_exchange_plan(la.ll, lb.ll)
        if moves is not None:
            fl.set(op.results[0], exchange_in_warp(fl, regs, moves))
            return
    plan = gather_plan(src_t, dst_t, la.ll, lb.ll) if fl.target.warp_gather else None
    if plan is not None:
        fl.set(op.results[0], gather_in_warp(fl, regs, plan, bit_width(src_t.element_type)))
        return
    base = fl.shared_ptr(fl.alloc_offset(op))
    w, r, pad = convert_vectors(src_t, dst_t)
    ety = fl.ty(src_t)
    if ety == I1 or isinstance(ety, ir.PointerType):
        w = r = 1
    chunks = convert_chunks(src_t, dst_t, scratch_limit(op))
    placed = fl.target.convert_scratch_encoding(src_t, dst_t) if chunks == 1 else None
    if placed is not None and placed.is_linear(src_t.get_shape()) and bit_width(src_t.element_type) >= 8 \
            and not isinstance(ety, ir.PointerType):
        # the target's placement (within the padded scratch's bytes): vector accesses on both sides
        shape = src_t.get_shape()
        bases = placed.byte_bases(shape, elem_bytes(ety))
        write_linear(fl, base, regs, src_t, None, shape, bases=bases, fold=True)
        fl.target.barrier(fl.builder)
        fl.set(op.results[0], read_linear(fl, base, dst_t, None, shape, bases=bases, fold=True))
        return
    if chunks == 1:
        tiles = tiles_per_store(fl, src_t, ety, pad, fl.alloc_offset(op))
        if tiles:
            write_tiles(fl, base, regs, src_t, pad, tiles)
        else:
            _write_rows(fl, base, regs, src_t, w, pad)
        fl.target.barrier(fl.builder)
        fl.set(op.results[0], _read_rows(fl, base, dst_t, r, pad))
        return
    # dimension 0 in slices: each slice is written by its owners, then read back by its readers
    rows = src_t.get_shape()[0] // chunks
    out: list = [None] * len(lb.reg_offsets)
    for c in range(chunks):
        if c:
            fl.target.barrier(fl.builder)  # the previous slice has been read
        _write_rows(fl, base, regs, src_t, w, pad, (c, rows))
        fl.target.barrier(fl.builder)
        out = _read_rows(fl, base, dst_t, r, pad, (c, rows), out)
    fl.set(op.results[0], out)


def exchange_in_warp(fl: FunctionLowering, regs: list, moves: tuple[LaneMove, ...]) -> list:
    """The result registers of a conversion inside each warp (:func:`warp_exchange_plan`).  Source
    registers that the same exchange moves travel packed in 32-bit words (two 16-bit elements, four
    8-bit ones), one ``shuffle_xor`` a word; a half-warp read then keeps its own element or takes
    the exchanged one by the lane's bit."""
    b = fl.builder
    ety = regs[0].type
    bits = bits_of(ety)
    per_word = max(32 // max(bits, 8), 1) if bits < 32 else 1
    ity = ir.IntType(bits)
    word_bits = 32 // per_word

    def as_int(v):
        if isinstance(ety, ir.IntType):
            return v if bits == word_bits else b.zext(v, ir.IntType(word_bits))
        return b.bitcast(v, ity)

    def from_int(v):
        if isinstance(ety, ir.IntType):
            return v if bits == word_bits else b.trunc(v, ety)
        return b.bitcast(v, ety)

    exchanged: dict[tuple[int, int], ir.Value] = {}
    by_mask: dict[int, list[int]] = {}
    for m in moves:
        if m.mask and m.reg not in by_mask.setdefault(m.mask, []):
            by_mask[m.mask].append(m.reg)
    for mask, srcs in by_mask.items():
        for i in range(0, len(srcs), per_word):
            group = srcs[i:i + per_word]
            got = fl.target.shuffle_xor(b, _pack_word(b, [as_int(regs[r]) for r in group], word_bits), mask)
            for j, r in enumerate(group):
                exchanged[(mask, r)] = from_int(_word_slot(b, got, j * word_bits, word_bits))
    out = []
    for m in moves:
        if not m.mask:
            out.append(regs[m.reg])
            continue
        other = exchanged[(m.mask, m.reg)]
        on = _lane_bit(fl, m.bit)
        out.append(b.select(on, regs[m.reg], other) if m.keep else b.select(on, other, regs[m.reg]))
    return out


def _pack_word(b: ir.IRBuilder, ints: list, bits: int) -> ir.Value:
    """``ints`` (integers of at most ``bits`` bits) side by side in one i32, the first lowest.  Two
    bytes that are the low and high byte of one 16-bit value (as a paired conversion gives them)
    travel as that value, and two 16-bit halves as a 2 x i16 vector: the assembler then writes
    the second half into the first's register (PTX ``mov.b32 {lo, hi}``; no shifts or masks)."""
    if bits == 8:
        halves = [_halves_of(ints[j], ints[j + 1]) if j + 1 < len(ints) else None for j in range(0, len(ints), 2)]
        if len(ints) == 4 and all(h is not None for h in halves):
            ints, bits = halves, 16
    if bits == 16 and len(ints) == 2:
        vec = ir.VectorType(ir.IntType(16), 2)
        v = b.insert_element(ir.Constant(vec, None), _as_i16(b, ints[0]), const(I32, 0))
        return b.bitcast(b.insert_element(v, _as_i16(b, ints[1]), const(I32, 1)), I32)
    word = None
    for j, v in enumerate(ints):
        x = b.zext(v, I32) if v.type != I32 else v
        x = b.shl(x, const(I32, j * bits)) if j else x
        word = x if word is None else b.or_(word, x)
    return word


def _as_i16(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    return v if v.type == ir.IntType(16) else b.zext(v, ir.IntType(16))


def _halves_of(lo: ir.Value, hi: ir.Value) -> ir.Value | None:
    """The i16 whose low byte is ``lo`` and high byte ``hi`` when both were cut from one
    (``trunc x`` and ``trunc (x >> 8)``), else None."""
    def cut(v):
        return isinstance(v, ir.Instruction) and v.opname == "trunc" and v.operands[0].type == ir.IntType(16)
    if not (cut(lo) and cut(hi)):
        return None
    x, shifted = lo.operands[0], hi.operands[0]
    if not (isinstance(shifted, ir.Instruction) and shifted.opname == "lshr" and shifted.operands[0] is x):
        return None
    amount = shifted.operands[1]
    return x if isinstance(amount, ir.Constant) and amount.constant == 8 else None


def _word_slot(b: ir.IRBuilder, word: ir.Value, shift, bits: int) -> ir.Value:
    """The ``bits``-bit integer at bit ``shift`` (an int, or an i32 value) of i32 ``word``."""
    x = word if shift == 0 else b.lshr(word, const(I32, shift) if isinstance(shift, int) else shift)
    return x if bits == 32 else b.trunc(x, ir.IntType(bits))


def _lane_bit(fl: FunctionLowering, bit: int) -> ir.Value:
    """Whether bit ``bit`` of the calling thread's lane id is set (i1)."""
    b = fl.builder
    return b.icmp_unsigned("!=", b.and_(fl.lane, const(I32, 1 << bit)), const(I32, 0))


def _lane_of(fl: FunctionLowering, lane_map: tuple[int, ...]) -> ir.Value | None:
    """The lane id ``lane_map`` sends each lane to, computed from the lane id (an affine map over
    its bits: :func:`affine_lanes`); None where each lane reads itself."""
    if all(m == i for i, m in enumerate(lane_map)):
        return None
    b = fl.builder
    c, cols = affine_lanes(lane_map)
    v = const(I32, c)
    for i, col in enumerate(cols):
        if not col:
            continue
        bit = b.and_(b.lshr(fl.lane, const(I32, i)), const(I32, 1)) if i else b.and_(fl.lane, const(I32, 1))
        if col & (col - 1) == 0:
            k = col.bit_length() - 1
            term = b.shl(bit, const(I32, k)) if k else bit
        else:
            term = b.mul(bit, const(I32, col))
        v = b.xor(v, term)
    return v


def _lane_choice(fl: FunctionLowering, values: tuple, make) -> ir.Value:
    """``make(values[lane])`` for the calling lane: a tree of selects on the (at most two) lane bits
    that decide ``values`` (:func:`deciding_bits`); each distinct value made once."""
    b = fl.builder
    bits = deciding_bits(values)
    assert bits is not None, "a per-lane choice of more than two lane bits"
    made: dict = {}

    def one(v):
        if v not in made:
            made[v] = make(v)
        return made[v]

    def tree(lane: int, rest: tuple[int, ...]):
        if not rest:
            return one(values[lane])
        bit = rest[-1]
        hi, lo = tree(lane | 1 << bit, rest[:-1]), tree(lane, rest[:-1])
        return hi if hi is lo else b.select(_lane_bit(fl, bit), hi, lo)

    return tree(0, bits)


def _permuted_words(fl: FunctionLowering, plan: GatherPlan, fetched: list, bits: int) -> list | None:
    """Each run of ``32 // bits`` result registers as one word, permuted out of the (at most two)
    fetched words its elements come from by the target's ``byte_permute``, with a selector that at
    most two lane bits decide; None where the target has none or a run does not fit."""
    b = fl.builder
    per_word = 32 // bits
    if len(plan.picks) % per_word:
        return None
    lanes = len(plan.picks[0][1])
    runs = []
    for r0 in range(0, len(plan.picks), per_word):
        picks = plan.picks[r0:r0 + per_word]
        srcs = sorted({f for fs, _ in picks for f in fs})
        if len(srcs) > 2:
            return None
        sel = []
        for lane in range(lanes):
            v = 0
            for j, (fs, slots) in enumerate(picks):
                base = 4 * srcs.index(fs[lane])
                for k in range(bits // 8):       # the element's bytes, low first
                    v |= (base + slots[lane] * (bits // 8) + k) << (4 * (j * (bits // 8) + k))
            sel.append(v)
        if deciding_bits(tuple(sel)) is None:
            return None
        runs.append((srcs, tuple(sel)))
    out = []
    for srcs, sel in runs:
        x = fetched[srcs[0]]
        y = fetched[srcs[1]] if len(srcs) > 1 else x
        w = fl.target.byte_permute(b, x, y, _lane_choice(fl, sel, lambda v: const(I32, v)))
        if w is None:
            return None
        out.append(w)
    return out


def gather_in_warp(fl: FunctionLowering, regs: list, plan: GatherPlan, bits: int) -> list:
    """The result registers of a conversion by word fetches (:func:`warp_gather_plan`): each lane
    packs the word a fetch has it send (in a round, the packing its lane bits choose), reads the
    fetch's word from its lane (``shuffle_idx``) and takes its elements out: a byte permute a
    result word where the target has one, else per element the fetched word and the slot the
    lane's id gives (selects where at most two lane bits decide, else a 64-bit table of slots)."""
    b = fl.builder
    ety = regs[0].type
    ity = ir.IntType(bits)
    per_word = 32 // bits
    lanes = len(plan.picks[0][1])

    def as_int(v):
        return v if isinstance(ety, ir.IntType) else b.bitcast(v, ity)

    words: dict[tuple[int, ...], ir.Value] = {}

    def packed(rs: tuple[int, ...]) -> ir.Value:
        if rs not in words:
            words[rs] = _pack_word(b, [as_int(regs[r]) for r in rs], bits)
        return words[rs]

    fetched = []
    for g in plan.fetches:
        w = _lane_choice(fl, g.sent or (0,) * lanes, lambda i, g=g: packed(g.words[i]))
        src = _lane_of(fl, g.lane)
        fetched.append(w if src is None else fl.target.shuffle_idx(b, w, src))
    words_out = _permuted_words(fl, plan, fetched, bits)
    slot_bits = max(per_word - 1, 1).bit_length()
    out = []
    for r, (fs, slots) in enumerate(plan.picks):
        if words_out is not None:
            x = _word_slot(b, words_out[r // per_word], r % per_word * bits, bits)
            out.append(x if isinstance(ety, ir.IntType) else b.bitcast(x, ety))
            continue
        word = _lane_choice(fl, fs, lambda f: fetched[f])
        if deciding_bits(slots) is not None:
            shift = _lane_choice(fl, slots, lambda s: const(I32, s * bits))
        else:
            table = sum(s << (slot_bits * lane) for lane, s in enumerate(slots))
            lane64 = b.zext(b.mul(fl.lane, const(I32, slot_bits)), ir.IntType(64))
            slot = b.trunc(b.and_(b.lshr(ir.Constant(ir.IntType(64), table), lane64),
                                  ir.Constant(ir.IntType(64), (1 << slot_bits) - 1)), I32)
            shift = b.mul(slot, const(I32, bits))
        x = _word_slot(b, word, shift, bits)
        out.append(x if isinstance(ety, ir.IntType) else b.bitcast(x, ety))
    return out


def _row_index(fl: FunctionLowering, coords: list, shape, pad: int) -> ir.Value:
    """Element index of ``coords`` in the scratch buffer: row-major, rows ``shape[-1] + pad`` long."""
    if not pad:
        return linear_index(fl, coords, shape)
    b = fl.builder
    rows = linear_index(fl, coords[:-1], shape[:-1])
    return b.add(b.mul(rows, const(I32, shape[-1] + pad)), coords[-1])


def _element_ptr(fl: FunctionLowering, base, info, t, r0: int, coords: list, shape, pad: int, ety, chunk):
    """Pointer to register ``r0``'s element in the scratch buffer.  Where the register's offset
    shares no coordinate bit with the thread's part (no slices), it is the thread's row-major
    index plus a constant: a base shared by every register and an immediate offset each."""
    off = [int(x) for x in info.reg_offsets[r0]]
    thread = [0] * len(off)
    for v in (*info.ll.lane, *info.ll.warp):
        thread = [a | int(x) for a, x in zip(thread, v)]
    if chunk is not None or any(o & m for o, m in zip(off, thread)):
        return fl.builder.gep(base, [_row_index(fl, coords, shape, pad)], source_etype=ety)
    const_idx = 0
    for d, o in enumerate(off[:-1]):
        const_idx = const_idx * shape[d] + o
    const_idx = const_idx * (shape[-1] + pad) + off[-1]
    p = fl.builder.gep(base, [_row_index(fl, fl.thread_coords(info), shape, pad)], source_etype=ety)
    return fl.builder.gep(p, [const(I32, const_idx)], source_etype=ety) if const_idx else p


def _vector_groups(info, vec: int):
    """Registers in groups of ``vec`` consecutive elements along the last dimension."""
    n = len(info.reg_offsets)
    for r0 in range(0, n, vec):
        yield r0, list(range(r0, min(r0 + vec, n)))


def _in_chunk(fl: FunctionLowering, info, t, r0: int, coords: list, chunk):
    """For a slice ``chunk = (c, rows)`` of dimension 0: ``(False, ...)`` when register ``r0`` is
    never in it, else ``(pred, coords)`` with ``pred`` an i1 (None: always in it, decided by the
    register alone) and dimension 0 made relative to the slice."""
    if chunk is None:
        return None, coords
    c, rows = chunk
    b = fl.builder
    thread_rows = 0
    for v in (*info.ll.lane, *info.ll.warp):
        thread_rows |= v[0]
    local = [b.and_(coords[0], const(I32, rows - 1)), *coords[1:]]
    if not thread_rows & ~(rows - 1):  # which slice is fixed by the register: no test at run time
        return (None, local) if int(info.reg_offsets[r0][0]) // rows == c else (False, local)
    pred = b.icmp_unsigned("==", b.lshr(coords[0], const(I32, rows.bit_length() - 1)), const(I32, c))
    return pred, local


def _write_rows(fl: FunctionLowering, base, regs: list, t, vec: int, pad: int, chunk=None) -> None:
    b = fl.builder
    info = fl.layout(t)
    owner = fl.dedup_pred(t)
    shape = t.get_shape()
    shape = (chunk[1], *shape[1:]) if chunk else shape
    rows = fl.coords(t)
    for r0, group in _vector_groups(info, vec):
        if r0 & info.free["register"]:
            continue
        pred, coords = _in_chunk(fl, info, t, r0, rows[r0], chunk)
        if pred is False:
            continue
        pred = fl.and_all([owner, pred])
        if len(group) == 1:
            shared_store(fl, base, _row_index(fl, coords, shape, pad), regs[r0], pred)
            continue
        vt = ir.VectorType(regs[r0].type, len(group))
        v = ir.Constant(vt, ir.Undefined)
        for i, r in enumerate(group):
            v = b.insert_element(v, regs[r], const(I32, i))
        p = _element_ptr(fl, base, info, t, r0, coords, shape, pad, regs[r0].type, chunk)
        if pred is None:
            b.store(v, p, align=elem_bytes(regs[r0].type) * len(group))
        else:
            with b.if_then(pred):
                b.store(v, p, align=elem_bytes(regs[r0].type) * len(group))


def _read_rows(fl: FunctionLowering, base, t, vec: int, pad: int, chunk=None, out=None) -> list:
    b = fl.builder
    info = fl.layout(t)
    ety = fl.ty(t)
    shape = t.get_shape()
    shape = (chunk[1], *shape[1:]) if chunk else shape
    rows = fl.coords(t)
    out = list(out) if out is not None else [None] * len(info.reg_offsets)
    for r0, group in _vector_groups(info, vec):
        pred, coords = _in_chunk(fl, info, t, r0, rows[r0], chunk)
        if pred is False:
            continue
        if len(group) == 1:
            got = [shared_load(fl, base, _row_index(fl, coords, shape, pad), ety)]
        else:
            vt = ir.VectorType(ety, len(group))
            p = _element_ptr(fl, base, info, t, r0, coords, shape, pad, ety, chunk)
            v = b.load(p, typ=vt, align=elem_bytes(ety) * len(group))
            got = [b.extract_element(v, const(I32, i)) for i in range(len(group))]
        for r, x in zip(group, got):
            if pred is not None:  # this slice's value where the element is in it, else the earlier one
                x = b.select(pred, x, out[r] if out[r] is not None else ir.Constant(ety, ir.Undefined))
            out[r] = x
    return out


__all__ = ["shared_store", "shared_load", "elem_bytes", "registers_only", "I32"]
