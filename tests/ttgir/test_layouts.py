"""Layout arithmetic checked by brute-force enumeration against the classic blocked-layout
semantics (home position of each thread, wrap modulo the tile, broadcast modulo the shape)."""
import itertools

import numpy as np
import pytest

import tritium.ttgir  # noqa: F401
from tritium.ttgir.encodings import BlockedEncodingAttr, DotOperandEncodingAttr, SliceEncodingAttr, \
    SwizzledSharedEncodingAttr
from tritium.ttgir.layouts import (coordinates, default_blocked_encoding, elems_per_thread, free_masks, index_terms,
                                   reg_offsets, replication, same_layout, thread_offsets, total_elems_per_thread)


def delinearize(i, sizes, order):
    out = [0] * len(sizes)
    for d in order:
        out[d] = i % sizes[d]
        i //= sizes[d]
    return out


def reference_owners(enc, shape):
    """(warp, lane) -> set of coordinates, from Triton's textbook definition of blocked layouts."""
    spt, tpw, wpc, order = enc.size_per_thread, enc.threads_per_warp, enc.warps_per_cta, enc.order
    tile = [s * t * w for s, t, w in zip(spt, tpw, wpc)]
    out = {}
    for w in range(int(np.prod(wpc))):
        for l in range(int(np.prod(tpw))):
            ld, wd = delinearize(l, tpw, order), delinearize(w, wpc, order)
            per_dim = []
            for d in range(len(shape)):
                home = ld[d] * spt[d] + wd[d] * spt[d] * tpw[d]
                reps = max(1, shape[d] // tile[d])
                per_dim.append({(home + j + k * tile[d]) % shape[d] for j in range(spt[d]) for k in range(reps)})
            out[(w, l)] = set(itertools.product(*per_dim))
    return out


def owners_by_thread(enc, shape):
    tab = coordinates(enc, shape)
    return {(w, l): {tuple(int(c) for c in tab[w, l, r]) for r in range(tab.shape[2])}
            for w in range(tab.shape[0]) for l in range(tab.shape[1])}


BLOCKED = [
    ([4], [32], [4], [0]), ([1], [32], [4], [0]), ([2], [64], [2], [0]), ([1], [64], [8], [0]),
    ([1, 4], [8, 4], [4, 1], [1, 0]), ([4, 1], [4, 8], [1, 4], [0, 1]), ([1, 8], [16, 4], [2, 2], [1, 0]),
    ([2, 2], [4, 8], [2, 2], [1, 0]), ([1, 1, 4], [2, 2, 8], [1, 2, 2], [2, 1, 0]),
]
SHAPES = {1: [(8,), (64,), (128,), (1024,)], 2: [(1, 64), (16, 16), (64, 64), (128, 32), (2, 256)],
          3: [(2, 4, 32), (4, 8, 64)]}


@pytest.mark.parametrize("fields", BLOCKED)
def test_blocked_matches_reference(fields):
    enc = BlockedEncodingAttr(*fields)
    for shape in SHAPES[len(fields[0])]:
        got = owners_by_thread(enc, shape)
        ref = reference_owners(enc, shape)
        assert got == ref, (enc, shape)
        # Every element is held, and by the same number of (thread, register) slots.
        counts = {}
        tab = coordinates(enc, shape).reshape(-1, len(shape))
        for c in map(tuple, tab):
            counts[c] = counts.get(c, 0) + 1
        assert len(counts) == int(np.prod(shape))
        assert set(counts.values()) == {replication(enc, shape).duplicates}
        # No register is wasted: registers of one thread are distinct elements.
        for w, l in got:
            assert len(got[(w, l)]) == total_elems_per_thread(enc, shape)


@pytest.mark.parametrize("fields", BLOCKED)
def test_emit_indices_form_reconstructs_table(fields):
    """coord[d] = sum(index terms)(lane, warp) + reg_offsets[reg][d] — the lowering's contract."""
    enc = BlockedEncodingAttr(*fields)
    for shape in SHAPES[len(fields[0])]:
        tab = coordinates(enc, shape)
        terms, regs = index_terms(enc, shape), reg_offsets(enc, shape)
        for w in range(tab.shape[0]):
            for l in range(tab.shape[1]):
                base = [sum(t(l if t.src == "lane" else w) for t in terms[d]) for d in range(len(shape))]
                assert (np.asarray(base) + regs == tab[w, l]).all()
                assert (thread_offsets(enc, shape, l, w) == base).all()


@pytest.mark.parametrize("tpw", [32, 64])
def test_elems_per_thread_and_replication(tpw):
    enc = BlockedEncodingAttr([4], [tpw], [4], [0])
    tile = 4 * tpw * 4
    assert total_elems_per_thread(enc, (tile,)) == 4
    assert total_elems_per_thread(enc, (4 * tile,)) == 16          # wrap-around: more registers
    assert replication(enc, (4 * tile,)) .repeats == (4,)
    assert total_elems_per_thread(enc, (2,)) == 2                  # registers beyond the shape dropped
    r = replication(enc, (64,))                                    # broadcast: duplicates across threads
    assert r.duplicates == tile // 64 and r.repeats == (1,)
    fm = free_masks(enc, (64,))
    assert fm["register"] == 0 and bin(fm["lane"]).count("1") + bin(fm["warp"]).count("1") == (tile // 64).bit_length() - 1


@pytest.mark.parametrize("tpw", [32, 64])
@pytest.mark.parametrize("dim", [0, 1])
def test_slice_owns_what_parent_owns_along_dim(tpw, dim):
    parent = BlockedEncodingAttr([1, 4], [8, tpw // 8], [4, 1], [1, 0])
    tile = [1 * 8 * 4, 4 * (tpw // 8)]
    for n in (16, 64, 256):
        sl = SliceEncodingAttr(dim, parent)
        got = owners_by_thread(sl, (n,))
        full = [n, n]
        full[dim] = tile[dim]
        ref = reference_owners(parent, tuple(full))
        expect = {k: {tuple(c[e] for e in range(2) if e != dim) for c in v} for k, v in ref.items()}
        assert got == expect
        assert sl.order == (0,) and sl.warps_per_cta == (parent.warps_per_cta[1 - dim],)


@pytest.mark.parametrize("tpw", [32, 64])
def test_dot_operand_of_blocked_holds_whole_k(tpw):
    parent = BlockedEncodingAttr([2, 2], [4, tpw // 4], [2, 2], [1, 0])
    m, n, k = 64, 64, 16
    acc = owners_by_thread(parent, (m, n))
    for op_idx, shape in ((0, (m, k)), (1, (k, n))):
        got = owners_by_thread(DotOperandEncodingAttr(op_idx, parent), shape)
        for th, cs in acc.items():
            rows = {c[op_idx] for c in cs}   # M coords (A) or N coords (B)
            exp = {(r, kk) if op_idx == 0 else (kk, r) for r in rows for kk in range(k)}
            assert got[th] == exp


@pytest.mark.parametrize("tpw", [32, 64])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_default_blocked_encoding(tpw, num_warps):
    for shape in [(1024,), (16,), (64, 64), (1, 128), (128, 1), (4, 8, 16)]:
        enc = default_blocked_encoding(shape, num_warps, tpw)
        assert enc.warp_size == tpw and enc.num_warps == num_warps
        assert enc.size_per_thread == (1,) * len(shape) and enc.order == tuple(reversed(range(len(shape))))
        owners_by_thread(enc, shape)  # valid for its shape
    assert default_blocked_encoding((64, 64), 4, 32) == BlockedEncodingAttr([1, 1], [1, 32], [2, 2], [1, 0])
    assert default_blocked_encoding((16, 16), 8, 64) == BlockedEncodingAttr([1, 1], [4, 16], [8, 1], [1, 0])


def test_same_layout_sees_equivalent_encodings():
    a = BlockedEncodingAttr([1, 1], [1, 32], [4, 1], [1, 0])
    b = BlockedEncodingAttr([1, 1], [1, 32], [4, 1], [0, 1])  # order differs, mapping is the same
    assert same_layout(a, b, (64, 32)) and not same_layout(a, b, (64, 64))
    assert elems_per_thread(a, (64, 64)) == (16, 2)


def test_swizzled_offsets_are_a_permutation():
    enc = SwizzledSharedEncodingAttr(8, 1, 8, [1, 0])
    offs = {enc.offset((r, c), (64, 64)) for r in range(64) for c in range(64)}
    assert offs == set(range(64 * 64))
    assert enc.offset((1, 0), (64, 64)) == 64 + 8   # row 1 is in phase 1: its first vector moves


def test_scratch_limit_comes_from_the_module():
    """``ttg.convert-scratch-limit`` on the module bounds one slice of a layout conversion (the AMD
    stage sets it to its 64 KiB of LDS); without it the core's default holds."""
    from xdsl.dialects.builtin import IntegerAttr
    from tritium.ttgir import layouts
    from tritium.ttir.ir import parse_module
    text = """
#a = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#b = #ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {"ttg.num-warps" = 4 : i32, "ttg.num-ctas" = 1 : i32, "ttg.threads-per-warp" = 64 : i32} {
  tt.func public @k(%x: tensor<128x128xf32, #a>) {
    %y = ttg.convert_layout %x : tensor<128x128xf32, #a> -> tensor<128x128xf32, #b>
    tt.return
  }
}
"""
    module = parse_module(text)
    cvt = next(op for op in module.walk() if op.name == "ttg.convert_layout")
    src, dst = cvt.operands[0].type, cvt.results[0].type
    assert layouts.scratch_limit(cvt) == layouts.CONVERT_SCRATCH_LIMIT
    whole = layouts.convert_scratch_bytes(src, dst, layouts.scratch_limit(cvt))
    assert whole > 64 * 1024 and layouts.convert_chunks(src, dst) == 1  # 64 KiB + padding, one piece
    module.attributes[layouts.SCRATCH_LIMIT_ATTR] = IntegerAttr(64 * 1024, 32)
    assert layouts.scratch_limit(cvt) == 64 * 1024
    assert layouts.convert_chunks(src, dst, 64 * 1024) == 2
    assert layouts.convert_scratch_bytes(src, dst, layouts.scratch_limit(cvt)) == whole // 2
