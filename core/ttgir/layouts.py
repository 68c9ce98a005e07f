"""Layout arithmetic: what a pass or the TTGIR -> LLVM lowering asks of a distributed encoding.

Everything is derived from ``enc.linear_layout(shape)`` (see :mod:`tritium.ttgir.linear_layout`), so
a vendor encoding that implements that one method gets all of it.  The contract with the lowering:

* ``total_elems_per_thread(enc, shape)`` registers per thread hold the tensor (``N``);
* register ``r`` of lane ``l`` in warp ``w`` holds the element at
  ``coordinates(enc, shape)[w, l, r]``;
* for additive layouts (all generic ones)
  ``coord[d] = thread_offset[d](l, w) + reg_offsets(enc, shape)[r][d]`` with
  ``thread_offset[d] = sum(term(lane or warp) for term in index_terms(enc, shape)[d])``
  and each term ``((src >> shift) & (2**width - 1)) * scale`` — emit shifts, ands, muls, adds;
* elements held more than once (broadcast: the shape is smaller than the layout's tile) are
  described by ``free_masks``; wrap-around (shape larger than the tile) is extra registers.

Shapes, warp counts and warp sizes are powers of two, as in Triton.  ``threads_per_warp`` is the
target's warp size (32 or 64) and is never assumed.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

import numpy as np
from xdsl.dialects.builtin import AnyFloat, IntegerType, IndexType, TensorType
from xdsl.ir import Attribute

from ..ttir.types import PointerType
from .encodings import BlockedEncodingAttr, DistributedEncoding, SliceEncodingAttr
from .linear_layout import IndexTerm, LinearLayout, log2
from .linear_encoding import LinearEncodingAttr


def linear_layout(enc: DistributedEncoding, shape: Sequence[int]) -> LinearLayout:
    if not isinstance(enc, DistributedEncoding):
        raise TypeError(f"{enc} is not a distributed encoding")
    if len(shape) != enc.rank:
        raise ValueError(f"shape {tuple(shape)} has rank {len(shape)}, the layout {enc} has rank {enc.rank}")
    return enc.linear_layout(tuple(shape))


def total_elems_per_thread(enc: DistributedEncoding, shape: Sequence[int]) -> int:
    """Registers (elements) each thread holds: Triton's ``getTotalElemsPerThread``."""
    return linear_layout(enc, shape).num_registers


def elems_per_thread(enc: DistributedEncoding, shape: Sequence[int]) -> tuple[int, ...]:
    """Per dimension, how many distinct coordinates one thread's registers span."""
    ll = linear_layout(enc, shape)
    return tuple(1 << sum(1 for v in ll.register if v[d]) for d in range(len(shape)))


def coordinates(enc: DistributedEncoding, shape: Sequence[int]) -> np.ndarray:
    """``[num_warps, threads_per_warp, total_elems_per_thread, rank]``: every element's coordinates."""
    return linear_layout(enc, shape).table()


def reg_offsets(enc: DistributedEncoding, shape: Sequence[int]) -> np.ndarray:
    """``[total_elems_per_thread, rank]``: the constant part of each register's coordinates."""
    return linear_layout(enc, shape).reg_offsets()


def thread_offsets(enc: DistributedEncoding, shape: Sequence[int], lane, warp) -> np.ndarray:
    """Coordinates of register 0 of ``(lane, warp)`` (numpy-broadcast), last axis = dimension."""
    return linear_layout(enc, shape).thread_offsets(lane, warp)


def index_terms(enc: DistributedEncoding, shape: Sequence[int]) -> list[list[IndexTerm]]:
    """Per dimension, the terms whose sum is ``thread_offset[d](lane, warp)`` (additive layouts)."""
    return linear_layout(enc, shape).index_terms()


def free_masks(enc: DistributedEncoding, shape: Sequence[int]) -> dict[str, int]:
    """Bits of register / lane / warp ids that only select duplicates (mask them off for stores)."""
    return linear_layout(enc, shape).free_masks()


def shape_per_cta_tile(enc: DistributedEncoding) -> tuple[int, ...]:
    """Extent one pass of the layout covers before wrapping: ``spt * tpw * wpc`` per dimension."""
    return tuple(s * t * w for s, t, w in zip(enc.size_per_thread, enc.threads_per_warp, enc.warps_per_cta))


@dataclass(frozen=True)
class Replication:
    """How a layout meets a shape: ``repeats[d]`` times the tile wraps around along ``d`` (1 when the
    shape is not larger), and each element is held by ``duplicates`` (lane, warp, register) slots
    (1 when the shape is not smaller than the tile)."""

    repeats: tuple[int, ...]
    duplicates: int


def replication(enc: DistributedEncoding, shape: Sequence[int]) -> Replication:
    ll = linear_layout(enc, shape)
    tile = shape_per_cta_tile(enc)
    repeats = tuple(max(1, s // t) for s, t in zip(shape, tile))
    slots = ll.num_registers * ll.threads_per_warp * ll.num_warps
    return Replication(repeats, slots // prod(shape))


def same_layout(a: Attribute, b: Attribute, shape: Sequence[int]) -> bool:
    """Whether two encodings place every element of ``shape`` identically (a no-op conversion)."""
    if a == b:
        return True
    if not (isinstance(a, DistributedEncoding) and isinstance(b, DistributedEncoding)):
        return False
    try:
        return linear_layout(a, shape) == linear_layout(b, shape)
    except (NotImplementedError, ValueError):
        return False


# --- building blocked layouts ---------------------------------------------------------------------
def blocked_encoding(shape: Sequence[int], size_per_thread: Sequence[int], order: Sequence[int], num_warps: int,
                     threads_per_warp: int, num_ctas: int = 1) -> BlockedEncodingAttr:
    """The blocked layout that spreads lanes then warps over ``shape`` fastest dimension first
    (``order[0]``), each thread holding ``size_per_thread``; leftover lanes/warps go to the slowest
    dimension (they hold duplicates when the shape is too small)."""
    if num_ctas != 1:
        raise NotImplementedError("multi-CTA layouts are not supported yet")
    log2(num_warps), log2(threads_per_warp)
    rank = len(shape)
    tpw, wpc = [1] * rank, [1] * rank
    lanes_left, warps_left, threads_left = threads_per_warp, num_warps, threads_per_warp * num_warps
    for d in order[:-1]:
        threads_d = min(threads_left, max(1, shape[d] // size_per_thread[d]))
        tpw[d] = min(threads_d, lanes_left)
        wpc[d] = min(max(1, threads_d // tpw[d]), warps_left)
        lanes_left //= tpw[d]
        warps_left //= wpc[d]
        threads_left //= max(1, threads_d)
    tpw[order[-1]] = lanes_left
    wpc[order[-1]] = warps_left
    return BlockedEncodingAttr(size_per_thread, tpw, wpc, order)


def default_blocked_encoding(shape: Sequence[int], num_warps: int, threads_per_warp: int,
                             num_ctas: int = 1) -> BlockedEncodingAttr:
    """Triton's ``getDefaultBlockedEncoding``: one element per thread, row-major order."""
    rank = len(shape)
    return blocked_encoding(shape, [1] * rank, list(range(rank - 1, -1, -1)), num_warps, threads_per_warp, num_ctas)


getDefaultBlockedEncoding = default_blocked_encoding


def reshaped_blocked(enc: DistributedEncoding, src_shape: Sequence[int],
                     dst_shape: Sequence[int]) -> BlockedEncodingAttr | None:
    """The blocked layout of ``tt.reshape(x, dst_shape)`` that keeps every element of ``x`` (laid
    out by ``enc`` over ``src_shape``) in the thread that holds it, so the reshape only renames
    registers (Triton infers the reshape's result layout this way); None when no row-major blocked
    layout does.  Each basis of the source layout is one bit of the row-major linear index, which
    the reshape keeps; the candidate reads, per result dimension from its low bits, a run of
    register bits (``sizePerThread``), then lane bits, then warp bits, and is accepted only if its
    lanes and warps are exactly the source's and its registers the same set."""
    try:
        src = linear_layout(enc, src_shape)
    except (NotImplementedError, ValueError, TypeError):
        return None
    if prod(src_shape) != prod(dst_shape) or not all(_is_pow2(n) for n in (*src_shape, *dst_shape)):
        return None

    src_off, dst_off = _row_major_bit_offsets(src_shape), _row_major_bit_offsets(dst_shape)

    def linear_bit(vec) -> int | None:  # -1 for a zero basis, None for one that is not a single bit
        nz = [d for d, v in enumerate(vec) if v]
        if not nz:
            return -1
        if len(nz) > 1 or not _is_pow2(vec[nz[0]]):
            return None
        return src_off[nz[0]] + log2(vec[nz[0]])

    kinds: dict[int, str] = {}
    mapped = {}
    for kind in ("register", "lane", "warp"):
        bits = [linear_bit(v) for v in getattr(src, kind)]
        if None in bits:
            return None
        mapped[kind] = bits
        kinds.update({b: kind for b in bits if b >= 0})
    rank = len(dst_shape)

    def dst_vec(bit: int) -> tuple[int, ...]:
        if bit < 0:
            return (0,) * rank
        d = next(e for e in range(rank) if dst_off[e] <= bit < dst_off[e] + log2(dst_shape[e]))
        return tuple(1 << (bit - dst_off[d]) if e == d else 0 for e in range(rank))

    spt, tpw, wpc = [1] * rank, [1] * rank, [1] * rank
    for d in range(rank):
        bit, end = dst_off[d], dst_off[d] + log2(dst_shape[d])
        for field, kind in ((spt, "register"), (tpw, "lane"), (wpc, "warp")):
            while bit < end and kinds.get(bit) == kind:
                field[d] *= 2
                bit += 1
    # lanes and warps holding duplicates (zero bases) go to the slowest dimension, as blocked does
    tpw[0] *= 1 << mapped["lane"].count(-1)
    wpc[0] *= 1 << mapped["warp"].count(-1)
    cand = BlockedEncodingAttr(spt, tpw, wpc, list(range(rank - 1, -1, -1)))
    got = linear_layout(cand, dst_shape)
    want = {kind: tuple(dst_vec(b) for b in bits) for kind, bits in mapped.items()}
    if got.lane != want["lane"] or got.warp != want["warp"] or sorted(got.register) != sorted(want["register"]):
        return None
    return cand


def _row_major_bit_offsets(shape: Sequence[int]) -> list[int]:
    """Where each dimension's coordinate bits start in the row-major linear index."""
    out, off = [0] * len(shape), 0
    for d in reversed(range(len(shape))):
        out[d], off = off, off + log2(shape[d])
    return out


def reshaped_layout(enc: DistributedEncoding, src_shape: Sequence[int],
                    dst_shape: Sequence[int]) -> DistributedEncoding | None:
    """The layout of ``tt.reshape(x, dst_shape)`` whose lowering renames registers: the blocked one
    of :func:`reshaped_blocked` where there is one, else the ``#ttg.linear`` layout whose register,
    lane and warp bases are the source's carried through the row-major reshape (Triton's choice
    too); None when the source has no linear layout or the shapes are not powers of two."""
    blocked = reshaped_blocked(enc, src_shape, dst_shape)
    if blocked is not None:
        return blocked
    try:
        src = linear_layout(enc, src_shape)
    except (NotImplementedError, ValueError, TypeError):
        return None
    if prod(src_shape) != prod(dst_shape) or not all(_is_pow2(n) for n in (*src_shape, *dst_shape)):
        return None
    src_off, dst_off = _row_major_bit_offsets(src_shape), _row_major_bit_offsets(dst_shape)

    def move(v):
        lin = sum(x << src_off[d] for d, x in enumerate(v))
        return tuple((lin >> dst_off[e]) & (dst_shape[e] - 1) for e in range(len(dst_shape)))

    want = LinearLayout(tuple(dst_shape), tuple(map(move, src.register)), tuple(map(move, src.lane)),
                        tuple(map(move, src.warp)))
    cand = LinearEncodingAttr(want.register, want.lane, want.warp)
    return cand if cand.linear_layout(dst_shape) == want else None


def permuted_layout(enc: Attribute, perm: Sequence[int]) -> DistributedEncoding | None:
    """The layout of ``tt.trans(x, order=perm)`` that keeps every element in its thread: blocked
    fields permuted, or ``#ttg.linear`` bases permuted; None for other layouts."""
    if isinstance(enc, BlockedEncodingAttr):
        inv = {p: i for i, p in enumerate(perm)}
        return BlockedEncodingAttr([enc.size_per_thread[p] for p in perm], [enc.threads_per_warp[p] for p in perm],
                                   [enc.warps_per_cta[p] for p in perm], [inv[o] for o in enc.order])
    if isinstance(enc, LinearEncodingAttr):
        def f(bases):
            return [tuple(v[p] for p in perm) for v in bases]
        return LinearEncodingAttr(f(enc.register), f(enc.lane), f(enc.warp))
    return None


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


# --- types ---------------------------------------------------------------------------------------
def bit_width(t: Attribute) -> int:
    """Bits of a scalar type (pointers: 64); of a tensor, of its elements."""
    if isinstance(t, TensorType):
        t = t.element_type
    if isinstance(t, IntegerType):
        return t.width.data
    if isinstance(t, AnyFloat):
        return t.bitwidth
    if isinstance(t, (PointerType, IndexType)):
        return 64
    raise TypeError(f"no bit width for {t}")


def contig_per_thread(enc: DistributedEncoding, shape: Sequence[int]) -> tuple[int, ...]:
    """Per dimension, how many consecutive elements one thread holds (Triton's ``getContigPerThread``):
    the length of the chain of register bases 1, 2, 4, ... along that dimension."""
    ll = linear_layout(enc, shape)
    out = []
    for d in range(len(shape)):
        along = {vec[d] for vec in ll.register if vec[d] and not any(v for e, v in enumerate(vec) if e != d)}
        run = 1
        while run in along:
            run *= 2
        out.append(run)
    return tuple(out)


def convert_vectors(src_t, dst_t) -> tuple[int, int, int]:
    """How ``ttg.convert_layout`` between two tensor types moves data through shared memory:
    ``(write vector, read vector, row padding)`` in elements.  Each side accesses as many
    consecutive elements of the last dimension as its threads hold in consecutive registers (at most
    16 bytes); rows of at least 128 bytes are padded by four write vectors, which spreads the eight
    rows a tensor-core accumulator's warp writes at once over all banks (Triton pads the same way)."""
    shape = tuple(src_t.get_shape())
    ebytes = max(bit_width(src_t.element_type) // 8, 1)
    if bit_width(src_t.element_type) < 8 or not shape:
        return 1, 1, 0

    def vec(t) -> int:
        # the lowest register bits must walk the last dimension: registers r0 .. r0+n-1 of a group
        ll = linear_layout(t.encoding, shape)
        last = len(shape) - 1
        n = 1
        for basis in ll.register:
            if n >= 16 // ebytes or basis != tuple(n if d == last else 0 for d in range(len(shape))):
                break
            n *= 2
        return n

    w, r = vec(src_t), vec(dst_t)
    pad = 0
    if len(shape) > 1 and shape[-1] * ebytes >= 128:
        pad = -(-4 * w // r) * r  # four write vectors, kept a multiple of the read vector (alignment)
    return w, r, pad


#: a conversion whose whole tensor would take more shared memory than this goes through it in
#: row chunks (one barrier pair each); below it, one round trip (what every kernel the compiler
#: writes needs: a 128x256 fp32 accumulator is 136 KiB with its padding).  A backend with less
#: shared memory sets its own bound on the module (:data:`SCRATCH_LIMIT_ATTR`).
CONVERT_SCRATCH_LIMIT = 160 * 1024
SCRATCH_LIMIT_ATTR = "ttg.convert-scratch-limit"


def scratch_limit(op) -> int:
    """The conversion scratch bound of the module holding ``op``: its ``ttg.convert-scratch-limit``
    attribute, else :data:`CONVERT_SCRATCH_LIMIT`."""
    while op is not None:
        attr = getattr(op, "attributes", {}).get(SCRATCH_LIMIT_ATTR)
        if attr is not None:
            return int(attr.value.data)
        op = op.parent_op()
    return CONVERT_SCRATCH_LIMIT


def _convert_bytes(src_t, dst_t, chunks: int) -> int:
    shape = tuple(src_t.get_shape())
    _, _, pad = convert_vectors(src_t, dst_t)
    rows = prod(shape[:-1]) if len(shape) > 1 else 1
    ebytes = max(bit_width(src_t.element_type) // 8, 1)
    if len(shape) == 1:
        return shape[0] // chunks * ebytes
    return rows // chunks * (shape[-1] + pad) * ebytes


def convert_chunks(src_t, dst_t, limit: int = CONVERT_SCRATCH_LIMIT) -> int:
    """How many slices of dimension 0 a conversion moves one after the other (a power of two) so
    that one slice's scratch stays within ``limit`` bytes."""
    shape = tuple(src_t.get_shape())
    n = 1
    while _convert_bytes(src_t, dst_t, n) > limit and n < (shape[0] if shape else 1):
        n *= 2
    return n


def convert_scratch_bytes(src_t, dst_t, limit: int = CONVERT_SCRATCH_LIMIT) -> int:
    """Bytes of the padded scratch buffer :func:`convert_vectors` describes (one chunk of
    :func:`convert_chunks`)."""
    return _convert_bytes(src_t, dst_t, convert_chunks(src_t, dst_t, limit))
