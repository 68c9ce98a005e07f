"""``bench/amd_vs_triton.py`` counts AMDGCN instruction by instruction; these check its counting on
a hand-written listing (a loop, LDS and global traffic of several widths, the resource summary)
and on a real Tritium compile (no Triton needed)."""
import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture(scope="module")
def avt():
    spec = importlib.util.spec_from_file_location("amd_vs_triton", os.path.join(ROOT, "bench", "amd_vs_triton.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["amd_vs_triton"] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


LISTING = """\
\t.text
\t.globl\tk
k:
\ts_load_dwordx2 s[0:1], s[0:1], 0x0
\tglobal_load_dwordx4 v[0:3], v4, s[0:1]
\ts_waitcnt vmcnt(0)
.LBB0_1:
\tds_write_b64 v5, v[0:1]
\ts_waitcnt lgkmcnt(0)
\ts_barrier
\tds_read_b128 v[8:11], v5
\tds_read2st64_b64 v[12:15], v5 offset1:1
\tv_mfma_f32_32x32x8_f16 a[0:15], v[8:9], v[12:13], a[0:15]
\ts_cbranch_scc1 .LBB0_1
\tglobal_store_dword v4, v0, s[0:1]
\ts_endpgm
\t.amdhsa_group_segment_fixed_size 4096
\t.amdhsa_private_segment_fixed_size 0
\t.amdhsa_next_free_sgpr 18
\t.amdhsa_next_free_vgpr 32
\t.set k.num_vgpr, 16
\t.set k.num_agpr, 16
"""


def test_counts_of_a_listing(avt):
    st = avt.count(LISTING)
    assert st.instructions == 12
    assert st.loop_instructions == 7  # ds_write .. s_cbranch
    assert st.matrix == 1 and st.waitcnt == 2 and st.barrier == 1
    assert dict(st.global_loads) == {"x4": 1}
    assert dict(st.lds_reads) == {"b128": 1, "2st64_b64": 1} and dict(st.lds_writes) == {"b64": 1}
    assert st.regs == {"vgpr": 16, "agpr": 16, "sgpr": 18, "next_free_vgpr": 32, "scratch": 0, "lds": 4096,
                       "vgpr_file": 32}


def test_vgpr_file_is_the_registers_used(avt):
    """On CDNA the AGPRs start at a multiple of 4 above the VGPRs; RDNA has no AGPRs. LLVM's
    descriptor figure, raised to match an LDS-bound occupancy, is not what the code uses."""
    assert avt.vgpr_file(9, 32, "hip:gfx942") == 44 and avt.vgpr_file(208, 0, "hip:gfx942") == 208
    assert avt.vgpr_file(144, 64, "hip:gfx942") == 208 and avt.vgpr_file(100, 0, "hip:gfx1100") == 100
    st = avt.count(LISTING.replace("next_free_vgpr 32", "next_free_vgpr 257"))
    assert st.regs["next_free_vgpr"] == 257 and st.regs["vgpr_file"] == 32


def test_vgpr_file_sets_cdna_occupancy(avt):
    """On gfx90a/gfx942 AGPRs and VGPRs share one 512-register file: 216 of them leave room for
    two wavefronts a SIMD, 208 for two, 128 for four; gfx1100's 1536 a lane (wave32) keep all 16
    wavefronts up to 96 VGPRs; other RDNA parts get no figure. The CU's 64 KiB of LDS
    bounds it too: a 4-wavefront workgroup taking all of it leaves one wavefront a SIMD."""
    assert [avt.waves_per_simd(n, "hip:gfx942") for n in (216, 208, 256, 257, 128, 40)] == [2, 2, 2, 1, 4, 8]
    assert [avt.waves_per_simd(n, "hip:gfx1100") for n in (46, 59, 96, 97, 256)] == [16, 16, 16, 12, 5]
    assert avt.waves_per_simd(128, "hip:gfx1102") is None
    assert avt.waves_per_simd(208, "hip:gfx942", lds=65536) == 1
    assert avt.waves_per_simd(208, "hip:gfx942", lds=32768) == 2
    assert avt.waves_per_simd(40, "hip:gfx942", lds=16384, num_warps=8) == 8


def test_bounds_name_what_is_missed(avt):
    t, r = avt.count(LISTING), avt.count(LISTING)
    assert avt.bound_failures("k", t, r) == []
    t.waitcnt, t.regs["vgpr_file"] = 3, 41
    assert avt.bound_failures("k", t, r) == ["k: s_waitcnt 3 > 2.6 (Triton 2)", "k: VGPR file 41 > 40 (Triton 32)"]
    r.regs["scratch"] = 64  # Triton spills: only the spill is bounded, by Triton's
    assert avt.bound_failures("k", t, r) == []
    t.regs["scratch"] = 96
    assert avt.bound_failures("k", t, r) == ["k: scratch bytes 96 > 64 (Triton 64)"]


def test_counts_of_tritium_matmul(avt, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    spec = next(s for s in avt.specs() if s.name == "matmul")
    asm, lds = avt.compile_tritium(spec, "hip:gfx942")
    st = avt.count(asm, lds)
    # 128x128x64 on 4 wavefronts of 32x32x8 MFMAs: 2x2 tiles a wavefront, 8 k-steps
    assert st.matrix == 32 and st.loop_instructions > st.matrix
    assert st.lds_reads and st.lds_writes and st.regs["lds"] > 0 and st.regs["vgpr"] > 0
    row = avt.row("matmul", st, None)
    assert len(row) == len(avt.HEADER) and row[3] == "32"


def test_main_loop_of_a_listing(avt):
    ms = avt.main_loop(LISTING)
    assert ms[0] == "ds_write_b64" and ms[-1] == "s_cbranch_scc1" and "v_mfma_f32_32x32x8_f16" in ms


COVER = """\
k:
\tglobal_load_dwordx4 v[0:3], v4, s[0:1]
\ts_waitcnt vmcnt(0)
.LBB0_1:
\tglobal_load_dwordx4 v[0:3], v4, s[0:1]
\tglobal_load_dwordx4 v[20:23], v4, s[2:3]
\tv_mfma_f32_32x32x8_f16 a[0:15], v[8:9], v[12:13], a[0:15]
\ts_waitcnt vmcnt(1)
\tv_mfma_f32_32x32x8_f16 a[0:15], v[8:9], v[12:13], a[0:15]
\tv_mfma_f32_32x32x8_f16 a[0:15], v[8:9], v[12:13], a[0:15]
\ts_waitcnt vmcnt(0)
\tds_write_b128 v5, v[0:3]
\ts_cbranch_scc1 .LBB0_1
\ts_endpgm
.LBB0_3:
\tv_mov_b32 v0, 0
\ts_endpgm
.Lfunc_end0:
\t.size k, .Lfunc_end0-k
"""


def test_mfma_cover_and_whole_function(avt):
    """The first load of the loop is waited on after one MFMA, the second after three: one MFMA
    covers a load. The code after the first ``s_endpgm`` counts too."""
    st = avt.count(COVER)
    assert st.cover == 1 and st.loop_instructions == 9
    assert st.instructions == 14  # 12 up to the first s_endpgm
    assert avt.mfma_cover(avt.main_loop_lines(COVER)) == 1
    # a load waited on only in the next iteration counts the MFMAs up to that wait
    rotated = COVER.replace("\ts_waitcnt vmcnt(1)\n", "").replace("\ts_waitcnt vmcnt(0)\n\tds_write", "\tds_write")
    rotated = rotated.replace(".LBB0_1:\n", ".LBB0_1:\n\ts_waitcnt vmcnt(0)\n")
    assert avt.count(rotated).cover == 3
    t, r = avt.count(rotated), avt.count(COVER)
    assert "k: MFMAs covering a load 1 < 3 (Triton)" in avt.bound_failures("k", r, t)
    assert "k: main-loop instructions 9 > 8.4 (Triton 8)" in avt.bound_failures("k", r, t)


OUT_OF_LINE = """\
k:
\ts_mov_b32 s4, 0
\ts_cbranch_scc1 .LBB0_5
.LBB0_1:
\tv_mov_b32 v1, 0
.LBB0_2:
\tv_mfma_f32_32x32x8_f16 a[0:15], v[8:9], v[12:13], a[0:15]
\ts_cmp_ge_i32 s4, s5
\ts_cbranch_scc0 .LBB0_4
.LBB0_3:
\ts_add_i32 s4, s4, 1
\ts_cmp_lt_i32 s4, s6
\ts_cbranch_scc1 .LBB0_2
\ts_branch .LBB0_6
.LBB0_4:
\tglobal_load_ushort v0, v[2:3], off
\ts_branch .LBB0_3
.LBB0_5:
\tv_mov_b32 v2, 0
\ts_branch .LBB0_1
.LBB0_6:
\ts_endpgm
.Lfunc_end0:
"""


def test_main_loop_follows_the_control_flow(avt):
    """The main loop is a natural loop of the control-flow graph: the block LLVM places after it
    (a load on the rarely skipped path, jumping back in) is counted, while a jump up to code above
    that is not a loop header (.LBB0_5 -> .LBB0_1, which does not dominate it) makes no loop and
    the code between the two is not counted."""
    body = avt._kernel_body(OUT_OF_LINE)
    blocks = avt._blocks(body)
    assert [body[lo].strip() for lo, _ in blocks][:3] == ["k:", ".LBB0_1:", ".LBB0_2:"]
    ms = avt.main_loop(OUT_OF_LINE)
    assert ms == ["v_mfma_f32_32x32x8_f16", "s_cmp_ge_i32", "s_cbranch_scc0", "s_add_i32", "s_cmp_lt_i32",
                  "s_cbranch_scc1", "global_load_ushort", "s_branch"]
    assert avt.count(OUT_OF_LINE).loop_instructions == 8
    assert len(avt._loops(body)) == 1
