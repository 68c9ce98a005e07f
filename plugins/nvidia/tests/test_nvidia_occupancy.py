"""CPU-only: the occupancy model and the register cap of the ``cubin`` stage
(``toolchain/occupancy.py``)."""
import os
import shutil
import sys

import pytest

import tritium
import tritium.language as tl
from tritium_nvidia.toolchain.occupancy import (LIMITS, SPILL_BUDGET, blocks_per_sm, register_cap, spill_budget,
                                                spills_within_budget)

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
    (90, 221, 4, 65608, 168),   # the tutorial's causal kernel: 76% of its registers kept
    (90, 230, 4, 65608, None),  # the cap would take more than a quarter of the registers
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


@pytest.mark.parametrize("resources, budget, kept", [
    ({"spill_stores": 0, "spill_loads": 0, "stack": 0}, 0, True),
    ({"spill_stores": 24, "spill_loads": 16, "stack": 16}, SPILL_BUDGET, True),  # the causal tutorial kernel at 168
    ({"spill_stores": 24, "spill_loads": 16, "stack": 16}, 0, False),
    ({"spill_stores": SPILL_BUDGET, "spill_loads": SPILL_BUDGET}, SPILL_BUDGET, True),
    ({"spill_stores": SPILL_BUDGET + 4, "spill_loads": 0}, SPILL_BUDGET, False),
    ({"spill_stores": 0, "spill_loads": SPILL_BUDGET + 4}, SPILL_BUDGET, False),
    ({"registers": 168}, SPILL_BUDGET, False),                       # no spill figures: not trusted
    (None, SPILL_BUDGET, False),
])
def test_spill_budget(resources, budget, kept):
    assert spills_within_budget(resources, budget) is kept


@pytest.mark.parametrize("regs, warps, shared, budget", [
    (221, 4, 65608, SPILL_BUDGET),  # two blocks an SM: a third may cost a few words
    (156, 4, 20000, 0),             # three: a fourth may not
    (255, 8, 0, SPILL_BUDGET),
])
def test_spill_budget_by_occupancy(regs, warps, shared, budget):
    assert spill_budget(90, regs, warps, shared) == budget
    assert spill_budget(75, regs, warps, shared) == 0


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


def _fp8_attention(**kw):
    """The benchmark's pointer attention (``bench/matmul_kernels.py``) as its fp8 rows launch it at
    d128 with 64x64 tiles, 4 warps, 3 stages (``bench/sass_compare.py``'s ``attn-fp8e4-d128-m64``:
    e4m3 Q, K and V, V stored [d, N], fp16 output)."""
    import importlib.util
    from bench_files import BENCH, bench_kernels
    spec = importlib.util.spec_from_file_location("sass_compare", os.path.join(BENCH, "sass_compare.py"))
    sc = importlib.util.module_from_spec(spec)
    sys.modules["sass_compare"] = sc  # its dataclasses look their module up
    spec.loader.exec_module(sc)
    k = next(s for s in sc.SPECS if s.name == "attn-fp8e4-d128-m64")
    mod = bench_kernels("_occupancy_" + k.source[:-3], k.source)
    return tritium.compile(getattr(mod, k.fn), target="cuda:90", signature=k.signature, constexprs=k.constexprs,
                           attrs={n: {"tt.divisibility": 16} for n in sc._divisible(k)},
                           num_warps=k.num_warps, num_stages=k.num_stages, **kw).metadata


@pytest.mark.skipif(PTXAS is None, reason="no ptxas on this machine")
def test_a_cap_that_spills_from_three_blocks_is_dropped():
    """156 registers hold that kernel at three blocks an SM; capped at 128 for a fourth, ptxas
    spills (on the H200 that form ran 0.95x the uncapped one), so the first cubin stands."""
    md = _fp8_attention()
    assert "register_cap" not in md and md["n_spills"] == 0
    assert blocks_per_sm(H100, md["n_regs"], 4, md["shared"]) == 3
    assert register_cap(90, md["n_regs"], 4, md["shared"]) == 128  # the trial was made
