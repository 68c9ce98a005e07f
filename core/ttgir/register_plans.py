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
from itertools import combinations, product

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
    the word of lane ``lane[l]``, which packs that lane's source registers ``words[sent[s]]`` (the
    first in the lowest bits, each as wide as an element).  A plain fetch has one packing, the same
    on every lane; in a *round* the lanes read a permutation of themselves, so each sender has one
    reader and packs what that reader needs: one of a few packings, chosen by at most two bits of
    the sender's lane id (:func:`deciding_bits`)."""

    lane: tuple[int, ...]                   # lane -> the lane it reads (an affine map over the lane bits)
    words: tuple[tuple[int, ...], ...]      # the packings a sender may send
    sent: tuple[int, ...] = ()              # sender lane -> its packing (empty: words[0] on every lane)

    def regs_of(self, sender: int) -> tuple[int, ...]:
        """The source registers lane ``sender`` packs."""
        return self.words[self.sent[sender] if self.sent else 0]


@dataclass(frozen=True)
class GatherPlan:
    """A conversion inside each warp done by fetching packed words from other lanes: ``fetches``,
    and per result register ``(fetch, slot)`` -- per lane, the fetch holding its element and the
    element's slot in that fetch's word."""

    fetches: tuple[Gather, ...]
    picks: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]


def deciding_bits(values: tuple, most: int = 2) -> tuple[int, ...] | None:
    """The fewest lane bits (at most ``most``) whose values alone give ``values[lane]`` for every
    lane, lowest first; ``()`` for a constant, None when more bits are needed."""
    lanes = len(values)
    nbits = max(lanes.bit_length() - 1, 0)
    for k in range(most + 1):
        for bits in combinations(range(nbits), k):
            mask = sum(1 << b for b in bits)
            if all(values[lane] == values[lane & mask] for lane in range(lanes)):
                return bits
    return None


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
    elements out of them.  Of the two plans below, the one with fewer fetches (plain fetches on a
    tie): plain fetches (:func:`_gather_plan`), every reader of a sender getting the same word, or
    rounds (:func:`_round_plan`), each a permutation of the lanes whose senders pack what their
    one reader needs.  None when an element changes warp or neither plan exists."""
    if src.warp != dst.warp or src.threads_per_warp != dst.threads_per_warp or elem_bits not in (8, 16):
        return None
    plain = _gather_plan(src, dst, 32 // elem_bits)
    rounds = _round_plan(src, dst, 32 // elem_bits)
    if rounds is not None and (plain is None or len(rounds.fetches) < len(plain.fetches)):
        return rounds
    return plain


def _owners(src: LinearLayout) -> dict[tuple[int, ...], tuple[int, int]]:
    """Each coordinate of warp 0 of ``src`` -> its owner: the lowest lane holding it, and that
    lane's lowest register holding it."""
    return {c: min((l, r) for r, ls in regs.items() for l in ls) for c, regs in _holders(src).items()}


def _wants(src: LinearLayout, dst: LinearLayout) -> list[list[tuple[int, int]]] | None:
    """Per lane, per result register: the (lane, register) of ``src`` to copy; None when a result
    element is not in the warp's source."""
    owner = _owners(src)
    d_tab = dst.table()[0]
    out = []
    for l in range(d_tab.shape[0]):
        row = [owner.get(tuple(int(x) for x in d_tab[l, r])) for r in range(d_tab.shape[1])]
        if any(g is None for g in row):
            return None
        out.append(row)
    return out


@lru_cache(maxsize=256)
def _gather_plan(src: LinearLayout, dst: LinearLayout, per_word: int) -> GatherPlan | None:
    """Plain fetches: result registers grouped by the lane map they read through; each group's
    source registers packed into words so that every result register's candidates sit in one."""
    wants = _wants(src, dst)
    if wants is None:
        return None
    lanes = len(wants)
    want = []
    for r in range(len(wants[0])):
        lane_map = tuple(wants[l][r][0] for l in range(lanes))
        if affine_lanes(lane_map) is None:
            return None
        want.append((lane_map, tuple(wants[l][r][1] for l in range(lanes))))
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
        fetches.extend(Gather(lane_map, (tuple(w),)) for w in words)
        for r in rs:
            f = next(i for i, w in enumerate(words) if set(want[r][1]) <= set(w))
            picks[r] = ((base + f,) * lanes, tuple(words[f].index(reg) for reg in want[r][1]))
    return GatherPlan(tuple(fetches), tuple(picks))


@lru_cache(maxsize=256)
def _round_plan(src: LinearLayout, dst: LinearLayout, per_word: int) -> GatherPlan | None:
    """Rounds: each lane's needs cut into *chunks* -- what it reads from one sender, in result
    register order, ``per_word`` at a time -- and the chunks dealt into rounds so that every round
    is a permutation of the lanes (an affine one).  Result registers that share a chunk on some
    lane or a result word form a component; within one, lane ``l`` takes its chunks in the order
    ``j XOR h(l)``, ``h`` a choice of lane bits searched for the fewest sender packings.  (fp8 attention's P into
    wgmma's A registers: lane ``t`` of a quad reads lanes 0,2,1,3 then 1,3,0,2, four bytes a
    round, one round an A register, where plain fetches take two.)"""
    wants = _wants(src, dst)
    if wants is None:
        return None
    lanes, nregs = len(wants), len(wants[0])
    lane_bits = lanes.bit_length() - 1
    chunks = []
    for l in range(lanes):
        by_sender: dict[int, list[int]] = {}
        for r in range(nregs):
            by_sender.setdefault(wants[l][r][0], []).append(r)
        chunks.append([tuple(rs[i:i + per_word]) for rs in by_sender.values() for i in range(0, len(rs), per_word)])
    parent = list(range(nregs))

    def find(r):
        while parent[r] != r:
            parent[r] = parent[parent[r]]
            r = parent[r]
        return r

    groups = [c for cs in chunks for c in cs] + [tuple(range(r, min(r + per_word, nregs)))
                                                   for r in range(0, nregs, per_word)]
    for c in groups:        # a chunk on some lane, or one result word
        for r in c[1:]:
            parent[find(r)] = find(c[0])
    comps: dict[int, None] = {}
    for r in range(nregs):
        comps.setdefault(find(r))
    fetches: list[Gather] = []
    fetch_of = [[0] * lanes for _ in range(nregs)]
    slot_of = [[0] * lanes for _ in range(nregs)]
    for root in comps:
        per_lane = [sorted(c for c in chunks[l] if find(c[0]) == root) for l in range(lanes)]
        n = len(per_lane[0])
        if any(len(p) != n for p in per_lane) or n & (n - 1):
            return None
        best = None
        for h in product(range(-1, lane_bits), repeat=n.bit_length() - 1):
            order = [sum(((l >> b) & 1) << i for i, b in enumerate(h) if b >= 0) for l in range(lanes)]
            got = _deal_rounds(wants, per_lane, order)
            if got is not None and (best is None or got[0] < best[0]):
                best = (got[0], got[1], order)
        if best is None:
            return None
        _, rounds, order = best
        for j in range(n):
            for l in range(lanes):
                for i, r in enumerate(per_lane[l][j ^ order[l]]):
                    fetch_of[r][l], slot_of[r][l] = len(fetches) + j, i
        fetches.extend(rounds)
    if any(deciding_bits(tuple(f)) is None for f in fetch_of):
        return None     # a lane's fetch for a register chosen by more than two lane bits
    return GatherPlan(tuple(fetches), tuple((tuple(fetch_of[r]), tuple(slot_of[r])) for r in range(nregs)))


def _deal_rounds(wants, per_lane, order) -> tuple[int, list[Gather]] | None:
    """The rounds of one component with lane ``l`` taking chunk ``j ^ order[l]`` in round ``j``, and
    their cost (the packings senders choose among); None when a round's lanes are not an affine
    permutation or a sender's packing needs more than two lane bits to choose."""
    lanes = len(per_lane)
    cost, rounds = 0, []
    for j in range(len(per_lane[0])):
        taken = [per_lane[l][j ^ order[l]] for l in range(lanes)]
        lane_map = tuple(wants[l][c[0]][0] for l, c in enumerate(taken))
        if sorted(lane_map) != list(range(lanes)) or affine_lanes(lane_map) is None:
            return None
        reader = {s: l for l, s in enumerate(lane_map)}
        packed = [tuple(wants[reader[s]][r][1] for r in taken[reader[s]]) for s in range(lanes)]
        words = list(dict.fromkeys(packed))
        sent = tuple(words.index(p) for p in packed)
        if deciding_bits(sent) is None:
            return None
        cost += len(words) - 1
        rounds.append(Gather(lane_map, tuple(words), sent if len(words) > 1 else ()))
    cost += 1 if any(order) else 0      # the readers' picks then depend on their lane bits too
    return cost, rounds
