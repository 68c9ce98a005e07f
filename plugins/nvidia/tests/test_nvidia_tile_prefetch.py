"""``nvidia-tile-prefetch`` (passes/tile_prefetch.py): a persistent matmul's ring of slots runs across
its tiles and the next tile's first copies go before this tile's epilogue.  CPU: the TTGIR's shape
and the PTX the assembler takes; what is declined and why.  GPU: the result against float64 and
bit for bit against the kernel without the pass, for programs of no, one and many tiles and K
loops shorter than the prologue."""
import re

import pytest

from tritium.tools.tensor_descriptor import TensorDescriptor
from tritium_nvidia.plugin import nvidia_plugin as plugin
from conformance.cases import tensor_map as cases
from test_nvidia_tma import _persistent, _ptxas_accepts


def _lines(ttgir: str) -> list[str]:
    return [ln.strip() for ln in ttgir.splitlines()]


def _index(lines, pred, start=0) -> int:
    return next(i for i in range(start, len(lines)) if pred(lines[i]))


# (stages, warps, BN, BK, slots, iterations the prologue issues): the 4-warp tile takes a spare slot
@pytest.mark.parametrize("stages, warps, block_n, block_k, slots, ahead", [(3, 8, 256, 64, 3, 2), (3, 4, 128, 64, 4, 2),
                                                                            (2, 8, 256, 64, 2, 1)])
def test_next_tiles_copies_go_before_the_epilogue(stages, warps, block_n, block_k, slots, ahead, tmp_path,
                                                  monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    k = _persistent(block_k, stages=stages, warps=warps, block_n=block_n)
    ttgir = k.asm["ttgir"]
    assert "prefetch_reason" not in ttgir
    lines = _lines(ttgir)
    outer = _index(lines, lambda ln: "scf.for" in ln)
    inner = _index(lines, lambda ln: "scf.for" in ln, outer + 1)
    # the rings' barriers initialised once before the tile loop, retired once after it
    inits = [i for i, ln in enumerate(lines) if ln.startswith("ttg.init_barriers")]
    invals = [i for i, ln in enumerate(lines) if ln.startswith("ttg.inval_barriers")]
    store = _index(lines, lambda ln: ln.startswith("tt.descriptor_store"))
    assert len(inits) == 2 and max(inits) < outer and len(invals) == 2 and min(invals) > store
    # the first tile's prologue before the loop, in an scf.if on the tile existing
    first_if = _index(lines, lambda ln: ln.startswith("scf.if"))
    assert max(inits) < first_if < outer
    assert sum("ttg.async_copy_descriptor_to_local" in ln for ln in lines[first_if:outer]) == 2 * ahead
    # the tile loop carries the K loop's three counters, which the K loop starts from
    counters = re.search(r"scf\.for %\w+ = .* iter_args\((%\w+) = %\w+, (%\w+) = %\w+, (%\w+) = %\w+\) "
                         r"-> \(i32, i32, i32\)", lines[outer])
    assert counters, lines[outer]
    for arg in counters.groups():
        assert f"= {arg}" in lines[inner], (arg, lines[inner])
    # after the K loop: its last wgmma retired, a block barrier, the next tile's prologue, then the epilogue
    retire = _index(lines, lambda ln: re.search(r"warp_group_dot_wait %\w+ \{pendings = 0", ln) is not None, inner)
    barrier = _index(lines, lambda ln: ln.startswith("ttg.barrier"), retire)
    nxt_if = _index(lines, lambda ln: ln.startswith("scf.if"), retire)
    copies = [i for i in range(nxt_if, store) if "ttg.async_copy_descriptor_to_local" in lines[i]]
    assert retire < barrier < nxt_if < min(copies) and max(copies) < store
    assert len(copies) == sum("ttg.async_copy_descriptor_to_local" in ln for ln in lines[first_if:outer])
    assert not any(ln.startswith("ttng.bulk_store_wait") for ln in lines[retire:max(copies)])
    # PTX: each slot's mbarrier initialised and invalidated once; the assembler takes it
    ptx = k.asm["ptx"]
    assert ptx.count("mbarrier.init.shared::cta.b64") == 2 * slots
    assert ptx.count("mbarrier.inval.shared::cta.b64") == 2 * slots
    _ptxas_accepts(ptx, tmp_path)


def test_what_is_declined(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    # four 48 KiB stages leave the 64 KiB store tile no bytes of its own: it shares the rings'
    k = _persistent(64, stages=4, warps=8, block_n=256)
    assert 'tritium.prefetch_reason = "the epilogue takes shared memory of its own"' in k.asm["ttgir"]
    assert k.asm["ttgir"].count("ttg.init_barriers") == 2
    # the option off: the loop as the pipeline made it, barriers initialised in the tile loop
    k = _persistent(64, stages=3, warps=8, block_n=256, tile_prefetch=False)
    ttgir = k.asm["ttgir"]
    lines = _lines(ttgir)
    outer = _index(lines, lambda ln: "scf.for" in ln)
    assert "prefetch_reason" not in ttgir and "scf.if" not in ttgir
    assert all(i > outer for i, ln in enumerate(lines) if ln.startswith("ttg.init_barriers"))


def test_a_single_k_loop_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    from test_nvidia_tma import compile_mapped
    k = compile_mapped(cases.map_scale_kernel, {"x_desc": ([32, 64], "zero"), "z_desc": ([32, 64], "zero")},
                       "fp16", {"BM": 32, "BN": 64})
    assert "prefetch_reason" not in k.asm["ttgir"] and "scf.if" not in k.asm["ttgir"]


# -- on the GPU ------------------------------------------------------------------------------------

@pytest.mark.skipif(not plugin.tritium_device_present("nvidia"), reason="no CUDA device")
@pytest.mark.parametrize("dtype, bm, bn, bk, warps, stages", [
    ("fp16", 128, 256, 64, 8, 3), ("fp16", 128, 128, 64, 4, 3), ("bf16", 128, 128, 32, 4, 3),
    ("fp16", 128, 256, 64, 8, 2)])
def test_persistent_matmul_with_the_ring_across_tiles(dtype, bm, bn, bk, warps, stages):
    torch = pytest.importorskip("torch")
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA needs compute capability 9.0")
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    g = torch.Generator(device="cuda").manual_seed(7)
    M, N = 3 * bm + 40, 2 * bn + 24  # ragged: the last tiles overhang
    tiles = -(-M // bm) * -(-N // bn)
    for K in (bk, 2 * bk, 1000):  # one iteration (fewer than the prologue's), two, a ragged many
        a = (torch.rand(M, K, device="cuda", generator=g) * 2 - 1).to(dt)
        b = (torch.rand(N, K, device="cuda", generator=g) * 2 - 1).to(dt)
        ref = a.double() @ b.double().T
        for programs in (1, 5, tiles + 3):  # every tile in one program; a few each; some programs without one
            outs = []
            for prefetch in (True, False):
                c = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
                descs = [TensorDescriptor.from_tensor(t, blk)
                         for t, blk in ((a, [bm, bk]), (b, [bn, bk]), (c, [bm, bn]))]
                k = cases.map_persistent_matmul_kernel[(programs,)](*descs, M, N, K, BM=bm, BN=bn, BK=bk, GROUP_M=8,
                                                                    NUM_SMS=programs, num_warps=warps,
                                                                    num_stages=stages, tile_prefetch=prefetch)
                torch.cuda.synchronize()
                ttgir = k.asm["ttgir"]
                assert ("scf.if" in ttgir and "prefetch_reason" not in ttgir) == prefetch, prefetch
                outs.append(c)
            err = ((outs[0].double() - ref).abs().max() / ref.abs().max()).item()
            assert err < 1e-2, (K, programs, err)
            assert torch.equal(outs[0], outs[1]), (K, programs)
