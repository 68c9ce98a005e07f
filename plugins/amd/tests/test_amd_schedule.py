"""The pipelined MFMA loop's schedule on gfx942 (compile-only: read from the assembly, nothing is
run): the global loads of the next iteration, then the whole MFMA block of this one at priority 1
(``s_setprio 1`` after its first MFMA, ``s_setprio 0`` after its last), its operands' LDS reads
waited on a few at a time (``lgkmcnt`` counting down between MFMAs), and only after the block the
wait for the global loads, the barrier and the LDS stores."""
import re

import pytest

from test_amd_pipeline import _compile, _execution_order


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))


@pytest.mark.parametrize("num_stages", [2, 3])
def test_mfma_block_between_the_loads_and_their_wait(num_stages):
    asm = _compile("hip:gfx942", num_stages=num_stages).asm["amdgcn"]
    order = _execution_order(asm)
    lines = [ln.strip() for ln in asm.splitlines()]
    loads = [i for i, m in enumerate(order) if m.startswith(("global_load", "buffer_load"))]
    mats = [i for i, m in enumerate(order) if m.startswith("v_mfma")]
    writes = [i for i, m in enumerate(order) if m.startswith("ds_write")]
    prio = [i for i, m in enumerate(order) if m == "s_setprio"]
    assert loads and mats and writes and len(prio) == 2
    # loads, then the MFMA block (priority raised after its first MFMA, lowered after its last)
    assert max(loads) < min(mats) < prio[0] < max(mats) < prio[1]
    # the stores of the next stage (and so the wait for its loads) come after the whole block
    assert prio[1] < min(writes)
    # the MFMA operands' LDS reads are waited on a few at a time, not all at once
    waits = [ln for ln in lines if ln.startswith("s_waitcnt") and "lgkmcnt" in ln]
    counts = {int(re.search(r"lgkmcnt\((\d+)\)", w).group(1)) for w in waits}
    assert len(counts - {0}) >= 2, waits


def test_no_priority_outside_loops_or_on_wmma():
    """A loop that is not pipelined (nothing to overlap) and RDNA3's WMMA keep the default priority."""
    assert "s_setprio" not in _compile("hip:gfx1100").asm["amdgcn"]
    assert "s_setprio" not in _compile("hip:gfx942", num_stages=1).asm["amdgcn"]


def _bench():
    """``bench/amd_vs_triton.py`` (its kernels and its counting of the main loop)."""
    import importlib.util
    import os
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    if "amd_vs_triton" not in sys.modules:
        spec = importlib.util.spec_from_file_location("amd_vs_triton", os.path.join(root, "bench", "amd_vs_triton.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules["amd_vs_triton"] = mod  # its dataclasses look their module up
        spec.loader.exec_module(mod)
    return sys.modules["amd_vs_triton"]


def _tutorial_matmul(name):
    avt = _bench()
    spec = next(s for s in avt.specs() if s.name == name)
    asm, lds = avt.compile_tritium(spec, "hip:gfx942")
    return avt, asm, avt.count(asm, lds)


@pytest.mark.parametrize("name", ["matmul-hints-s3", "matmul-hints-bf16-s3"])
def test_three_stage_loop_keeps_no_tile_in_registers(name):
    """With 3 stages the tiles an iteration loads go into the LDS slot it has just read (two
    iterations ahead), as in Triton's stream pipeliner: nothing loaded stays in registers into the
    next iteration, so the registers fit beside the 64 of the accumulators without spilling to
    AGPRs (256 VGPRs and 4 spill AGPRs with a tile of iteration i + 1 carried)."""
    avt, asm, st = _tutorial_matmul(name)
    loop = avt.main_loop(asm)
    assert not [m for m in loop if m.startswith("v_accvgpr")]
    assert st.regs["scratch"] == 0
    # the registers the kernel uses: at most Triton 3.6's 208 (144 VGPRs + 64 AGPRs) + 8
    assert st.regs["vgpr"] + st.regs["agpr"] <= 216
    # main loop: at most 1.05x Triton 3.6's 212 instructions; 8 loads, 32 MFMAs, 16 LDS reads of
    # one slot, 16 LDS writes of that slot
    assert st.loop_instructions <= 222
    assert loop.count("global_load_dwordx4") == 8 and sum(m.startswith("v_mfma") for m in loop) == 32
    assert avt.mfma_cover(avt.main_loop_lines(asm)) == 32


def test_two_stage_loop_pairs_writes_and_compares_once():
    """The 2-stage loop of the hinted matmul: A's LDS writes of one base register paired
    (``ds_write2st64_b64``), the K bound compared once per operand (B's four rows of a thread
    share it), and the main loop at most 1.05x Triton 3.6's 172 instructions."""
    avt, asm, st = _tutorial_matmul("matmul-hints")
    loop = avt.main_loop(asm)
    assert loop.count("ds_write2st64_b64") == 4 and loop.count("ds_write_b64") == 8
    assert loop.count("v_cmp_gt_i32_e32") == 2
    assert st.loop_instructions <= 180


#: Triton 3.6's gfx1100 scratch for the tutorial attention (``bench/amd_vs_triton.py``): RDNA3's
#: 256 VGPRs hold neither compiler's d128 tile, so both spill; Tritium may spill no more
TRITON_GFX1100_ATTENTION_SCRATCH = {"attention-fp16-d128": 1132, "attention-bf16-d128": 1244,
                                    "attention-fp16-d128-s3": 1380, "attention-fp16-d64": 236}


@pytest.mark.parametrize("name", sorted(TRITON_GFX1100_ATTENTION_SCRATCH))
def test_attention_loads_v_where_the_body_does(name):
    """The stream pipeline issues the next iteration's V tile where the body loads V (after
    QK^T and the softmax), as Triton's does, not at the top of the loop: it is not held in
    registers across the first dot, and the gfx1100 spill stays within Triton's (it was 1604,
    1688, 1432 bytes with both tiles loaded first)."""
    avt = _bench()
    spec = next(s for s in avt.specs() if s.name == name)
    asm, lds = avt.compile_tritium(spec, "hip:gfx1100")
    assert avt.count(asm, lds).regs["scratch"] <= TRITON_GFX1100_ATTENTION_SCRATCH[name]
    loop = avt.main_loop(asm)
    loads = [i for i, m in enumerate(loop) if m.startswith(("buffer_load", "global_load"))]
    wmma = [i for i, m in enumerate(loop) if m.startswith("v_wmma")]
    # K's loads come before the first WMMA; V's after the first dot's WMMAs
    assert loads and wmma and min(loads) < min(wmma) < max(loads)


def test_split_k_epilogue_fits_in_the_pipeline_buffers_and_shares_its_predicates():
    """The split-K kernel on gfx942 (``bench/amd_vs_triton.py``'s row): the 128x128 fp32
    accumulator's trip to the atomics' layout moves in slices that fit in the pipeline's 32 KiB
    (it took two 36 KiB slices, leaving one workgroup a CU), and the atomics of one mask constancy
    block (4 columns) share one exec-mask branch, as Triton's do (one branch an atomic before:
    1,582 instructions against Triton's 1,353; now fewer than Triton's)."""
    avt = _bench()
    spec = next(s for s in avt.specs() if s.name == "splitk")
    asm, lds = avt.compile_tritium(spec, "hip:gfx942")
    st = avt.count(asm, lds)
    assert lds == 32768 and st.regs["scratch"] == 0
    atomics = re.findall(r"global_atomic_add_f32 [^\n]*", asm)
    assert len(atomics) == 64
    # 16 mask blocks a lane (64 atomics, 4 columns a block): a branch each, not one an atomic
    assert asm.count("s_and_saveexec_b64") <= 24
    assert st.instructions <= 1353
