"""Lane-xor moves on AMD: DPP controls (a VALU operand modifier, no LDS counter to wait on) stand
for ``ds_swizzle`` where a DPP sequence is an exact xor.  Each control is modelled here from the
ISA's definition and the sequence checked against ``lane ^ mask`` on all 64 lanes (that the
compiled softmax reduces with them: ``test_amd_compile.py``)."""
import pytest

from tritium_amd.lowering.target_info import _DPP_XOR_GFX9, _DPP_XOR_GFX11


def _quad(perm):
    return lambda i: (i & ~3) | perm[i & 3]


#: source lane of each DPP control (the ISA's quad_perm, row_mirror, row_half_mirror, row_xmask)
CONTROLS = {0xB1: _quad([1, 0, 3, 2]), 0x4E: _quad([2, 3, 0, 1]), 0x1B: _quad([3, 2, 1, 0]),
            0x140: lambda i: (i & ~15) | (15 - (i & 15)), 0x141: lambda i: (i & ~7) | (7 - (i & 7)),
            **{0x160 + m: (lambda m: lambda i: (i & ~15) | ((i & 15) ^ m))(m) for m in range(16)}}


@pytest.mark.parametrize("table", [_DPP_XOR_GFX9, _DPP_XOR_GFX11], ids=["gfx9", "gfx11"])
def test_dpp_sequences_are_lane_xors(table):
    for mask, seq in table.items():
        for lane in range(64):
            src = lane
            for ctrl in reversed(seq):   # the last move reads the previous one's result
                src = CONTROLS[ctrl](src)
            assert src == lane ^ mask, (mask, lane)


def test_gfx9_has_no_row_xmask():
    assert all(c < 0x160 for seq in _DPP_XOR_GFX9.values() for c in seq)
