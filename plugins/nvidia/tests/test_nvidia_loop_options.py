"""CPU-only PTX facts for tl.range options and tl.dot(max_num_imprecise_acc=...) on sm_90."""
import pytest

import tritium
from conformance.cases import loops_options


def _matmul(dtype, bm, bn, bk, imprecise, kmajor=True, warps=8, stages=3):
    return tritium.compile(loops_options.imprecise_matmul_kernel, target="cuda:90",
                           signature={"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": "*fp32", "K": "i32"},
                           constexprs={"BM": bm, "BN": bn, "BK": bk, "IMPRECISE": imprecise, "B_KMAJOR": kmajor,
                                       "NS": stages},
                           num_warps=warps)


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))


@pytest.mark.parametrize("dtype", ["fp8e5", "fp8e4nv"])
@pytest.mark.parametrize("bm, bn, bk, imprecise", [(128, 256, 128, 32), (128, 256, 128, 64), (128, 256, 128, 128),
                                                (64, 64, 64, 32), (64, 64, 64, 64)])
def test_fp8_partial_sums_are_added_in_fp32_every_n_products(dtype, bm, bn, bk, imprecise):
    ptx = _matmul(dtype, bm, bn, bk, imprecise).asm["ptx"]
    assert "wgmma.mma_async" in ptx
    # Triton's test_dot_max_num_imprecise_acc count: one fp32 add per accumulator register and chunk
    assert ptx.count("add.f32") == (bm * bn) // (32 * 8) * (bk // imprecise)


def test_fp8_unbounded_by_default_on_hopper():
    ptx = _matmul("fp8e5", 64, 64, 64, None).asm["ptx"]
    assert "wgmma.mma_async" in ptx and "add.f32" not in ptx


def test_fp8_bound_of_zero_adds_in_fp32_after_every_wgmma_step():
    # an explicit 0 asks for the most precise accumulation: each 32-deep wgmma step starts from
    # zero and is added into the fp32 accumulator (64 / 32 = 2 steps)
    ptx = _matmul("fp8e4nv", 64, 64, 64, 0).asm["ptx"]
    assert "wgmma.mma_async" in ptx
    assert ptx.count("add.f32") == (64 * 64) // (32 * 8) * 2


def test_fp8_bound_below_one_wgmma_k_uses_mma_sync():
    # a bound between 1 and 31 is finer than one wgmma (K = 32): mma.sync adds in fp32 every step
    ptx = _matmul("fp8e4nv", 64, 64, 64, 16).asm["ptx"]
    assert "wgmma" not in ptx and "mma.sync.aligned" in ptx


def test_load_first_in_the_loop_body_is_pipelined_with_triton_group_count():
    # Triton's test_tl_range: pointers carried by the loop, so each load is the body's first op;
    # 5 stages, 2 loads: one commit group per load, 3 iterations ahead -> wait for 6
    ptx = _matmul("fp16", 64, 64, 64, 0, kmajor=False, warps=4, stages=5).asm["ptx"]
    assert "cp.async.wait_group \t6;" in ptx


@pytest.mark.parametrize("stages", [2, 3, 5])
def test_loop_top_wait_names_the_oldest_iterations_groups(stages):
    """Triton's TTGIR form of a pipelined loop: each copy's commit group takes the copy's token,
    the loop carries the tokens of the ``stages - 1`` iterations in flight, and the loop-top
    ``ttg.async_wait`` names the oldest iteration's two groups (the ones its count waits for)."""
    import re
    ttgir = _matmul("fp16", 64, 64, 64, 0, kmajor=False, warps=4, stages=stages).asm["ttgir"]
    loop = ttgir[ttgir.rindex("scf.for"):]
    head = loop[:loop.index("\n")]
    wait = re.search(r"ttg\.async_wait (%\w+), (%\w+) \{num = (\d+) : i32\}", loop)
    assert wait and int(wait.group(3)) == 2 * (stages - 2)
    carried = re.findall(r"(%\w+) = %\w+", head[head.index("iter_args("):])
    assert wait.group(1) in carried and wait.group(2) in carried
    assert head.count("!ttg.async.token") == 2 * (stages - 1)
    assert len(re.findall(r"ttg\.async_commit_group tokens %\w+", ttgir)) == 2 * stages
