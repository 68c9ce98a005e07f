"""``bench/sass_compare.py`` counts sm_90 SASS by instruction class; these check its counting on a
hand-written nvdisasm listing (a prologue, a loop with wgmma, copies and barriers, an epilogue)."""
import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture(scope="module")
def sc():
    spec = importlib.util.spec_from_file_location("sass_compare", os.path.join(ROOT, "bench", "sass_compare.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sass_compare"] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


LISTING = """\
        /*0000*/                   LDC R1, c[0x0][0x28] ;                          /* 0x00000a00ff017b82 */
        /*0010*/                   S2R R0, SR_TID.X ;                              /* 0x0000000000007919 */
.L_x_1:
        /*0020*/                   DEPBAR.LE SB0, 0x2 ;                            /* 0x000080000000791a */
        /*0030*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;                   /* 0x0000000000007b1d */
        /*0040*/                   ISETP.GE.AND P0, PT, R12, R4, PT ;              /* 0x000000040c00720c */
        /*0050*/                   SEL R6, RZ, 0x10, P0 ;                          /* 0x00000010ff067807 */
        /*0060*/                   LDGSTS.E.BYPASS.128 [R7+0x800], desc[UR12][R8.64], P6 ; /* 0x0 */
        /*0070*/                   LDGDEPBAR ;                                     /* 0x00000000000079af */
        /*0080*/                   R2UR UR16, R194 ;                               /* 0x00000000c21072ca */
        /*0090*/                   UIADD3 UR8, UR4, 0x2, URZ ;                     /* 0x0000000204087890 */
        /*00a0*/                   WARPGROUP.ARRIVE ;                              /* 0x00000000000079cd */
        /*00b0*/                   HGMMA.64x256x16.F32 R24, gdesc[UR16].tnspB, R24 ;       /* 0x0 */
        /*00c0*/                   HGMMA.64x256x16.F32 R24, gdesc[UR16].tnspB, R24, gsb0 ; /* 0x0 */
        /*00d0*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;                 /* 0x00000000000079a7 */
        /*00e0*/               @P0 BRA `(.L_x_1) ;                                 /* 0xfffffff400840947 */
        /*00f0*/                   F2FP.F16.F32.PACK_AB R3, R25, R24 ;             /* 0x000000181903723e */
        /*0100*/                   STS [R5], R3 ;                                  /* 0x0000000305007388 */
        /*0110*/                   STL [R1], R3 ;                                  /* 0x0000000301007387 */
        /*0120*/                   STG.E.128 desc[UR4][R2.64], R8 ;                /* 0x0000000802007986 */
        /*0130*/                   EXIT ;                                          /* 0x000000000000794d */
"""


def test_counts_the_loop_by_class(sc):
    st = sc.count(LISTING, "Function matmul_kernel:\n REG:190 STACK:0 SHARED:0 LOCAL:0")
    assert st.loop["total"] == 13
    assert (st.loop["GMMA"], st.loop["wg.arrive"], st.loop["wg.depbar"]) == (2, 1, 1)
    assert (st.loop["LDGSTS"], st.loop["LDGDEPBAR"], st.loop["DEPBAR"], st.loop["BAR"]) == (1, 1, 1, 1)
    assert (st.loop["R2UR"], st.loop["uniform"], st.loop["ISETP/SEL"], st.loop["branch"]) == (1, 1, 2, 1)
    assert st.hgmma_shapes == {"64x256x16": 2}
    assert st.instructions == 20 and st.regs == 190 and st.spills == 1 and st.conversions == 1
    assert st.stores == {"STS": 1, "STG.E.128": 1} and st.bars == 1


def test_table_pairs_each_class(sc):
    st = sc.count(LISTING, "REG:190")
    text = sc.table([("k", st, st)])
    assert "| loop | 13 / 13 |" in text and "| GMMA shape | 64x256x16:2 / 64x256x16:2 |" in text
