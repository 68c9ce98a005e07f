"""``ttg.barrier`` (and ``gpu.barrier``, ``tl.debug_barrier``) and the explicit shared-memory buffers (``ttg.local_alloc/load/store/dealloc``,
``ttg.memdesc_index``).

A buffer value is the i8 shared pointer of its first byte.  Where the buffer's encoding defines its
own placement (``offset(coords, shape)``, linear over GF(2) in the coordinate bits, e.g. a vendor's
swizzled tensor-core layout that other hardware units read) elements go where it says; otherwise
they are stored row-major (only this lowering touches such buffers, so the swizzle of a generic
shared encoding is a bank-conflict optimisation left for later)."""
from __future__ import annotations

from math import prod

import llvmlite.ir as ir

from ...ttgir.encodings import BlockedEncodingAttr, DotOperandEncodingAttr, SwizzledSharedEncodingAttr
from ...ttgir.layouts import bit_width
from .lowering import FunctionLowering, lowers
from .shape_ops import bit_map_index, linear_index, read_tensor, write_tensor
from .types import I32, const


def element_index(fl: FunctionLowering, memdesc_type, shape):
    """``coords -> i32 element index`` in a buffer of type ``memdesc_type`` viewed with ``shape``."""
    enc = memdesc_type.encoding
    if hasattr(enc, "offset_bases") or _swizzles(enc, shape):
        # the placement the vector path uses too, so that either path reads what the other wrote
        return lambda c: bit_map_index(fl, c, shape, lambda cc: enc.offset(cc, shape))
    return lambda c: linear_index(fl, c, shape)


def _swizzles(enc, shape) -> bool:
    """A ``#ttg.swizzled_shared`` encoding that groups or swizzles (``vec`` or ``maxPhase`` above 1)
    and is a bit map over ``shape``: its buffers are placed as it says (plain row-major ones, and
    ones that are not bit maps, are placed row-major in element order)."""
    return isinstance(enc, SwizzledSharedEncodingAttr) and (enc.vec.data > 1 or enc.maxPhase.data > 1) \
        and enc.is_linear(shape)


class LinearSharedAccess:
    """Addresses of a distributed tensor's elements in a buffer whose encoding places elements by
    ``offset_bases(shape)`` (a byte offset per coordinate bit, combined with XOR).  The map is linear
    over GF(2), so an element's offset is the thread part (computed once per access) XOR a constant
    per register; registers are grouped into vectors of consecutive bytes (at most 16).

    ``bases`` gives the map directly (instead of ``enc``).  With ``fold`` the register constant is
    split into the bits the thread part can have (XORed in) and the others (added): the address is
    then a per-thread base plus an immediate, which LLVM folds into the LDS instruction's offset
    field and pairs (``ds_read2``)."""

    def __init__(self, fl: FunctionLowering, t, enc, shape, max_bytes: int = 16, bases=None, fold: bool = False):
        b = fl.builder
        self.fl, self.info = fl, fl.layout(t)
        self.bases = bases if bases is not None else enc.offset_bases(shape)
        self.fold = fold
        # the offset bits any (lane, warp) can contribute
        ll = self.info.ll
        self.thread_bits = 0
        for d, row in enumerate(self.bases):
            used = 0
            for v in (*ll.lane, *ll.warp):
                used |= int(v[d])
            for bit, v in enumerate(row):
                if used >> bit & 1:
                    self.thread_bits |= v
        ebytes = max(bit_width(t.element_type) // 8, 1)
        thread = fl.thread_coords(self.info)
        off = const(I32, 0)
        for d, row in enumerate(self.bases):
            for bit, v in enumerate(row):
                if v:
                    on = b.and_(b.lshr(thread[d], const(I32, bit)), const(I32, 1))
                    off = b.xor(off, b.mul(on, const(I32, v)))
        self.thread_offset = off
        # register bits that walk consecutive bytes of the buffer: one vector access.  The lowest
        # ones in order; with ``fold`` any (a thread holding a 4x8 block of a K-contiguous buffer
        # writes 8 vectors of 4 along its second register dimension)
        regs = self.info.ll.register
        self.vec_bits: list[int] = []
        while (1 << len(self.vec_bits)) * ebytes < max_bytes:
            want = (1 << len(self.vec_bits)) * ebytes
            cand = [j for j in range(len(regs)) if j not in self.vec_bits and self.byte_offset(regs[j]) == want]
            if not fold:
                cand = [j for j in cand if j == len(self.vec_bits)]
            if not cand:
                break
            self.vec_bits.append(cand[0])
        # a vector is consecutive bytes only where nothing else reaches into its span: no bit the
        # thread part or another register basis can set below ``vec * ebytes`` (XOR is an add there)
        while self.vec_bits:
            span = (1 << len(self.vec_bits)) * ebytes
            others = self.thread_bits
            for j, basis in enumerate(regs):
                if j not in self.vec_bits:
                    others |= self.byte_offset(basis)
            if not others & (span - 1):
                break
            self.vec_bits.pop()
        self.vec = 1 << len(self.vec_bits)

    def byte_offset(self, coords) -> int:
        out = 0
        for d, c in enumerate(coords):
            for bit in range(int(c).bit_length()):
                if int(c) >> bit & 1:
                    out ^= self.bases[d][bit]
        return out

    def split(self, off: int) -> tuple[int, int]:
        """``off`` as (the bits the thread part can also set, to XOR in; the others, which add):
        ``thread_offset ^ off == (thread_offset ^ swz) + imm``."""
        return off & self.thread_bits, off & ~self.thread_bits

    def combine(self, b, off: int):
        """``thread_offset ^ off``; an add where their bits are disjoint (xor == add there), which
        the assembler folds into the access's immediate offset."""
        if off & self.thread_bits:
            return b.xor(self.thread_offset, const(I32, off))
        return b.add(self.thread_offset, const(I32, off)) if off else self.thread_offset

    def groups(self, by_base: bool = False):
        """``(first register, registers, i32 byte offset)`` for each vector this thread accesses;
        with ``by_base`` (and ``fold``) ordered by (swizzled part, added part) of the offset: the
        vectors sharing a base register one after another, in offset order."""
        b = self.fl.builder
        n = len(self.info.reg_offsets)
        mask = sum(1 << j for j in self.vec_bits)
        order = [r0 for r0 in range(n) if not r0 & mask]
        if by_base and self.fold:
            order.sort(key=lambda r0: self.split(self.byte_offset(self.info.reg_offsets[r0])))
        for r0 in order:
            off = self.byte_offset(self.info.reg_offsets[r0])
            regs = [r0 | sum(1 << j for k, j in enumerate(self.vec_bits) if i >> k & 1) for i in range(self.vec)]
            if not self.fold:
                yield r0, regs, self.combine(b, off)
                continue
            swz, imm = self.split(off)
            addr = b.xor(self.thread_offset, const(I32, swz)) if swz else self.thread_offset
            yield r0, regs, (b.add(addr, const(I32, imm)) if imm else addr)


def _vector_ptr(fl: FunctionLowering, base, byte_off, ety, n: int):
    b = fl.builder
    p = b.gep(base, [byte_off], source_etype=ir.IntType(8))
    return p, (ir.VectorType(ety, n) if n > 1 else ety)


def write_linear(fl: FunctionLowering, base, regs: list, t, memdesc_type, shape, bases=None,
                 fold: bool = False) -> None:
    """Store ``regs`` (layout of ``t``) into a buffer placed by its encoding's ``offset_bases``
    (or by ``bases``; ``fold``: see :class:`LinearSharedAccess`)."""
    b = fl.builder
    acc = LinearSharedAccess(fl, t, getattr(memdesc_type, "encoding", None), shape, bases=bases, fold=fold)
    owner = fl.dedup_pred(t)
    for r0, group, off in acc.groups(by_base=fl.target.shared_writes_by_base):
        if r0 & acc.info.free["register"]:
            continue
        p, vt = _vector_ptr(fl, base, off, regs[r0].type, len(group))
        v = regs[r0]
        if len(group) > 1:
            v = ir.Constant(vt, ir.Undefined)
            for i, r in enumerate(group):
                v = b.insert_element(v, regs[r], const(I32, i))
        align = (bit_width(t.element_type) // 8) * len(group)
        if owner is None:
            b.store(v, p, align=align)
        else:
            with b.if_then(owner):
                b.store(v, p, align=align)


def read_linear(fl: FunctionLowering, base, t, memdesc_type, shape, bases=None, fold: bool = False) -> list:
    b = fl.builder
    acc = LinearSharedAccess(fl, t, getattr(memdesc_type, "encoding", None), shape, bases=bases, fold=fold)
    ety = fl.ty(t)
    out: list = [None] * len(acc.info.reg_offsets)
    for _, group, off in acc.groups():
        p, vt = _vector_ptr(fl, base, off, ety, len(group))
        v = b.load(p, typ=vt, align=(bit_width(t.element_type) // 8) * len(group))
        for i, r in enumerate(group):
            out[r] = b.extract_element(v, const(I32, i)) if len(group) > 1 else v
    return out


def _linear(memdesc_type, t) -> bool:
    """Whether the vector path applies: a placing encoding, byte-sized elements, no booleans."""
    return (hasattr(memdesc_type.encoding, "offset_bases") or _swizzle_bases(memdesc_type, t) is not None) \
        and bit_width(t.element_type) >= 8


def _swizzle_bases(memdesc_type, t):
    """The byte bases of a ``#ttg.swizzled_shared`` buffer that actually swizzles or groups (``vec``
    or ``maxPhase`` above 1) and is a bit map over its shape; None otherwise.  Such a buffer is
    written and read through the vector path with register constants split into the swizzled and
    the added part (``fold``); plain row-major ones keep the element-wise path."""
    enc, shape = memdesc_type.encoding, t.get_shape()
    bits = bit_width(t.element_type)
    if bits < 8 or not _swizzles(enc, shape):
        return None
    return enc.byte_bases(shape, bits // 8)


def _write(fl: FunctionLowering, base, regs, t, memdesc_type, shape) -> None:
    bases = _swizzle_bases(memdesc_type, t)
    if bases is not None:
        write_linear(fl, base, regs, t, None, shape, bases=bases, fold=True)
    else:
        write_linear(fl, base, regs, t, memdesc_type, shape)


@lowers("ttg.barrier", "gpu.barrier")
def _barrier(fl: FunctionLowering, op) -> None:
    fl.target.barrier(fl.builder)


@lowers("ttg.local_alloc")
def _alloc(fl: FunctionLowering, op) -> None:
    base = fl.shared_ptr(fl.alloc_offset(op))
    fl.set(op.results[0], base)
    if op.src is not None:
        shape = op.src.type.get_shape()
        if _linear(op.results[0].type, op.src.type):
            _write(fl, base, fl.get(op.src), op.src.type, op.results[0].type, shape)
        else:
            write_tensor(fl, base, fl.get(op.src), op.src.type, element_index(fl, op.results[0].type, shape))
        # no barrier here: membar (run on every backend before lowering) puts one between this
        # write and the first conflicting access of another thread, wherever that is


@lowers("ttg.local_store")
def _store(fl: FunctionLowering, op) -> None:
    shape = op.src.type.get_shape()
    if _linear(op.dst.type, op.src.type):
        _write(fl, fl.get(op.dst), fl.get(op.src), op.src.type, op.dst.type, shape)
    else:
        write_tensor(fl, fl.get(op.dst), fl.get(op.src), op.src.type, element_index(fl, op.dst.type, shape))


def row_major_bases(shape, element_bytes: int) -> list[list[int]]:
    """The byte offset of each coordinate bit of a row-major buffer of ``shape`` (each dimension a
    power of two): the placement ``linear_index`` gives a plain buffer, as a bit map (also where a
    copy engine puts an unswizzled box)."""
    out, stride = [], element_bytes
    for n in reversed(shape):
        out.insert(0, [stride << bit for bit in range(max(int(n) - 1, 0).bit_length())])
        stride *= int(n)
    return out


def _fma_operand_read(memdesc_type, t) -> bool:
    """A read of a plain (row-major) buffer into an FMA dot operand: every thread reads whole rows
    or columns along K, and the element-wise addresses (thread index XOR element constants) left
    the assembler one 64-bit address per element (a 128x16 fp32 A on 8 warps: 157 registers where
    base-plus-immediate addressing takes 94)."""
    enc = t.encoding
    return isinstance(enc, DotOperandEncodingAttr) and isinstance(enc.parent, BlockedEncodingAttr) \
        and not hasattr(memdesc_type.encoding, "offset_bases") and not _swizzles(memdesc_type.encoding, t.get_shape()) \
        and bit_width(t.element_type) >= 8 and all(n & (n - 1) == 0 for n in t.get_shape())


@lowers("ttg.local_load")
def _load(fl: FunctionLowering, op) -> None:
    t = op.results[0].type
    shape = t.get_shape()
    if _fma_operand_read(op.src.type, t):
        # the same placement as the element-wise path, through the vector path's base + immediate
        bases = row_major_bases(shape, bit_width(t.element_type) // 8)
        fl.set(op.results[0], read_linear(fl, fl.get(op.src), t, None, shape, bases=bases, fold=True))
    elif _linear(op.src.type, t):
        bases = _swizzle_bases(op.src.type, t)
        fl.set(op.results[0], read_linear(fl, fl.get(op.src), t, None if bases is not None else op.src.type, shape,
                                          bases=bases, fold=bases is not None))
    else:
        fl.set(op.results[0], read_tensor(fl, fl.get(op.src), t, element_index(fl, op.src.type, shape)))


@lowers("ttg.memdesc_index")
def _index(fl: FunctionLowering, op) -> None:
    t = op.results[0].type
    slot_bytes = prod(t.shape) * max(bit_width(t.element_type) // 8, 1)
    b = fl.builder
    off = b.mul(fl.get(op.index), const(I32, slot_bytes))
    fl.set(op.results[0], b.gep(fl.get(op.src), [off], source_etype=ir.IntType(8)))


@lowers("ttg.memdesc_trans")
def _trans_view(fl: FunctionLowering, op) -> None:
    fl.set(op.results[0], fl.get(op.src))  # the same bytes; the result's type says how to index them


@lowers("ttg.local_dealloc")
def _dealloc(fl: FunctionLowering, op) -> None:
    pass
