"""A layout as a linear map over GF(2): the one representation every distributed encoding is reduced
to, and the contract the TTGIR -> LLVM lowering reads.

A register index ``reg``, a lane id ``lane`` and a warp id ``warp`` are bit vectors.  Each set bit
contributes a *basis* coordinate vector, and the contributions are combined with XOR::

    coord = XOR_{b: bit b of reg set} register[b]  ^  XOR_{b: lane bit set} lane[b]  ^  XOR ... warp[b]

A basis that is all zeros means that input bit does not move the coordinate: the threads (or
registers) that differ only in that bit hold the same element — a broadcast duplicate.

For the generic encodings (blocked, slice, dot_op of blocked) every basis has one non-zero dimension
and, along a dimension, the non-zero bases are distinct powers of two.  Then XOR equals addition
and the layout is *additive*::

    coord[d] = thread_offset[d](lane, warp) + reg_offset[d][reg]

where ``thread_offset`` is a sum of ``IndexTerm``s, ``((src >> shift) & mask) * scale``, i.e. what
Triton's ``emitIndices`` produces.  Vendor layouts that swizzle may be non-additive; the lowering
then combines the parts with XOR (``LinearLayout.is_additive`` says which).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

Basis = tuple[int, ...]


def is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def log2(n: int) -> int:
    if not is_pow2(n):
        raise ValueError(f"layouts need power-of-two sizes, got {n}")
    return n.bit_length() - 1


@dataclass(frozen=True)
class IndexTerm:
    """``((src >> shift) & (2**width - 1)) * scale`` with ``src`` one of ``"lane"``, ``"warp"``.

    Equivalently ``(src // 2**shift) % 2**width * scale``: the classic blocked-layout index formula.
    """

    src: str
    shift: int
    width: int
    scale: int

    def __call__(self, value):
        return ((value >> self.shift) & ((1 << self.width) - 1)) * self.scale


@dataclass(frozen=True)
class LinearLayout:
    """Bases of a distributed layout for one tensor ``shape``.

    ``register[b]``, ``lane[b]``, ``warp[b]`` are the coordinate vectors (length ``rank``) of input
    bit ``b``.  ``len(register)`` is log2 of the registers (elements) per thread; ``len(lane)`` is
    log2 of ``threads_per_warp`` and ``len(warp)`` log2 of ``num_warps``: a layout always names
    every lane and warp even when some only hold duplicates.
    """

    shape: tuple[int, ...]
    register: tuple[Basis, ...]
    lane: tuple[Basis, ...]
    warp: tuple[Basis, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def num_registers(self) -> int:
        return 1 << len(self.register)

    @property
    def threads_per_warp(self) -> int:
        return 1 << len(self.lane)

    @property
    def num_warps(self) -> int:
        return 1 << len(self.warp)

    # -- evaluation ------------------------------------------------------------------------------
    @staticmethod
    def _apply(bases: tuple[Basis, ...], values: np.ndarray, rank: int) -> np.ndarray:
        values = np.asarray(values, dtype=np.int64)
        out = np.zeros(values.shape + (rank,), dtype=np.int64)
        for b, vec in enumerate(bases):
            bit = ((values >> b) & 1)[..., None]
            out ^= bit * np.asarray(vec, dtype=np.int64)
        return out

    def coordinates(self, reg, lane, warp) -> np.ndarray:
        """Coordinates (last axis = dimension) held by ``reg`` of ``lane`` in ``warp``; the three
        arguments broadcast together like numpy arrays."""
        reg, lane, warp = np.broadcast_arrays(np.asarray(reg), np.asarray(lane), np.asarray(warp))
        return (self._apply(self.register, reg, self.rank) ^ self._apply(self.lane, lane, self.rank)
                ^ self._apply(self.warp, warp, self.rank))

    def table(self) -> np.ndarray:
        """Every coordinate: an array ``[num_warps, threads_per_warp, num_registers, rank]``."""
        w = np.arange(self.num_warps)[:, None, None]
        l = np.arange(self.threads_per_warp)[None, :, None]
        r = np.arange(self.num_registers)[None, None, :]
        return self.coordinates(r, l, w)

    def reg_offsets(self) -> np.ndarray:
        """``[num_registers, rank]``: the coordinate of each register of lane 0 of warp 0."""
        return self._apply(self.register, np.arange(self.num_registers), self.rank)

    def thread_offsets(self, lane, warp) -> np.ndarray:
        """Coordinate of register 0 of ``lane`` in ``warp`` (numpy-broadcast), last axis = dim."""
        lane, warp = np.broadcast_arrays(np.asarray(lane), np.asarray(warp))
        return self._apply(self.lane, lane, self.rank) ^ self._apply(self.warp, warp, self.rank)

    # -- structure -------------------------------------------------------------------------------
    @cached_property
    def is_additive(self) -> bool:
        """Whether XOR may be read as ``+`` (see the module docstring)."""
        seen: list[set[int]] = [set() for _ in self.shape]
        for vec in (*self.register, *self.lane, *self.warp):
            nz = [d for d, v in enumerate(vec) if v]
            if not nz:
                continue
            if len(nz) > 1 or not is_pow2(vec[nz[0]]) or vec[nz[0]] in seen[nz[0]]:
                return False
            seen[nz[0]].add(vec[nz[0]])
        return True

    def index_terms(self) -> list[list[IndexTerm]]:
        """Per dimension, the terms whose sum is ``thread_offset[d](lane, warp)``.

        Runs of consecutive input bits mapping to consecutive powers of two of one dimension merge
        into one term, so a blocked layout yields one term per (dimension, lane|warp)."""
        if not self.is_additive:
            raise ValueError("index_terms needs an additive layout; use the XOR bases instead")
        terms: list[list[IndexTerm]] = [[] for _ in self.shape]
        for src, bases in (("lane", self.lane), ("warp", self.warp)):
            run: tuple[int, int, int, int] | None = None  # (dim, shift, width, scale)
            for b, vec in enumerate(bases):
                nz = [d for d, v in enumerate(vec) if v]
                if run and nz and nz[0] == run[0] and vec[run[0]] == run[3] << run[2] and b == run[1] + run[2]:
                    run = (run[0], run[1], run[2] + 1, run[3])
                    continue
                if run:
                    terms[run[0]].append(IndexTerm(src, run[1], run[2], run[3]))
                run = (nz[0], b, 1, vec[nz[0]]) if nz else None
            if run:
                terms[run[0]].append(IndexTerm(src, run[1], run[2], run[3]))
        return terms

    def free_masks(self) -> dict[str, int]:
        """Bit masks of the inputs whose basis is zero: a lane (warp, register) with any of these bits
        set holds a duplicate of the one with them cleared.  Stores and atomics predicate on
        ``(lane & mask["lane"]) == 0`` so each element is written once."""
        def mask(bases):
            return sum(1 << b for b, vec in enumerate(bases) if not any(vec))
        return {"register": mask(self.register), "lane": mask(self.lane), "warp": mask(self.warp)}

    def owners(self) -> dict[tuple[int, ...], set[tuple[int, int, int]]]:
        """Coordinate -> set of ``(warp, lane, reg)`` holding it (for tests and debugging)."""
        out: dict[tuple[int, ...], set[tuple[int, int, int]]] = {}
        tab = self.table()
        for w in range(tab.shape[0]):
            for l in range(tab.shape[1]):
                for r in range(tab.shape[2]):
                    out.setdefault(tuple(int(c) for c in tab[w, l, r]), set()).add((w, l, r))
        return out


def fit_to_shape(register: list[Basis], lane: list[Basis], warp: list[Basis], shape: tuple[int, ...],
                 order: tuple[int, ...]) -> LinearLayout:
    """Adapt a layout tile to ``shape``: bases reaching past the shape are zeroed for lanes and
    warps (broadcast) and removed for registers (no wasted registers); a shape larger than the tile
    gets extra register bases (wrap-around), fastest dimension (``order[0]``) first."""
    rank = len(shape)
    for n in shape:
        log2(n)

    def clip(vec: Basis) -> Basis:
        return tuple(v if v < shape[d] else 0 for d, v in enumerate(vec))

    reg = [clip(v) for v in register if all(x < shape[d] for d, x in enumerate(v))]
    lanes = [clip(v) for v in lane]
    warps = [clip(v) for v in warp]
    covered = [1] * rank
    for vec in (*reg, *lanes, *warps):
        for d, v in enumerate(vec):
            if v:
                covered[d] = max(covered[d], 2 * v)
    for d in order:
        size = covered[d]
        while size < shape[d]:
            reg.append(tuple(size if e == d else 0 for e in range(rank)))
            size *= 2
    return LinearLayout(tuple(shape), tuple(reg), tuple(lanes), tuple(warps))


def identity_bases(sizes: tuple[int, ...], order: tuple[int, ...], start: tuple[int, ...] | None = None) -> list[Basis]:
    """Bases enumerating a ``sizes`` box dimension by dimension in ``order`` (fastest first); along
    dimension ``d`` the first basis is ``start[d]`` (default 1) and each next one doubles."""
    rank = len(sizes)
    start = start or (1,) * rank
    out: list[Basis] = []
    for d in order:
        for b in range(log2(sizes[d])):
            out.append(tuple((start[d] << b) if e == d else 0 for e in range(rank)))
    return out
