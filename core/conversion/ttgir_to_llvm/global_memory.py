"""Global loads, stores and atomics.

Loads and stores are vectorised from axis info (contiguity, divisibility, mask constancy; at most
128 bits per access), one predicated access per vector through the target (inline PTX on NVIDIA:
LLVM's masked intrinsics are scalarised by NVPTX).  Elements held by several threads (broadcast
layouts) are stored and atomically updated by one owner only."""
from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects.builtin import TensorType

from ...ttgir.analysis.axis_info import contiguity_order, vector_width
from ...ttir.attrs import CACHE_MODIFIER, EVICTION_POLICY, MEM_SEMANTIC, MEM_SYNC_SCOPE, RMW_OP
from .lowering import FunctionLowering, lowers
from .types import I32, bits_of, const, from_mem, mem_type, scalar_type, to_mem


def _word_shape(vec: int, ebits: int) -> tuple[int, int]:
    """(bits per word, words) of one access: 32-bit words, or the element's own 64 bits (two f64 are
    one ``v2.b64`` access, as Triton emits)."""
    total = vec * ebits
    word = max(32, ebits) if total >= 32 else total
    return word, total // word


def pack_words(b: ir.IRBuilder, vals: list, mty: ir.Type, word_bits: int, n_words: int) -> list:
    wty = ir.IntType(word_bits)
    if len(vals) == 1 and n_words == 1:
        return [b.bitcast(vals[0], wty)]
    vt = ir.VectorType(mty, len(vals))
    acc = ir.Constant(vt, ir.Undefined)
    for i, v in enumerate(vals):
        acc = b.insert_element(acc, v, const(I32, i))
    if n_words == 1:
        return [b.bitcast(acc, wty)]
    words = b.bitcast(acc, ir.VectorType(wty, n_words))
    return [b.extract_element(words, const(I32, i)) for i in range(n_words)]


def unpack_words(b: ir.IRBuilder, words: list, mty: ir.Type, vec: int, word_bits: int) -> list:
    wty = ir.IntType(word_bits)
    if vec == 1 and len(words) == 1:
        return [b.bitcast(words[0], mty)]
    if len(words) == 1:
        v = b.bitcast(words[0], ir.VectorType(mty, vec))
    else:
        acc = ir.Constant(ir.VectorType(wty, len(words)), ir.Undefined)
        for i, w in enumerate(words):
            acc = b.insert_element(acc, w, const(I32, i))
        v = b.bitcast(acc, ir.VectorType(mty, vec))
    return [b.extract_element(v, const(I32, i)) for i in range(vec)]


def access_vector(fl: FunctionLowering, ptr, mask, ebits: int) -> int:
    """Elements per access for tensor pointer ``ptr``: the axis-info width, kept only when the
    layout's lowest register bits walk that many consecutive elements along the contiguous dim."""
    vec = vector_width(fl.lowering.axis_info, ptr, ebits, mask)
    if vec <= 1:
        return 1
    d = contiguity_order(fl.lowering.axis_info, ptr)[0]
    ll = fl.layout(ptr.type).ll
    rank = ll.rank
    n = 1
    for j, basis in enumerate(ll.register):
        if n >= vec or basis != tuple((1 << j) if e == d else 0 for e in range(rank)):
            break
        n *= 2
    return min(n, vec)


def buffer_form(fl: FunctionLowering, ptr, vec: int, ebits: int):
    """``(base, offsets)`` (lowered values: the scalar base pointer, the i32 element offsets a
    register) when ``ptr`` is ``splat(base) + offsets`` and every access it makes stays within the
    target's buffer byte range; else None."""
    limit = fl.target.buffer_offset_limit
    add = ptr.owner
    if limit is None or getattr(add, "name", None) != "tt.addptr":
        return None
    splat = add.ptr.owner
    if getattr(splat, "name", None) != "tt.splat" or isinstance(splat.src.type, TensorType):
        return None
    if bits_of(fl.ty(add.offset.type)) != 32:
        return None
    r = fl.lowering.value_ranges.of(add.offset)
    if r is None or r[0] < 0 or (r[1] + vec) * max(ebits // 8, 1) > limit:
        return None
    return fl.get(splat.src), fl.get(add.offset)


def _byte_offset(b, offset, ebits: int):
    n = max(ebits // 8, 1)
    return offset if n == 1 else b.mul(offset, const(I32, n))


def _cache(op) -> tuple[str, str]:
    return CACHE_MODIFIER.keyword(op.cache), EVICTION_POLICY.keyword(op.evict)


def mask_representatives(fl: FunctionLowering, mask, info) -> list[int]:
    """Per register of the mask value ``mask`` (held in layout ``info``), the first register of
    this thread in the same constancy block of the mask (axis info: the mask is equal over aligned
    runs of ``constancy[d]`` elements along each dimension ``d``), whose compare it may use.  Two
    registers whose offsets differ only in the bits below ``log2(constancy[d])`` of every dimension
    are in one block for every thread, since the thread's part of a coordinate is XORed onto the
    register's."""
    con = fl.lowering.axis_info.get(mask).constancy
    shifts = [max(int(c), 1).bit_length() - 1 for c in con]
    first: dict = {}
    out = []
    for r, off in enumerate(info.reg_offsets):
        key = tuple(int(o) >> s for o, s in zip(off, shifts))
        out.append(first.setdefault(key, r))
    return out


def _mask_representatives(fl: FunctionLowering, op) -> list[int] | None:
    """:func:`mask_representatives` of a load's mask for a target with ``masks_by_constancy``;
    None where the target does not ask for it."""
    if not fl.target.masks_by_constancy:
        return None
    return mask_representatives(fl, op.mask, fl.layout(op.mask.type))


@lowers("tt.load")
def _load(fl: FunctionLowering, op) -> None:
    b = fl.builder
    ty = fl.ty(op.result.type)
    mty = mem_type(ty)
    ebits = bits_of(mty)
    cache, evict = _cache(op)
    volatile = bool(op.isVolatile.value.data)
    ptrs, mask = fl.get(op.ptr), fl.get(op.mask) if op.mask is not None else None
    other = fl.get(op.other) if op.other is not None else None
    if not isinstance(op.ptr.type, TensorType):
        ptrs, mask, other, vec = [ptrs], None if mask is None else [mask], None if other is None else [other], 1
    else:
        vec = access_vector(fl, op.ptr, op.mask, ebits)
    buf = buffer_form(fl, op.ptr, vec, ebits) if isinstance(op.ptr.type, TensorType) and not volatile else None
    word, n_words = _word_shape(vec, ebits)
    rep = _mask_representatives(fl, op) if mask is not None and isinstance(op.ptr.type, TensorType) else None
    out = []
    for r0 in range(0, len(ptrs), vec):
        pred = mask[r0 if rep is None else rep[r0]] if mask is not None else None
        ow = None
        if pred is not None:
            if other is not None:
                ow = pack_words(b, [to_mem(b, o, ty) for o in other[r0:r0 + vec]], mty, word, n_words)
            else:
                # Masked-off lanes of a load without ``other`` (and block-pointer loads without
                # ``padding_option``) read zero, as in Triton: never undefined registers, which
                # would feed garbage into ``tt.dot`` on ragged tiles.
                ow = [const(ir.IntType(word), 0)] * n_words
        if buf is not None:
            words = fl.target.buffer_load(b, buf[0], _byte_offset(b, buf[1][r0], ebits), word, n_words, pred, ow)
        else:
            words = fl.target.global_load(b, ptrs[r0], word, n_words, pred, ow, cache, evict, volatile)
        out.extend(from_mem(b, v, ty) for v in unpack_words(b, words, mty, vec, word))
    fl.set(op.result, out if isinstance(op.ptr.type, TensorType) else out[0])


@lowers("tt.store")
def _store(fl: FunctionLowering, op) -> None:
    b = fl.builder
    ty = fl.ty(op.value.type)
    mty = mem_type(ty)
    ebits = bits_of(mty)
    cache, evict = _cache(op)
    ptrs, vals = fl.get(op.ptr), fl.get(op.value)
    mask = fl.get(op.mask) if op.mask is not None else None
    if not isinstance(op.ptr.type, TensorType):
        ptrs, vals, mask, vec = [ptrs], [vals], None if mask is None else [mask], 1
        owner, free_reg = fl.first_thread_pred(), 0
    else:
        vec = access_vector(fl, op.ptr, op.mask, ebits)
        owner = fl.dedup_pred(op.ptr.type)
        free_reg = fl.layout(op.ptr.type).free["register"]
    buf = buffer_form(fl, op.ptr, vec, ebits) if isinstance(op.ptr.type, TensorType) else None
    word, n_words = _word_shape(vec, ebits)
    for r0 in range(0, len(ptrs), vec):
        if r0 & free_reg:
            continue  # a duplicate register of an element stored from register r0 & ~free
        pred = fl.and_all([mask[r0] if mask is not None else None, owner])
        words = pack_words(b, [to_mem(b, v, ty) for v in vals[r0:r0 + vec]], mty, word, n_words)
        if buf is not None:
            fl.target.buffer_store(b, buf[0], _byte_offset(b, buf[1][r0], ebits), words, word, pred)
        else:
            fl.target.global_store(b, ptrs[r0], words, word, pred, cache, evict)


def _broadcast_scalar(fl: FunctionLowering, op, value: ir.Value) -> ir.Value:
    """A scalar atomic ran on thread 0 only: hand its result to every thread through shared memory."""
    b = fl.builder
    ty = value.type
    mty = mem_type(ty)
    p = fl.shared_ptr(fl.alloc_offset(op))
    with b.if_then(fl.first_thread_pred()):
        b.store(to_mem(b, value, ty), p)
    fl.target.barrier(b)
    r = b.load(p, typ=mty)
    fl.target.barrier(b)
    return from_mem(b, r, ty)


def _atomic(fl: FunctionLowering, op, emit, sem: str, vec: int = 1, acq_rel_once: bool = False) -> None:
    """Run ``emit(r, n, pred, sem)`` (the old values of registers ``r .. r + n - 1``) for each
    group of ``vec`` registers (tensor; ``vec`` consecutive elements, :func:`access_vector`) or
    once on thread 0 (scalar).  With ``acq_rel_once`` (and the target's
    ``atomic_acq_rel_once``), an ``acq_rel`` tensor op of several instructions passes ``release``
    to its first, ``acquire`` to its last and ``relaxed`` to the others."""
    b = fl.builder
    mask = fl.get(op.mask) if getattr(op, "mask", None) is not None else None
    if not isinstance(op.ptr.type, TensorType):
        pred = fl.and_all([mask, fl.first_thread_pred()]) or fl.bool_const(True)
        res = emit(0, 1, pred, sem)[0]
        used = bool(list(op.result.uses))
        fl.set(op.result, _broadcast_scalar(fl, op, res) if used else res)
        return
    owner = fl.dedup_pred(op.ptr.type)
    free_reg = fl.layout(op.ptr.type).free["register"]
    # the vector's registers are the lowest register bits, never free (access_vector): a vector
    # is a duplicate as a whole or not at all
    issued = [r0 for r0 in range(0, len(fl.get(op.ptr)), vec) if not r0 & free_reg]
    sems = {}
    if acq_rel_once and sem == "acq_rel" and fl.target.atomic_acq_rel_once and len(issued) > 1:
        sems = {r0: "relaxed" for r0 in issued}
        sems[issued[0]], sems[issued[-1]] = "release", "acquire"
    # as for loads: registers in one constancy block of the mask share one compare (and, on a
    # target that branches around each atomic, one condition LLVM can merge the branches on)
    rep = _mask_representatives(fl, op) if mask is not None else None
    preds: dict = {}
    out: list = []
    for r0 in range(0, len(fl.get(op.ptr)), vec):
        if r0 & free_reg:
            out.extend(out[(r0 & ~free_reg) + i] for i in range(vec))
            continue
        m = r0 if rep is None else rep[r0]
        if m not in preds:
            preds[m] = fl.and_all([mask[m] if mask is not None else None, owner]) or fl.bool_const(True)
        out.extend(emit(r0, vec, preds[m], sems.get(r0, sem)))
    free = fl.layout(op.ptr.type).free
    if (free["lane"] or free["warp"]) and list(op.result.uses):
        # other threads hold copies of some elements (a broadcast layout) and did not run their
        # atomics: they read the owner's result back through shared memory
        out = _share_with_duplicates(fl, op, out, owner, free_reg)
    fl.set(op.result, out)


def _share_with_duplicates(fl: FunctionLowering, op, out: list, owner, free_reg: int) -> list:
    """The owner of each element writes its atomic's result to the op's scratch buffer at the
    element's row-major index; after a barrier every holder reads its elements back."""
    b = fl.builder
    t = op.ptr.type
    ty = fl.ty(op.result.type)
    mty = mem_type(ty)
    size = max(bits_of(mty) // 8, 1)
    shape = t.get_shape()
    base = fl.alloc_offset(op)
    coords = fl.coords(t)

    def slot(r):
        idx = None
        for d, c in enumerate(coords[r]):
            stride = 1
            for e in shape[d + 1:]:
                stride *= e
            term = b.mul(c, ir.Constant(I32, stride)) if stride != 1 else c
            idx = term if idx is None else b.add(idx, term)
        return fl.shared_ptr(b.add(b.mul(idx, ir.Constant(I32, size)), ir.Constant(I32, base)))

    for r, v in enumerate(out):
        if r & free_reg:
            continue
        with b.if_then(owner):
            b.store(to_mem(b, v, ty), slot(r))
    fl.target.barrier(b)
    shared = [from_mem(b, b.load(slot(r), typ=mty), ty) for r in range(len(out))]
    fl.target.barrier(b)
    return shared


def _pick(x, i):
    return x[i] if isinstance(x, list) else x


@lowers("tt.atomic_rmw")
def _atomic_rmw(fl: FunctionLowering, op) -> None:
    kind = RMW_OP.keyword(op.atomic_rmw_op)
    sem, scope = MEM_SEMANTIC.keyword(op.sem), MEM_SYNC_SCOPE.keyword(op.scope)
    ptrs, vals = fl.get(op.ptr), fl.get(op.val)
    b, target = fl.builder, fl.target
    vec = 1
    if isinstance(op.ptr.type, TensorType):
        ty = fl.ty(op.val.type)
        most = target.atomic_vector(kind, ty)
        if most > 1:
            vec = min(access_vector(fl, op.ptr, op.mask, bits_of(mem_type(ty))), most)

    def emit(r, n, pred, s):
        if n == 1:
            return [target.atomic_rmw(b, kind, _pick(ptrs, r), _pick(vals, r), pred, s, scope)]
        return target.atomic_rmw_vector(b, kind, ptrs[r], vals[r:r + n], pred, s, scope)

    _atomic(fl, op, emit, sem, vec, acq_rel_once=True)


@lowers("tt.atomic_cas")
def _atomic_cas(fl: FunctionLowering, op) -> None:
    sem, scope = MEM_SEMANTIC.keyword(op.sem), MEM_SYNC_SCOPE.keyword(op.scope)
    ptrs, cmp, vals = fl.get(op.ptr), fl.get(op.cmp), fl.get(op.val)
    _atomic(fl, op, lambda r, n, pred, s: [fl.target.atomic_cas(fl.builder, _pick(ptrs, r), _pick(cmp, r),
                                                                _pick(vals, r), pred, s, scope)], sem)


__all__ = ["pack_words", "unpack_words", "access_vector", "scalar_type"]
