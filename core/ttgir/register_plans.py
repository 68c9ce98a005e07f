"""Register plans for the shape ops (broadcast, expand_dims, trans, reshape, join, split, cat).

Each shape op is a coordinate map from a result element to the source element it copies.  When the
map takes the result layout's lane and warp bases onto the source layout's, the same threads hold
corresponding elements and the op is a renaming of registers (a *plan*: result register ->
(source operand, source register)); otherwise the tensor goes through shared memory.  The lowering
follows the plan, and the allocation pass gives the op scratch exactly when there is none.

The same question for ``ttg.convert_layout`` inside a warp (:func:`warp_exchange_plan`): each
result register from the lane's own source register or from the lane across one lane-id bit,
which a target that exchanges lanes (``TargetInfo.warp_exchange``) lowers without shared memory."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from xdsl.dialects.builtin import TensorType

from .layouts import linear_layout, total_elems_per_thread
from .linear_layout import LinearLayout

Coord = tuple[int, ...]


def coord_map(op) -> Callable[[Coord], tuple[Coord, int]]:
    name = op.name
    dst_shape = op.results[0].type.get_shape()
    src_shape = op.operands[0].type.get_shape() if isinstance(op.operands[0].type, TensorType) else ()
    if name == "tt.broadcast":
        return lambda c: (tuple(0 if s == 1 and d != 1 else x for x, s, d in zip(c, src_shape, dst_shape)), 0)
    if name == "tt.expand_dims":
        ax = op.axis.value.data
        return lambda c: (c[:ax] + c[ax + 1:], 0)
    if name == "tt.trans":
        order = op.order.get_values()
        inv = [order.index(i) for i in range(len(order))]
        return lambda c: (tuple(c[inv[i]] for i in range(len(order))), 0)
    if name == "tt.reshape":
        def f(c):
            lin = 0
            for x, s in zip(c, dst_shape):
                lin = lin * s + x
            out = []
            for s in reversed(src_shape):
                out.append(lin % s)
                lin //= s
            return tuple(reversed(out)), 0
        return f
    if name == "tt.join":
        return lambda c: (c[:-1], c[-1])
    if name == "tt.split":
        raise AssertionError("split has two results; see _split")
    if name == "tt.cat":
        n0 = src_shape[0]
        return lambda c: ((c[0] % n0,) + c[1:], c[0] // n0)
    raise ValueError(f"no coordinate map for {name}")


def register_plan(op, f=None, src_index: int = 0, result_index: int = 0):
    """``[result register] -> (source operand, source register)`` when the result's elements already
    live in the same threads as the sources'; None when shared memory is needed."""
    if op.name == "tt.reshape" and "efficient_layout" in op.properties:
        return _renamed(op)
    f = f or coord_map(op)
    rt = op.results[result_index].type
    ll_dst = linear_layout(rt.encoding, rt.get_shape())
    srcs = [v.type for v in op.operands]
    lls = [linear_layout(t.encoding, t.get_shape()) for t in srcs]
    # thread parts must agree: result lane/warp bases map onto the source's
    for kind in ("lane", "warp"):
        for bd, bs in zip(getattr(ll_dst, kind), getattr(lls[0], kind)):
            mapped, which = f(bd)
            if which != 0 and any(bd):
                return None
            if tuple(mapped) != tuple(bs):
                return None
        for other in lls[1:]:
            if getattr(other, kind) != getattr(lls[0], kind):
                return None
    index = [{tuple(int(x) for x in off): r for r, off in reversed(list(enumerate(ll.reg_offsets())))}
             for ll in lls]
    plan = []
    for off in ll_dst.reg_offsets():
        c, which = f(tuple(int(x) for x in off))
        r = index[which].get(tuple(c))
        if r is None:
            return None
        plan.append((which, r))
    return plan


def _renamed(op) -> list:
    """``tt.reshape allow_reorder efficient_layout``: its layout was chosen so that register ``r``
    of the source is register ``r`` of the result (the elements may move: the reshape allows it)."""
    src_t, dst_t = op.operands[0].type, op.results[0].type
    n = total_elems_per_thread(src_t.encoding, src_t.get_shape())
    if total_elems_per_thread(dst_t.encoding, dst_t.get_shape()) != n:
        raise ValueError(f"an efficient_layout reshape must keep each thread's registers: {src_t} -> {dst_t}")
    return [(0, r) for r in range(n)]



def _split_maps(op):
    return [lambda c, k=k: (c + (k,), 0) for k in (0, 1)]


def split_plans(op):
    plans = [register_plan(op, f, 0, i) for i, f in enumerate(_split_maps(op))]
    return None if any(p is None for p in plans) else plans


# ---- conversions within a warp -------------------------------------------------------------------

@dataclass(frozen=True)
class LaneMove:
    """How one register of a conversion's result is filled inside its warp: from source register
    ``reg`` of the lane itself (``bit`` < 0), or, with ``bit`` >= 0, of the lane whose lane-id bit
    ``bit`` is ``keep`` and whose other bits are the lane's own -- lanes with that bit already
    ``keep`` take their own register, the others exchange with ``lane ^ (1 << bit)`` (the result
    reads one half of the warp for both halves)."""

    reg: int
    bit: int = -1
    keep: int = 0

    @property
    def mask(self) -> int:
        """The lane mask of the exchange (0: no exchange)."""
        return 0 if self.bit < 0 else 1 << self.bit


def warp_exchange_plan(src: LinearLayout, dst: LinearLayout) -> tuple[LaneMove, ...] | None:
    """A conversion whose elements stay in their warp, done with one cross-lane exchange (or
    none) per result register: per register of ``dst``, the :class:`LaneMove` that fills it.
    None when an element changes warp, or a register would need lanes that neither the lane itself
    nor one half-warp read reaches from the same source register."""
    if src.warp != dst.warp or src.threads_per_warp != dst.threads_per_warp:
        return None
    return _exchange_plan(src, dst)


def _holders(src: LinearLayout) -> dict[tuple[int, ...], dict[int, set[int]]]:
    """Warp 0 of ``src``: each coordinate -> the registers holding it -> the lanes holding it there
    (every warp is warp 0's coordinates XOR its own bases, which both sides of a conversion inside
    the warp share)."""
    held: dict[tuple[int, ...], dict[int, set[int]]] = {}
    s_tab = src.table()[0]                                      # [lane, reg, rank]
    for l in range(s_tab.shape[0]):
        for r in range(s_tab.shape[1]):
            held.setdefault(tuple(int(x) for x in s_tab[l, r]), {}).setdefault(r, set()).add(l)
    return held


@lru_cache(maxsize=256)
def _exchange_plan(src: LinearLayout, dst: LinearLayout) -> tuple[LaneMove, ...] | None:
    lanes = np.arange(src.threads_per_warp)
    held = _holders(src)
    d_tab = dst.table()[0]
    bits = src.threads_per_warp.bit_length() - 1
    moves = []
    for r in range(d_tab.shape[1]):
        wanted = [held.get(tuple(int(x) for x in d_tab[l, r])) for l in lanes]
        if any(w is None for w in wanted):
            return None
        regs = set.intersection(*(set(w) for w in wanted))
        best = None
        for sr in sorted(regs):
            src_lanes = [w[sr] for w in wanted]
            if all(int(l) in s for l, s in zip(lanes, src_lanes)):
                cand = LaneMove(sr)
            else:
                cand = None
                for b in range(bits):
                    for keep in (0, 1):
                        if all((int(l) & ~(1 << b)) | (keep << b) in s for l, s in zip(lanes, src_lanes)):
                            cand = LaneMove(sr, bit=b, keep=keep)
                            break
                    if cand:
                        break
            if cand is not None and (best is None or (cand.mask == 0) > (best.mask == 0)):
                best = cand
            if best is not None and best.mask == 0:
                break
        if best is None:
            return None
        moves.append(best)
    return tuple(moves)


@dataclass(frozen=True)
class Gather:
    """One word every lane fetches from another lane in a :class:`GatherPlan`: lane ``l`` reads
    the word of lane ``lane[l]``, which packs that lane's source registers ``regs`` (the first in
    the lowest bits, each as wide as an element)."""

    lane: tuple[int, ...]       # lane -> the lane it reads (an affine map over the lane bits)
    regs: tuple[int, ...]       # source registers packed in the word, element 0 in the low bits


@dataclass(frozen=True)
class GatherPlan:
    """A conversion inside each warp done by fetching packed words from other lanes: ``fetches``,
    and per result register ``(fetch, slots)`` -- the fetch holding its element and, per lane, the
    element's slot in that fetch's word."""

    fetches: tuple[Gather, ...]
    picks: tuple[tuple[int, tuple[int, ...]], ...]


def affine_lanes(lane_map: tuple[int, ...]) -> tuple[int, tuple[int, ...]] | None:
    """``lane_map`` as ``c XOR (XOR of cols[i] for each set bit i of the lane)`` over GF(2):
    ``(c, cols)``, or None when it is not affine."""
    n = len(lane_map)
    c = lane_map[0]
    cols = tuple(lane_map[1 << i] ^ c for i in range(n.bit_length() - 1))
    for lane in range(n):
        v = c
        for i, col in enumerate(cols):
            if lane >> i & 1:
                v ^= col
        if v != lane_map[lane]:
            return None
    return c, cols


def warp_gather_plan(src: LinearLayout, dst: LinearLayout, elem_bits: int) -> GatherPlan | None:
    """A conversion inside each warp of ``elem_bits``-bit elements (8 or 16) as word fetches:
    each lane packs ``32 // elem_bits`` of its registers into a word, every lane fetches the words
    holding its elements from the lanes that own them (one indexed shuffle a word) and picks its
    elements out of them.  None when an element changes warp, a fetch's lanes are not an affine
    map of the lane id, or the registers one result register draws on do not fit one word."""
    if src.warp != dst.warp or src.threads_per_warp != dst.threads_per_warp or elem_bits not in (8, 16):
        return None
    return _gather_plan(src, dst, 32 // elem_bits)


@lru_cache(maxsize=256)
def _gather_plan(src: LinearLayout, dst: LinearLayout, per_word: int) -> GatherPlan | None:
    # each coordinate's owner: its lowest lane, and that lane's lowest register holding it
    owner = {c: min((l, r) for r, ls in regs.items() for l in ls) for c, regs in _holders(src).items()}
    d_tab = dst.table()[0]
    lanes = d_tab.shape[0]
    # per result register: the lane each lane reads and the register it wants there
    want = []
    for r in range(d_tab.shape[1]):
        got = [owner.get(tuple(int(x) for x in d_tab[l, r])) for l in range(lanes)]
        if any(g is None for g in got):
            return None
        lane_map = tuple(g[0] for g in got)
        if affine_lanes(lane_map) is None:
            return None
        want.append((lane_map, tuple(g[1] for g in got)))
    # group result registers by lane map; pack each group's source registers into words so that
    # every result register's candidates sit in one word
    fetches: list[Gather] = []
    picks: list = [None] * len(want)
    by_map: dict[tuple[int, ...], list[int]] = {}
    for r, (lane_map, _regs) in enumerate(want):
        by_map.setdefault(lane_map, []).append(r)
    for lane_map, rs in by_map.items():
        words: list[list[int]] = []
        for r in rs:
            cand = sorted(set(want[r][1]))
            if len(cand) > per_word:
                return None
            word = next((w for w in words if set(cand) <= set(w) or len(set(w) | set(cand)) <= per_word), None)
            if word is None:
                words.append(list(cand))
                word = words[-1]
            else:
                word.extend(c for c in cand if c not in word)
        base = len(fetches)
        fetches.extend(Gather(lane_map, tuple(w)) for w in words)
        for r in rs:
            f = next(i for i, w in enumerate(words) if set(want[r][1]) <= set(w))
            picks[r] = (base + f, tuple(words[f].index(reg) for reg in want[r][1]))
    return GatherPlan(tuple(fetches), tuple(picks))
