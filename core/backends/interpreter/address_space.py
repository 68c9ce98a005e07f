"""The interpreter's virtual address space.

Every array argument of a launch gets its own 2**40-byte region: the region of argument ``k`` starts
at ``(k + 1) << 40`` (so every base is aligned far beyond 16 and divisibility specialisation holds)
and a pointer value is a plain int64 address.  The buffer an address belongs to is then
``(addr + 2**39) >> 40`` with no search, and any address within 2**39 bytes of a buffer, before or
after it, is reported as an out-of-bounds access *of that argument* with its element offset.
Address 0 (``None`` arguments) belongs to no buffer.
"""
from __future__ import annotations

import ctypes

import numpy as np

SHIFT = 40
HALF = 1 << (SHIFT - 1)


# numpy >= 2 moved byte_bounds
_byte_bounds = getattr(getattr(np.lib, "array_utils", None), "byte_bounds", None) or np.byte_bounds
_LOG2 = {1: 0, 2: 1, 4: 2, 8: 3, 16: 4}
_ZERO64 = np.zeros((), np.int64)
_max, _or = np.maximum.reduce, np.bitwise_or.reduce


class AccessError(Exception):
    """An access outside every argument's memory; the executor adds kernel, line and pid."""


class Buffer:
    """One argument's bytes (``raw``, writable through to the caller's array) at ``region``;
    the argument's own pointer is ``region + start``."""

    __slots__ = ("raw", "nbytes", "region", "start", "name", "owner", "_views", "_limits")

    def __init__(self, array: np.ndarray, region: int, name: str):
        self.owner = array  # keeps the memory alive
        if array.flags.c_contiguous:
            self.raw, self.start = array.reshape(-1).view(np.uint8), 0
        else:
            lo, hi = _byte_bounds(array)
            mem = (ctypes.c_uint8 * (hi - lo)).from_address(lo)
            self.raw = np.ctypeslib.as_array(mem)
            self.start = array.__array_interface__["data"][0] - lo
        self.nbytes = self.raw.nbytes
        self.region, self.name = region, name
        self._views: dict = {}
        self._limits: dict = {}

    def limits(self, isz: int):
        """(largest valid byte offset as uint64 -- negative offsets wrap above it, log2(isz))"""
        lim = self._limits.get(isz)
        if lim is None:
            lim = self._limits[isz] = (np.uint64(self.nbytes - isz) if self.nbytes >= isz else None,
                                       np.int64(_LOG2[isz]))
        return lim

    @property
    def pointer(self) -> int:
        return self.region + self.start

    def view(self, dtype) -> np.ndarray:
        v = self._views.get(dtype)
        if v is None:
            isz = np.dtype(dtype).itemsize
            v = self.raw[: self.nbytes - self.nbytes % isz].view(dtype)
            self._views[dtype] = v
        return v

    def describe(self) -> str:
        return f"argument {self.name} ({self.owner.dtype}[{self.owner.size}])"


class AddressSpace:
    """The buffers of one launch."""

    def __init__(self):
        self.buffers: list[Buffer | None] = [None]

    def add(self, array: np.ndarray, name: str) -> np.int64:
        buf = Buffer(array, len(self.buffers) << SHIFT, name)
        self.buffers.append(buf)
        return np.int64(buf.pointer)

    def resolve(self, addr: np.ndarray, mask, isz: int, kind: str):
        """Map int64 addresses (any shape) to ``[(buffer, lanes, element_index)]``.  ``lanes`` is the
        boolean lane selection of that buffer (``None``: every lane); masked-off lanes are never
        checked and get index 0.  Raises :class:`AccessError` for an active lane outside its
        buffer or misaligned for ``isz``-byte elements."""
        # Fast path: every lane in the buffer of lane 0 (masked-off lanes count as offset 0).
        if addr.size:
            k = (int(addr.flat[0]) + HALF) >> SHIFT
            bufs = self.buffers
            if 0 < k < len(bufs):
                buf = bufs[k]
                off = addr - buf.region
                if mask is not None:
                    off = np.where(mask, off, _ZERO64)
                u = off.view(np.uint64)
                lim, sh = buf.limits(isz)
                if lim is not None and not (_max(u, None) > lim or (isz > 1 and _or(u, None) & (isz - 1))):
                    return [(buf, mask, np.right_shift(off, sh))]
        return self._resolve_slow(addr, mask, isz, kind)

    def _resolve_slow(self, addr, mask, isz, kind):
        active = np.ones(addr.shape, bool) if mask is None else np.asarray(mask, bool)
        ks = (addr + HALF) >> SHIFT
        groups = []
        for k in np.unique(ks[active]):
            lanes = active & (ks == k)
            buf = self.buffers[k] if 0 < k < len(self.buffers) else None
            if buf is None:
                lane = int(np.flatnonzero(lanes.reshape(-1))[0])
                a = int(addr.reshape(-1)[lane])
                raise AccessError(f"{kind} of address {a:#x} (lane {lane}), which lies in no argument's "
                                  "memory (a null or forged pointer)")
            off = addr - buf.region
            bad = lanes & ((off < 0) | (off > buf.nbytes - isz) | ((off & (isz - 1)) != 0))
            if bad.any():
                lane = int(np.flatnonzero(bad.reshape(-1))[0])
                rel = int(addr.reshape(-1)[lane]) - buf.pointer
                elem, rem = divmod(rel, isz)
                what = (f"element offset {elem}" if rem == 0 else f"byte offset {rel} (misaligned for "
                        f"{isz}-byte elements)")
                raise AccessError(f"out-of-bounds {kind} at {what} of {buf.describe()}; valid "
                                  f"element offsets are 0..{(buf.nbytes - buf.start) // isz - 1} (lane {lane})")
            groups.append((buf, lanes, np.where(lanes, off >> (isz.bit_length() - 1), 0)))
        return groups


def gather(space: AddressSpace, addr, mask, other, info, kind="load"):
    """Held values at ``addr`` where ``mask``, ``other`` (or 0) elsewhere."""
    addr = np.asarray(addr)
    if mask is not None and (type(mask) is not np.ndarray or mask.shape != addr.shape):
        mask = np.broadcast_to(np.asarray(mask), addr.shape)
    isz = info.itemsize
    groups = space.resolve(addr, mask, isz, kind)
    load = info.load
    if len(groups) == 1 and groups[0][1] is mask:
        buf, _, idx = groups[0]
        vals = buf.view(info.store)[idx]
        if load is not None:
            vals = load(vals)
        if mask is not None:
            vals = np.where(mask, vals, info.zero if other is None else other)
        return vals.astype(info.hold, copy=False)
    out = np.zeros(addr.shape, info.hold)
    if other is not None:
        out[...] = other
    for buf, lanes, idx in groups:
        vals = buf.view(info.store)[idx[lanes]]
        out[lanes] = load(vals) if load is not None else vals
    return out


def scatter(space: AddressSpace, addr, value, mask, info):
    addr = np.asarray(addr)
    if mask is not None and (type(mask) is not np.ndarray or mask.shape != addr.shape):
        mask = np.broadcast_to(np.asarray(mask), addr.shape)
    if type(value) is not np.ndarray or value.shape != addr.shape:
        value = np.broadcast_to(np.asarray(value, info.hold), addr.shape)
    if info.save is not None:
        value = info.save(value)
    groups = space.resolve(addr, mask, info.itemsize, "store")
    for buf, lanes, idx in groups:
        view = buf.view(info.store)
        if lanes is None:
            view[idx] = value
        else:
            view[idx[lanes]] = value[lanes]


def atomic(space: AddressSpace, addr, mask, info, update, *operands):
    """Apply ``update(old, *operands) -> new`` lane by lane in lane order for lanes sharing an address
    (vectorised over distinct addresses); returns the old values (0 where masked off)."""
    addr = np.asarray(addr)
    shape = addr.shape
    if mask is not None:
        mask = np.broadcast_to(np.asarray(mask), shape)
    ops = [np.broadcast_to(np.asarray(o), shape).reshape(-1) for o in operands]
    out = np.zeros(addr.size, info.hold)
    for buf, lanes, idx in space.resolve(addr, mask, info.itemsize, "atomic"):
        view = buf.view(info.store)
        sel = np.arange(addr.size) if lanes is None else np.flatnonzero(lanes.reshape(-1))
        where = idx.reshape(-1)[sel]
        order = np.argsort(where, kind="stable")
        s = where[order]
        pos = np.arange(s.size)
        starts = np.maximum.accumulate(np.where(np.r_[True, s[1:] != s[:-1]], pos, 0)) if s.size else pos
        rank = pos - starts
        for r in range(int(rank.max()) + 1 if s.size else 0):
            pick = order[rank == r]
            ii = where[pick]
            old = view[ii]
            if info.load is not None:
                old = info.load(old)
            new = update(old, *(o[sel[pick]] for o in ops))
            view[ii] = info.save(new) if info.save is not None else new
            out[sel[pick]] = old
    return out.reshape(shape) if shape else out[0]
