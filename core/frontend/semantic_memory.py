"""Typing and IR emission for memory: load, store, atomics, block pointers."""
from __future__ import annotations

from ..language import dtypes as tl
from ..language.core import tensor
from ..ttir import memory_ops as mem
from ..ttir.attrs import EVICTION_POLICY, MEM_SEMANTIC, MEM_SYNC_SCOPE
from .builder import Builder, ir_type
from .semantic import (_unwrap, bitcast, broadcast_to_shape, broadcast_values, cast, full, to_tensor,
                       where, greater_equal, less_than, and_)


def _cache_modifier(s, store: bool) -> str:
    s = _unwrap(s)
    if not s:
        return "none"
    key = s.lstrip(".")
    allowed = ("wb", "cg", "cs", "wt") if store else ("ca", "cg", "cv")
    if key not in allowed:
        kind = "store" if store else "load"
        raise ValueError(f"cache modifier {s!r} is not valid for a {kind}; expected one of "
                         + ", ".join("." + a for a in allowed))
    return key


def _eviction(s) -> str:
    s = _unwrap(s)
    if not s:
        return "evict_normal"
    if s not in EVICTION_POLICY:
        raise ValueError(f"eviction policy must be one of evict_normal, evict_first, evict_last; got {s!r}")
    return s


def _sem(s) -> str:
    s = _unwrap(s) or "acq_rel"
    if s not in MEM_SEMANTIC:
        raise ValueError(f"memory semantic must be one of relaxed, acquire, release, acq_rel; got {s!r}")
    return s


def _scope(s) -> str:
    s = _unwrap(s) or "gpu"
    if s not in MEM_SYNC_SCOPE:
        raise ValueError(f"memory scope must be one of gpu, cta, sys; got {s!r}")
    return s


def _is_block_ptr(p: tensor) -> bool:
    return p.type.is_ptr() and p.type.element_ty.is_block()


def _boundary_check(bc, rank: int) -> list[int]:
    bc = _unwrap(bc)
    if not bc:
        return []
    dims = sorted({int(_unwrap(d)) for d in (bc if isinstance(bc, (tuple, list)) else [bc])})
    for d in dims:
        if not 0 <= d < rank:
            raise ValueError(f"boundary_check dimension {d} is out of range for a rank-{rank} block pointer")
    return dims


def load(ptr, mask, other, boundary_check, padding_option, cache_modifier, eviction_policy, is_volatile,
         builder: Builder) -> tensor:
    ptr = to_tensor(ptr, builder)
    cache, evict = _cache_modifier(cache_modifier, False), _eviction(eviction_policy)
    vol = bool(_unwrap(is_volatile))
    if _is_block_ptr(ptr):
        if _unwrap(mask) is not None or _unwrap(other) is not None:
            raise ValueError("mask and other are not allowed with block pointers; use boundary_check and padding_option")
        blk = ptr.type.element_ty
        pad = _unwrap(padding_option) or None
        if pad not in (None, "zero", "nan"):
            raise ValueError(f"padding_option must be 'zero' or 'nan', got {pad!r}")
        if pad == "nan" and not blk.element_ty.is_floating():
            raise ValueError("padding_option='nan' is only valid for floating-point tensors")
        bc = _boundary_check(boundary_check, len(blk.shape))
        op = mem.LoadOp(ptr.handle, cache=cache, evict=evict, is_volatile=vol, boundary_check=bc, padding=pad)
        return tensor(builder.create(op), blk)
    sc = ptr.type.scalar
    if not sc.is_ptr():
        raise TypeError(f"load expects a pointer or a tensor of pointers, got a value of type {ptr.type}")
    if _unwrap(boundary_check) or _unwrap(padding_option):
        raise ValueError("boundary_check and padding_option are only for block pointers")
    elt = sc.element_ty
    mask, other = _unwrap(mask), _unwrap(other)
    if mask is None and other is not None:
        raise ValueError("load: `other` requires `mask`")
    if mask is not None:
        mask = cast(to_tensor(mask, builder), tl.int1, builder)
        if ptr.type.is_block():
            mask = broadcast_to_shape(mask, ptr.type.shape, builder)
        elif mask.type.is_block():
            ptr, mask = broadcast_values(ptr, mask, builder)
    # bool is stored as int8
    is_bool = elt == tl.int1
    if is_bool:
        elt = tl.int8
        ptr = cast(ptr, _ptr_like(ptr, tl.pointer_type(tl.int8, sc.address_space)), builder)
    if other is not None:
        other = cast(to_tensor(other, builder), elt, builder)
        if ptr.type.is_block():
            other = broadcast_to_shape(other, ptr.type.shape, builder)
    op = mem.LoadOp(ptr.handle, mask.handle if mask is not None else None,
                    other.handle if other is not None else None, cache, evict, vol)
    ty = tl.block_type(elt, ptr.type.shape) if ptr.type.is_block() else elt
    out = tensor(builder.create(op), ty)
    return cast(out, tl.int1, builder) if is_bool else out


def _ptr_like(p: tensor, pty: tl.pointer_type) -> tl.dtype:
    return tl.block_type(pty, p.type.shape) if p.type.is_block() else pty


def store(ptr, value, mask, boundary_check, cache_modifier, eviction_policy, builder: Builder) -> None:
    ptr = to_tensor(ptr, builder)
    cache, evict = _cache_modifier(cache_modifier, True), _eviction(eviction_policy)
    if _is_block_ptr(ptr):
        if _unwrap(mask) is not None:
            raise ValueError("mask is not allowed with block pointers; use boundary_check")
        blk = ptr.type.element_ty
        value = to_tensor(value, builder)
        value = cast(value, blk.element_ty, builder)
        value = broadcast_to_shape(value, blk.shape, builder)
        bc = _boundary_check(boundary_check, len(blk.shape))
        builder.insert(mem.StoreOp(ptr.handle, value.handle, None, cache, evict, bc))
        return None
    sc = ptr.type.scalar
    if not sc.is_ptr():
        raise TypeError(f"store expects a pointer or a tensor of pointers, got a value of type {ptr.type}")
    if sc.is_const():
        raise TypeError("Cannot store to a constant pointer: its element type is const (a tl.const "
                        "parameter or a '*k' signature type)")
    elt = sc.element_ty
    value = to_tensor(value, builder)
    if ptr.type.is_block():
        value = broadcast_to_shape(value, ptr.type.shape, builder)
    elif value.type.is_block():
        ptr, value = broadcast_values(ptr, value, builder)
    if elt == tl.int1:
        elt = tl.int8
        ptr = cast(ptr, _ptr_like(ptr, tl.pointer_type(tl.int8, sc.address_space)), builder)
    value = cast(value, elt, builder)
    mask = _unwrap(mask)
    if mask is not None:
        mask = cast(to_tensor(mask, builder), tl.int1, builder)
        if ptr.type.is_block():
            mask = broadcast_to_shape(mask, ptr.type.shape, builder)
        elif mask.type.is_block():
            raise ValueError("store: a block mask needs a block of pointers")
    builder.insert(mem.StoreOp(ptr.handle, value.handle, mask.handle if mask is not None else None, cache, evict))
    return None


# --- atomics -------------------------------------------------------------------------------------

def _atomic_operands(ptr, val, mask, builder, op_name):
    ptr = to_tensor(ptr, builder)
    sc = ptr.type.scalar
    if not sc.is_ptr():
        raise TypeError(f"atomic_{op_name} expects a pointer or a tensor of pointers, got {ptr.type}")
    if sc.is_const():
        raise TypeError("cannot use an atomic through a pointer to const")
    elt = sc.element_ty
    if op_name == "cas":
        # compare-and-swap works on bit patterns: any element of 16, 32 or 64 bits
        if elt.primitive_bitwidth not in (16, 32, 64):
            raise TypeError(f"atomic_cas supports 16-, 32- and 64-bit elements, got {elt}")
    elif elt in (tl.int1, tl.int8, tl.int16, tl.uint8, tl.uint16) or elt.is_fp8():
        raise TypeError(f"atomic_{op_name} does not support {elt} elements")
    elif elt == tl.bfloat16 and op_name != "add":
        raise TypeError(f"atomic_{op_name} does not support bf16 elements")
    val = to_tensor(val, builder)
    if ptr.type.is_block():
        val = broadcast_to_shape(val, ptr.type.shape, builder)
    elif val.type.is_block():
        ptr, val = broadcast_values(ptr, val, builder)
    val = cast(val, elt, builder)
    mask = _unwrap(mask)
    if mask is not None:
        mask = cast(to_tensor(mask, builder), tl.int1, builder)
        if ptr.type.is_block():
            mask = broadcast_to_shape(mask, ptr.type.shape, builder)
    return ptr, val, mask


def _rmw(kind, ptr, val, mask, sem, scope, builder) -> tensor:
    op = mem.AtomicRMWOp(kind, ptr.handle, val.handle, mask.handle if mask is not None else None,
                         _sem(sem), _scope(scope))
    return tensor(builder.create(op), val.type)


def atomic_add(ptr, val, mask, sem, scope, builder):
    ptr, val, mask = _atomic_operands(ptr, val, mask, builder, "add")
    return _rmw("fadd" if val.type.scalar.is_floating() else "add", ptr, val, mask, sem, scope, builder)


def _int_kind(val, signed, unsigned):
    return signed if val.type.scalar.is_int_signed() else unsigned


def atomic_max(ptr, val, mask, sem, scope, builder):
    return _minmax("max", ptr, val, mask, sem, scope, builder)


def atomic_min(ptr, val, mask, sem, scope, builder):
    return _minmax("min", ptr, val, mask, sem, scope, builder)


def _minmax(which, ptr, val, mask, sem, scope, builder):
    ptr, val, mask = _atomic_operands(ptr, val, mask, builder, which)
    sc = val.type.scalar
    if sc.is_int():
        kind = which if sc.is_int_signed() else "u" + which
        return _rmw(kind, ptr, val, mask, sem, scope, builder)
    if sc not in (tl.float32, tl.float64):
        raise TypeError(f"atomic_{which} supports fp32 and fp64 floats, got {sc}")
    # IEEE floats order like signed integers when non-negative and like reversed unsigned
    # integers when negative: split the lanes and use integer atomics on the bit patterns.
    ity = tl.int32 if sc == tl.float32 else tl.int64
    uty = tl.uint32 if sc == tl.float32 else tl.uint64
    iptr = bitcast(ptr, _ptr_like(ptr, tl.pointer_type(ity)), builder)
    uptr = bitcast(ptr, _ptr_like(ptr, tl.pointer_type(uty)), builder)
    ival = bitcast(val, ity, builder)
    uval = bitcast(val, uty, builder)
    zero = full(val.type.shape if val.type.is_block() else [], 0, ity, builder)
    pos = greater_equal(ival, zero, builder)
    neg = less_than(ival, zero, builder)
    if mask is not None:
        pos, neg = and_(pos, mask, builder), and_(neg, mask, builder)
    if which == "max":
        a = _rmw("max", iptr, ival, pos, sem, scope, builder)
        b = _rmw("umin", uptr, uval, neg, sem, scope, builder)
    else:
        a = _rmw("min", iptr, ival, pos, sem, scope, builder)
        b = _rmw("umax", uptr, uval, neg, sem, scope, builder)
    return where(pos, bitcast(a, sc, builder), bitcast(b, sc, builder), builder)


def _bitwise_atomic(kind, ptr, val, mask, sem, scope, builder):
    ptr, val, mask = _atomic_operands(ptr, val, mask, builder, kind)
    if not val.type.scalar.is_int():
        raise TypeError(f"atomic_{kind} needs integer elements, got {val.type.scalar}")
    return _rmw(kind, ptr, val, mask, sem, scope, builder)


def atomic_and(ptr, val, mask, sem, scope, builder): return _bitwise_atomic("and", ptr, val, mask, sem, scope, builder)
def atomic_or(ptr, val, mask, sem, scope, builder): return _bitwise_atomic("or", ptr, val, mask, sem, scope, builder)
def atomic_xor(ptr, val, mask, sem, scope, builder): return _bitwise_atomic("xor", ptr, val, mask, sem, scope, builder)


def atomic_xchg(ptr, val, mask, sem, scope, builder):
    ptr, val, mask = _atomic_operands(ptr, val, mask, builder, "xchg")
    return _rmw("exch", ptr, val, mask, sem, scope, builder)


def atomic_cas(ptr, cmp, val, sem, scope, builder):
    ptr, val, _ = _atomic_operands(ptr, val, None, builder, "cas")
    elt = ptr.type.scalar.element_ty
    cmp = cast(to_tensor(cmp, builder), elt, builder)
    if ptr.type.is_block():
        cmp = broadcast_to_shape(cmp, ptr.type.shape, builder)
    op = mem.AtomicCASOp(ptr.handle, cmp.handle, val.handle, _sem(sem), _scope(scope))
    return tensor(builder.create(op), val.type)


# --- block pointers ------------------------------------------------------------------------------

def make_block_ptr(base, shape, strides, offsets, block_shape, order, builder: Builder) -> tensor:
    base = to_tensor(base, builder)
    if not base.type.is_ptr() or base.type.element_ty.is_block():
        raise TypeError(f"make_block_ptr expects a scalar pointer as base, got {base.type}")
    seqs = {"shape": shape, "strides": strides, "offsets": offsets, "block_shape": block_shape, "order": order}
    vals = {}
    for k, v in seqs.items():
        v = _unwrap(v)
        if not isinstance(v, (tuple, list)):
            v = [v]
        vals[k] = [_unwrap(x) for x in v]
    rank = len(vals["block_shape"])
    for k, v in vals.items():
        if len(v) != rank:
            raise ValueError(f"make_block_ptr: {k} has {len(v)} entries but block_shape has {rank}")
    for b in vals["block_shape"]:
        if not isinstance(b, int) or b <= 0 or b & (b - 1):
            raise ValueError(f"make_block_ptr: block_shape entries must be powers of two, got {b}")
    if sorted(vals["order"]) != list(range(rank)):
        raise ValueError(f"make_block_ptr: order must be a permutation of 0..{rank - 1}, got {vals['order']}")
    sh = [cast(to_tensor(s, builder), tl.int64, builder).handle for s in vals["shape"]]
    st = [cast(to_tensor(s, builder), tl.int64, builder).handle for s in vals["strides"]]
    of = [cast(to_tensor(s, builder), tl.int32, builder).handle for s in vals["offsets"]]
    blk = tl.block_type(base.type.element_ty, vals["block_shape"])
    pty = tl.pointer_type(blk, base.type.address_space)
    op = mem.MakeTensorPtrOp(base.handle, sh, st, of, vals["order"], ir_type(pty))
    return tensor(builder.create(op), pty)


def advance(base, offsets, builder: Builder) -> tensor:
    base = to_tensor(base, builder)
    if not _is_block_ptr(base):
        raise TypeError(f"advance expects a block pointer, got {base.type}")
    offs = _unwrap(offsets)
    if not isinstance(offs, (tuple, list)):
        offs = [offs]
    rank = len(base.type.element_ty.shape)
    if len(offs) != rank:
        raise ValueError(f"advance: expected {rank} offsets, got {len(offs)}")
    of = [cast(to_tensor(o, builder), tl.int32, builder).handle for o in offs]
    return tensor(builder.create(mem.AdvanceOp(base.handle, of)), base.type)
