"""CPU-only: the occupancy model and the register cap of the ``cubin`` stage
(``toolchain/occupancy.py``)."""
import os
import shutil
import sys

import pytest

import tritium
import tritium.language as tl
from tritium_nvidia.toolchain.occupancy import LIMITS, blocks_per_sm, register_cap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_nvidia_warp_specialize import _attention as ws_attention  # noqa: E402

H100 = LIMITS[90]


@pytest.mark.parametrize("regs, warps, shared, blocks", [
    (188, 4, 65608, 2),      # registers: 6,144 a warp, two warps a quarter file
    (168, 4, 65608, 3),      # 5,376 a warp: three
    (168, 4, 80000, 2),      # shared memory: two blocks of 81 KB
    (32, 4, 0, 16),          # warps: 64 an SM
    (32, 1, 0, 32),          # blocks: 32 an SM
    (255, 8, 0, 1),
    (128, 8, 0, 2),
])
def test_blocks_per_sm(regs, warps, shared, blocks):
    assert blocks_per_sm(H100, regs, warps, shared) == blocks


@pytest.mark.parametrize("cc, regs, warps, shared, cap", [
    (90, 188, 4, 65608, 168),   # attention d64, 128x64 tiles: a third block
    (90, 221, 4, 65608, None),  # the cap would take a quarter of the registers
    (90, 188, 4, 80000, None),  # shared memory holds it at two blocks anyway
    (90, 186, 8, 0, None),      # 8 warps at 186 -> 128 for a second block: too far
    (90, 72, 4, 0, None),       # seven blocks already
    (90, 136, 4, 0, 128),       # 3 -> 4 blocks
    (75, 188, 4, 0, None),      # no table for sm_75
])
def test_register_cap(cc, regs, warps, shared, cap):
    assert register_cap(cc, regs, warps, shared) == cap
    if cap is not None:
        limits = LIMITS[cc]
        before = blocks_per_sm(limits, regs, warps, shared)
        assert cap % 8 == 0 and blocks_per_sm(limits, cap, warps, shared) == before + 1


PTXAS = shutil.which("ptxas")


def _attention(**kw):
    """The benchmark's descriptor attention at d64, 128x64 tiles, one warp group, no WS."""
    return ws_attention(ws=False, d=64, bn=64, num_warps=4, **kw)


@pytest.mark.skipif(PTXAS is None, reason="no ptxas on this machine (the cap is decided on ptxas's report)")
def test_attention_d64_gets_a_third_block():
    k = _attention()
    md = k.metadata
    assert md.get("register_cap") == 168 and md["uncapped_regs"] > 168, md.get("resource_log")
    assert md["n_regs"] <= 168 and md["n_spills"] == 0
    assert blocks_per_sm(H100, md["n_regs"], 4, md["shared"]) == 3
    # off: the register count ptxas picks, two blocks
    off = _attention(occupancy_cap=False).metadata
    assert "register_cap" not in off and off["n_regs"] == md["uncapped_regs"]
    # a user's maxnreg decides alone
    assert "register_cap" not in _attention(maxnreg=200).metadata


@tritium.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


@pytest.mark.skipif(PTXAS is None, reason="no ptxas on this machine")
def test_small_kernels_are_assembled_once():
    md = tritium.compile(add_kernel, target="cuda:90", signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
                         constexprs={"BLOCK": 1024}, num_warps=4).metadata
    assert "register_cap" not in md and md["n_regs"] < 64
