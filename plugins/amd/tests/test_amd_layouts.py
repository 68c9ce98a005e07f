"""The amd_mfma / amd_wmma linear layouts, brute-forced, and a numpy model of the MFMA/WMMA
instructions run over the registers the lowering's plan feeds them: every lane's registers are
filled from the layouts, each planned instruction computes ``D = A @ B + C`` exactly as AMD
documents its operand and result placement, and the registers it writes must hold ``A @ B + C``
at the coordinates the accumulator layout gives them.

The documented placements are written out here independently of the encodings module
(AMD matrix instruction calculator; LLVM AMDGPU usage notes):

* MFMA ``m x m`` (m = 32 or 16) on 64 lanes, ``g = 64 // m`` lane groups, ``kw`` K elements per lane:
  ``A[i][k]``: lane ``i + m * (k // kw)``, element ``k % kw``; ``B[k][j]``: lane ``j + m * (k // kw)``;
  ``D[i][j]``: lane ``j + m * ((i // 4) % g)``, register ``i % 4 + 4 * (i // (4 * g))``.
* WMMA 16x16x16 on 32 lanes: ``A[i][k]``: lanes ``i`` and ``i + 16``, element ``k``; ``B[k][j]``: lanes
  ``j`` and ``j + 16``, element ``k``; ``D[i][j]``: lane ``j + 16 * (i % 2)``, register ``i // 2``.
"""
import itertools

import numpy as np
import pytest

from tritium.ttgir.encodings import DotOperandEncodingAttr
from tritium_amd.lowering.dot_matrix import plan, swaps_sources
from tritium_amd.passes.encodings import AMDMfmaEncodingAttr, AMDWmmaEncodingAttr
from tritium_amd.passes.instructions import _MFMA, _WMMA, warps_per_cta


# --- documented placements ------------------------------------------------------------------------
def doc_operand(ins, i, k):
    """(lanes, element) holding ``A[i][k]`` (or ``B[k][i]``) of one instruction."""
    if ins.kind == "wmma":
        return (i, i + 16), k
    return (i + ins.m * (k // ins.k_width),), k % ins.k_width


def doc_result(ins, i, j):
    """(lane, register) holding ``D[i][j]`` of one instruction."""
    if ins.kind == "wmma":
        return j + 16 * (i % 2), i // 2
    g = 64 // ins.m
    return j + ins.m * ((i // 4) % g), i % 4 + 4 * (i // (4 * g))


INSTRS = {"mfma32_f16": _MFMA[("cdna3", "f16")][0], "mfma16_f16": _MFMA[("cdna3", "f16")][1],
          "mfma32_i8_gfx942": _MFMA[("cdna3", "i8")][0], "mfma16_i8_gfx942": _MFMA[("cdna3", "i8")][1],
          "mfma32_i8_gfx90a": _MFMA[("cdna2", "i8")][0], "wmma_f16": _WMMA["f16"], "wmma_i8": _WMMA["i8"],
          # gfx942's fp8 (FNUZ) MFMA: eight operands a lane, as the 8-byte int8 forms
          "mfma32_fp8_fp8_gfx942": _MFMA[("cdna3", "fp8.fp8")][0], "mfma16_fp8_fp8_gfx942": _MFMA[("cdna3", "fp8.fp8")][1],
          "mfma32_bf8_fp8_gfx942": _MFMA[("cdna3", "bf8.fp8")][0], "mfma16_fp8_bf8_gfx942": _MFMA[("cdna3", "fp8.bf8")][1]}


def encoding(ins, warps, transposed=False):
    if ins.kind == "wmma":
        return AMDWmmaEncodingAttr(1, warps)
    return AMDMfmaEncodingAttr(3, warps, [ins.m, ins.n], transposed)


def layouts(ins, m, n, k, num_warps, transposed=False):
    enc = encoding(ins, warps_per_cta(num_warps, m, n, ins), transposed)
    return (enc.linear_layout((m, n)), DotOperandEncodingAttr(0, enc, ins.k_width).linear_layout((m, k)),
            DotOperandEncodingAttr(1, enc, ins.k_width).linear_layout((k, n)))


# --- one instruction tile: the layouts are the documented placements -------------------------------
@pytest.mark.parametrize("name", sorted(INSTRS))
def test_single_tile_matches_documentation(name):
    ins = INSTRS[name]
    c, a, b = layouts(ins, ins.m, ins.n, ins.k, 1)
    wave = 32 if ins.kind == "wmma" else 64
    assert c.threads_per_warp == a.threads_per_warp == wave
    assert c.num_registers == ins.acc_regs and a.num_registers == ins.k_width == b.num_registers
    for lane, reg in itertools.product(range(wave), range(c.num_registers)):
        i, j = (int(x) for x in c.coordinates(reg, lane, 0))
        assert doc_result(ins, i, j) == (lane, reg)
    for lane, e in itertools.product(range(wave), range(ins.k_width)):
        i, kk = (int(x) for x in a.coordinates(e, lane, 0))
        lanes, elem = doc_operand(ins, i, kk)
        assert lane in lanes and elem == e
        kk2, j = (int(x) for x in b.coordinates(e, lane, 0))
        lanes, elem = doc_operand(ins, j, kk2)
        assert lane in lanes and elem == e


# --- brute force over shapes and warps -------------------------------------------------------------
SHAPES = [(32, 32, 32), (64, 64, 32), (128, 64, 64), (32, 128, 16), (16, 16, 32), (64, 32, 128)]


@pytest.mark.parametrize("name", sorted(INSTRS))
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_layouts_cover_every_element(name, num_warps):
    ins = INSTRS[name]
    for m, n, k in SHAPES:
        if m < ins.m or n < ins.n or k % ins.k:
            continue
        for ll in layouts(ins, m, n, k, num_warps):
            tab = ll.table().reshape(-1, 2)
            seen = np.zeros(ll.shape, dtype=np.int64)
            np.add.at(seen, (tab[:, 0], tab[:, 1]), 1)
            # every element held, and held equally often (duplicates only from broadcast bits)
            assert seen.min() >= 1 and seen.min() == seen.max(), (name, m, n, k, ll)
            assert ll.threads_per_warp == (32 if ins.kind == "wmma" else 64)
            assert ll.num_warps == num_warps


# --- the numpy model of the instructions over the planned registers -------------------------------
def regfile(ll, values):
    """``[warp, lane, reg]`` -> the value each register holds."""
    tab = ll.table()
    return values[tab[..., 0], tab[..., 1]]


def run_model(ins, m, n, k, num_warps, rng, transposed=False):
    c_ll, a_ll, b_ll = layouts(ins, m, n, k, num_warps, transposed)
    A = rng.integers(-8, 8, (m, k)).astype(np.int64)
    B = rng.integers(-8, 8, (k, n)).astype(np.int64)
    C = rng.integers(-100, 100, (m, n)).astype(np.int64)
    a_rf, b_rf, c_rf = regfile(a_ll, A), regfile(b_ll, B), regfile(c_ll, C)
    out = c_rf.copy()
    wave = a_ll.threads_per_warp
    for step in plan(c_ll, a_ll, b_ll, ins):
        for w in range(num_warps):
            acc = np.zeros((ins.m, ins.n), dtype=np.int64)
            for i, j in itertools.product(range(ins.m), range(ins.n)):
                lane, reg = doc_result(ins, i, j)
                acc[i, j] = out[w, lane, step.acc[reg]]
            for a_regs, b_regs in step.k_steps:
                # the instruction's sources: A and B, or B and A for a transposed accumulator
                src_a, src_b = (b_rf, a_rf) if transposed else (a_rf, b_rf)
                if transposed:
                    a_regs, b_regs = b_regs, a_regs
                at = np.zeros((ins.m, ins.k), dtype=np.int64)
                bt = np.zeros((ins.k, ins.n), dtype=np.int64)
                for i, kk in itertools.product(range(ins.m), range(ins.k)):
                    lanes, e = doc_operand(ins, i, kk)
                    vals = {src_a[w, ln, a_regs[e]] for ln in lanes}
                    assert len(vals) == 1, "replicated operand lanes disagree"
                    at[i, kk] = vals.pop()
                for j, kk in itertools.product(range(ins.n), range(ins.k)):
                    lanes, e = doc_operand(ins, j, kk)
                    vals = {src_b[w, ln, b_regs[e]] for ln in lanes}
                    assert len(vals) == 1, "replicated operand lanes disagree"
                    bt[kk, j] = vals.pop()
                acc = at @ bt + acc
            for i, j in itertools.product(range(ins.m), range(ins.n)):
                lane, reg = doc_result(ins, i, j)
                out[w, lane, step.acc[reg]] = acc[i, j]
    assert wave in (32, 64)
    expected = regfile(c_ll, A @ B + C)
    return out, expected


@pytest.mark.parametrize("name", sorted(INSTRS))
@pytest.mark.parametrize("shape", [(32, 32, 32), (64, 64, 64), (128, 32, 32), (32, 64, 16)])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_planned_instructions_compute_the_product(name, shape, num_warps):
    ins = INSTRS[name]
    m, n, k = shape
    if m < ins.m or n < ins.n or k % ins.k:
        pytest.skip(f"{m}x{n}x{k} is not a whole number of {ins.m}x{ins.n}x{ins.k} tiles")
    out, expected = run_model(ins, m, n, k, num_warps, np.random.default_rng(hash(shape) & 0xFFFF))
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("name", [n for n in sorted(INSTRS) if n.startswith("mfma")])
@pytest.mark.parametrize("shape", [(32, 32, 32), (64, 64, 64), (128, 64, 32)])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_transposed_accumulator_swaps_the_sources(name, shape, num_warps):
    """isTransposed = true: the instruction, fed B then A, leaves A @ B + C where the transposed
    layout places it."""
    ins = INSTRS[name]
    m, n, k = shape
    if m < ins.m or n < ins.n or k % ins.k:
        pytest.skip(f"{m}x{n}x{k} is not a whole number of {ins.m}x{ins.n}x{ins.k} tiles")
    assert swaps_sources(encoding(ins, [1, 1], True)) and not swaps_sources(encoding(ins, [1, 1]))
    out, expected = run_model(ins, m, n, k, num_warps, np.random.default_rng(5), transposed=True)
    np.testing.assert_array_equal(out, expected)


def test_model_catches_a_wrong_layout():
    """The model is not vacuous: swapping the accumulator's lane-group bit for a register bit
    (a plausible mistake) makes it fail."""
    ins = INSTRS["mfma32_f16"]
    enc = AMDMfmaEncodingAttr(3, [1, 1], [32, 32])
    c, a, b = layouts(ins, 32, 32, 8, 1)
    bad = type(c)(c.shape, (c.register[0], c.register[1], c.lane[5], c.register[3]),
                  c.lane[:5] + (c.register[2],), c.warp)
    A = np.arange(32 * 8).reshape(32, 8) % 7
    B = np.arange(8 * 32).reshape(8, 32) % 5
    steps = plan(bad, a, b, ins)
    a_rf, b_rf, c_rf = regfile(a, A), regfile(b, B), np.zeros((1, 64, 16), dtype=np.int64)
    (a_regs, b_regs), = steps[0].k_steps
    at = np.array([[a_rf[0, doc_operand(ins, i, kk)[0][0], a_regs[doc_operand(ins, i, kk)[1]]] for kk in range(8)]
                   for i in range(32)])
    bt = np.array([[b_rf[0, doc_operand(ins, j, kk)[0][0], b_regs[doc_operand(ins, j, kk)[1]]] for j in range(32)]
                   for kk in range(8)])
    d = at @ bt
    for i, j in itertools.product(range(32), range(32)):
        lane, reg = doc_result(ins, i, j)
        c_rf[0, lane, reg] = d[i, j]
    assert enc.linear_layout((32, 32)) == c
    assert not np.array_equal(c_rf, regfile(bad, A @ B))
    assert np.array_equal(c_rf, regfile(c, A @ B))


def test_mfma_later_spelling_and_transposed_layout():
    """Triton's later spelling (`version`, a 3-element instrShape) parses; isTransposed = true swaps
    rows and columns inside each warp's tile and keeps the warps where they were."""
    from tritium.ttgir.ir import parse_module

    def layout(transposed):
        text = f"""
#m = #ttg.amd_mfma<{{version = 3, warpsPerCTA = [2, 2], instrShape = [32, 32, 8], isTransposed = {transposed}}}>
module attributes {{"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 64 : i32}} {{
  tt.func public @k(%a: !tt.ptr<f32>) {{
    %0 = tt.splat %a : !tt.ptr<f32> -> tensor<64x64x!tt.ptr<f32>, #m>
    tt.return
  }}
}}"""
        op = next(o for o in parse_module(text).walk() if o.name == "tt.splat")
        return op.results[0].type.encoding.linear_layout((64, 64))

    plain, swapped = layout("false"), layout("true")
    assert swapped.register[:4] == tuple((c, r) for r, c in plain.register[:4])
    assert swapped.lane == tuple((c, r) for r, c in plain.lane)
    assert swapped.warp == plain.warp
    assert len(swapped.owners()) == 64 * 64
