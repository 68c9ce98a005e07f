"""CPU: what ``nvidia-warp-specialize`` makes of a loop marked ``tl.range(..., warp_specialize=True)``
on sm_90 (``passes/warp_specialize.py``): a producer warp group that issues the copies and
exits, consumers that hand slots back through barriers and pass no block barrier in the loop,
the block's extra warps, and the loops it declines, each with its reason.  The GPU results are
``test_nvidia_warp_specialize_gpu.py``'s."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

import tritium
import tritium.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_nvidia_tma import compile_mapped  # noqa: E402
from test_nvidia_warp_specialize_gpu import ws_kernels  # noqa: E402
from bench_files import bench_kernels  # noqa: E402
from tritium_nvidia.passes.warp_specialize import Split, shared_split  # noqa: E402

DESCS = {"a_desc": ([128, 64], "zero"), "b_desc": ([256, 64], "zero"), "c_desc": ([128, 256], "zero")}
PTXAS = shutil.which("ptxas")


def _compile(ws=True, num_warps=8, num_stages=3, bn=256, target="cuda:90", **kw):
    descs = dict(DESCS, b_desc=([bn, 64], "zero"), c_desc=([128, bn], "zero"))
    return compile_mapped(ws_kernels.ws_matmul, descs, "fp16", dict(BLOCK_M=128, BLOCK_N=bn, BLOCK_K=64, WS=ws),
                          {"K": "i32"}, num_warps=num_warps, num_stages=num_stages, target=target, **kw)


def _consumer_loop(ptx: str) -> str:
    """The PTX from the consumers' register raise to the end of their loop's back edge."""
    start = ptx.index("setmaxnreg.inc")
    return ptx[start:ptx.index("bar.sync \t1,", start)]


def test_producer_and_consumers():
    k = _compile()
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert "ttng.producer_partition" in ttgir and '"ttg.total-num-warps" = 12' in ttgir
    # the entry register count is pinned (the file over 384 threads), so ptxas honours setmaxnreg
    assert k.metadata["num_warps"] == 12 and ".maxntid 384" in ptx and ".maxnreg 168" in ptx
    producer = ptx[ptx.index("setmaxnreg.dec.sync.aligned.u32 40;"):ptx.index("setmaxnreg.inc")]
    # the producer: waits for a slot to come back, then the engine's copies; no block barrier
    # (an A and a B tile an iteration; LLVM may unroll the producer's short loop)
    copies = producer.count("cp.async.bulk.tensor")
    assert "mbarrier.try_wait.parity" in producer and copies >= 2 and copies % 2 == 0
    assert "bar.sync" not in producer
    consumers = _consumer_loop(ptx)
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in consumers
    # the consumers: wait for the copies, wgmma, hand the slot back; no copies, no block barrier
    assert "wgmma.mma_async" in consumers and "mbarrier.arrive.shared::cta.b64" in consumers
    assert "cp.async.bulk.tensor" not in consumers and "bar.sync \t0" not in consumers
    # one block barrier (before the split) and the consumers' named one after their loop
    assert ptx.count("bar.sync \t0;") >= 1 and "bar.sync \t1, 256;" in ptx


def test_without_the_hint_the_loop_is_as_before():
    k = _compile(ws=False)
    assert "ttng.producer_partition" not in k.asm["ttgir"] and "setmaxnreg" not in k.asm["ptx"]
    assert k.metadata["num_warps"] == 8 and ".maxnreg" not in k.asm["ptx"]


@pytest.mark.parametrize("num_warps, regs, entry", [(4, 256, 248), (8, 232, 168)])
def test_register_split(num_warps, regs, entry):
    k = _compile(num_warps=num_warps, bn=128)
    assert f"setmaxnreg.inc.sync.aligned.u32 {regs};" in k.asm["ptx"]
    assert f".maxnreg {entry}\n" in k.asm["ptx"]
    assert k.metadata["num_warps"] == num_warps + 4


def test_a_users_maxnreg_wins():
    assert ".maxnreg 160\n" in _compile(bn=128, maxnreg=160).asm["ptx"]
    assert "ws_blocks_per_sm" not in _attention(d=64, bn=64, num_warps=4, maxnreg=248).metadata


@pytest.mark.parametrize("total_warps, shared, split", [
    (8, 65_640, Split(2, 128, 216)),    # one consumer group, three blocks' shared memory: two
    (8, 150_000, None),                 # shared memory for one block
    (12, 65_640, None),                 # two consumer groups: 104 registers each at two blocks
    (20, 0, None),
])
def test_shared_split(total_warps, shared, split):
    assert shared_split(90, total_warps, shared) == split
    assert shared_split(80, total_warps, shared) is None


@pytest.mark.skipif(PTXAS is None, reason="no ptxas on this machine (the split is kept on ptxas's report)")
@pytest.mark.parametrize("d, bn, stages, blocks", [(64, 64, 3, 2), (128, 64, 2, 2), (64, 128, 2, None)])
def test_one_consumer_group_shares_the_sm(d, bn, stages, blocks):
    """Attention with one consumer warp group: the cubin is assembled with the split for two blocks
    an SM (entry 128, consumers 216) where ptxas spills at most the budget under it; d64 with
    128-column K/V blocks would spill 604 bytes and keeps the whole file (entry 248, 256)."""
    k = _attention(d=d, bn=bn, num_warps=4, num_stages=stages)
    md = k.metadata
    own = md["resources"][md["name"]]
    assert md.get("ws_blocks_per_sm") == blocks
    assert md["n_regs"] == (128 if blocks else 248) and own["spill_stores"] <= 32
    # the ptx stage's text keeps the one-block split; the cubin was assembled from the other
    assert ".maxnreg 248\n" in k.asm["ptx"] and "setmaxnreg.inc.sync.aligned.u32 256;" in k.asm["ptx"]
    if blocks:
        assert md["unshared_regs"] == 248
        assert "ws_blocks_per_sm" not in _attention(d=d, bn=bn, num_warps=4, num_stages=stages,
                                                    occupancy_cap=False).metadata


@pytest.mark.skipif(PTXAS is None, reason="no ptxas on this machine")
def test_ptxas_takes_it_without_spills(tmp_path):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(_compile().asm["ptx"])
    out = subprocess.run([PTXAS, "-arch=sm_90a", "-v", str(ptx), "-o", str(tmp_path / "k.cubin")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert re.search(r"0 bytes spill stores, 0 bytes spill loads", out.stderr), out.stderr


@tritium.jit
def ws_in_persistent_loop(a_desc, b_desc, c_desc, K, TILES, BLOCK: tl.constexpr):
    for t in range(tl.program_id(0), TILES, 132):
        acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
        for ki in tl.range(tl.cdiv(K, 64), warp_specialize=True):
            acc = tl.dot(a_desc.load([t * BLOCK, ki * 64]), b_desc.load([0, ki * 64]).T, acc)
        c_desc.store([t * BLOCK, 0], acc.to(tl.float16))


@tritium.jit
def ws_store_first(a_desc, b_desc, c_desc, out_ptr, K, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, 16), tl.arange(0, 16))
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for ki in tl.range(tl.cdiv(K, 64), warp_specialize=True):
        acc = tl.dot(a_desc.load([0, ki * 64]), b_desc.load([0, ki * 64]).T, acc)
    c_desc.store([0, 0], acc.to(tl.float16))


@pytest.mark.parametrize("kernel, scalars, reason", [
    (ws_in_persistent_loop, {"K": "i32", "TILES": "i32"}, "not in the kernel's own body"),
    (ws_store_first, {"out_ptr": "*i32", "K": "i32"}, "tt.store before the loop writes memory"),
])
def test_declined_loops_say_why(kernel, scalars, reason):
    descs = {"a_desc": ([128, 64], "zero"), "b_desc": ([128, 64], "zero"), "c_desc": ([128, 128], "zero")}
    k = compile_mapped(kernel, descs, "fp16", {"BLOCK": 128}, scalars, num_warps=4, num_stages=3)
    assert "ttng.producer_partition" not in k.asm["ttgir"] and reason in k.asm["ttgir"]
    assert "setmaxnreg" not in k.asm["ptx"] and k.metadata["num_warps"] == 4


def test_other_targets_decline():
    ttgir = _compile(target="cuda:80", stage="ttgir").asm["ttgir"]
    assert "warp specialization is for sm_90" in ttgir and "ttng.producer_partition" not in ttgir


@pytest.mark.parametrize("bn, warps, slots, shared", [(128, 8, 3, 98360), (256, 8, 4, 196672)])
def test_spare_slot_only_where_it_costs_no_block(bn, warps, slots, shared):
    """The descriptor matmul without the producer: 128x128x64 over 3 stages keeps 3 slots (98 KB,
    two blocks an SM; a spare slot would take 131 KB, one block: 440 against 601 TFLOP/s at
    8192^3 on an H200), 128x256x64 takes its spare slot (one block an SM either way)."""
    k = _compile(ws=False, num_warps=warps, num_stages=3, bn=bn)
    assert re.search(rf"ttg.local_alloc .*{slots}x128x64xf16", k.asm["ttgir"])
    assert k.metadata["shared"] == shared


@pytest.mark.parametrize("num_warps, num_stages", [(4, 3), (8, 3), (4, 4)])
def test_a_store_outside_loops_does_not_wait_for_itself(num_warps, num_stages):
    """One tile a program: no earlier run of the epilogue's store can be outstanding when it
    writes its tile, so thread 0 does not wait for the engine there (it still does before
    returning). That wait made ptxas serialize the main loop's wgmma (C7514: each waited for before
    the next, 0.82 of Triton at 128x128x64, 4 warps, 3 stages)."""
    k = _compile(ws=False, num_warps=num_warps, num_stages=num_stages, bn=128)
    lines = [ln.strip() for ln in k.asm["ttgir"].splitlines()]
    store = next(i for i, ln in enumerate(lines) if ln.startswith("tt.descriptor_store"))
    ret = next(i for i, ln in enumerate(lines) if ln.startswith("tt.return"))
    assert not lines[store - 1].startswith("ttng.bulk_store_wait")
    assert lines[ret - 1].startswith("ttng.bulk_store_wait")
    ptx = k.asm["ptx"]
    commit = ptx.index("cp.async.bulk.commit_group;")
    assert "cp.async.bulk.wait_group.read 0;" in ptx[commit:]
    if PTXAS is not None:
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "k.ptx")
            with open(src, "w") as f:
                f.write(ptx)
            r = subprocess.run([PTXAS, "-arch=sm_90a", "-v", src, "-o", os.path.join(d, "k.cubin")],
                               capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            assert "C7514" not in r.stderr, r.stderr


attention = bench_kernels("ws_attention_cpu_test", "attention_kernels.py")
ATTN_SIG = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp16", "lse_ptr": "*fp32",
            "sm_scale": "fp32", "Z": "i32", "H": "i32", "N_CTX": "i32"}


def _attention(ws=True, d=128, bn=128, causal=False, num_warps=8, num_stages=3, **kw):
    """The benchmark's descriptor attention (maps built in the kernel), K/V loop marked WS."""
    aligned = ("q_ptr", "k_ptr", "v_ptr", "o_ptr", "lse_ptr", "N_CTX")
    return tritium.compile(attention.attn_fwd_desc, target="cuda:90", signature=ATTN_SIG,
                           attrs={a: {"tt.divisibility": 16} for a in aligned},
                           constexprs=dict(HEAD_DIM=d, BLOCK_M=128, BLOCK_N=bn, CAUSAL=causal, WS=ws),
                           num_warps=num_warps, num_stages=num_stages, **kw)


@pytest.mark.parametrize("d, bn, causal", [(128, 128, False), (64, 128, True), (128, 64, True)])
def test_attention_producer_and_two_consumer_groups(d, bn, causal):
    """Attention's K/V loop: the producer copies K and V, the two consumer warp groups (128 rows,
    8 warps) run both dots and hand the slots back; Q reaches shared memory by one copy of the
    engine before the split (no stores before it, so the producer warps may pass it)."""
    k = _attention(d=d, bn=bn, causal=causal)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert "ttng.producer_partition" in ttgir and "tritium.ws_reason" not in ttgir
    assert k.metadata["num_warps"] == 12 and ".maxntid 384" in ptx
    producer = ptx[ptx.index("setmaxnreg.dec.sync.aligned.u32 40;"):ptx.index("setmaxnreg.inc")]
    assert producer.count("cp.async.bulk.tensor") >= 2 and "mbarrier.try_wait.parity" in producer
    assert "wgmma" not in producer and "bar.sync" not in producer
    consumers = _consumer_loop(ptx)
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in consumers
    assert "cp.async.bulk.tensor" not in consumers and "bar.sync \t0" not in consumers
    # both dots, S = Q K^T and O += P V, each its own commit group
    assert consumers.count("wgmma.commit_group.sync.aligned;") >= 2
    assert "mbarrier.arrive.shared::cta.b64" in consumers
    # Q: one copy into its buffer, waited for before the loop, never read back through registers
    before = ptx[:ptx.index("setmaxnreg.dec")]
    # Q, and the prologue's two K and two V tiles, each a box of 64 columns a copy
    assert before.count("cp.async.bulk.tensor.2d.shared::cluster.global") == 5 * (d // 64)
    assert "ld.shared" not in before and "st.shared.v" not in before


def test_a_tile_loaded_only_into_shared_memory_is_copied_there():
    """``local_alloc(descriptor_load)`` outside loops (Q) becomes a copy into the buffer, waited for
    before the loop that reads it; the barrier is retired after that loop.  Without the hint too."""
    ttgir = _attention(ws=False, d=64, bn=64, num_warps=4).asm["ttgir"]
    lines = [ln.strip() for ln in ttgir.splitlines()]
    assert not any(ln.startswith("%") and "tt.descriptor_load" in ln for ln in lines)
    loop = next(i for i, ln in enumerate(lines) if " scf.for " in ln)
    q_wait = next(i for i, ln in enumerate(lines) if ln.startswith("ttg.wait_barrier") and "1xi64" in ln)
    q_copy = next(i for i, ln in enumerate(lines) if ln.startswith("ttg.async_copy_descriptor_to_local")
                  and "128x64xf16" in ln.split(":")[-1].split(",")[1])
    assert q_copy < q_wait < loop
    end = max(i for i, ln in enumerate(lines) if ln.startswith("}"))
    inval = [i for i, ln in enumerate(lines) if ln.startswith("ttg.inval_barriers") and "1xi64" in ln]
    assert len(inval) == 1 and loop < inval[0] < end


@pytest.mark.parametrize("ws", [False, True])
def test_one_proxy_fence_after_the_maps_built_over_the_slots(ws):
    """``UnfencedCopies``: the tensor maps are staged in shared memory at the bytes K's slots take
    later, so the first copy into those slots after them fences, on every path
    (``tritium.fence_always``, outside its predicate); every other copy, the loop's included, goes
    without a fence (only wgmma reads the slots)."""
    k = _attention(ws=ws, d=64, bn=64 if not ws else 128, num_warps=4 if not ws else 8)
    tags = ["always" if "tritium.fence_always" in ln else "none" if "tritium.unfenced_copy" in ln else "fenced"
            for ln in k.asm["ttgir"].splitlines() if "ttg.async_copy_descriptor_to_local" in ln]
    assert tags.count("always") == 1 and tags.count("fenced") == 0 and len(tags) >= 5, tags
    ptx = k.asm["ptx"]
    loop = ptx[ptx.index("mbarrier.try_wait.parity"):]
    first_copy = ptx.index("cp.async.bulk.tensor.2d.shared::cluster.global")
    assert "fence.proxy.async.shared::cta" in ptx[first_copy:ptx.index("mbarrier.try_wait.parity")]
    # no fence before any copy issued after the first wait
    for m in re.finditer(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global", loop):
        assert "fence.proxy.async" not in loop[max(0, m.start() - 400):m.start()]


def test_attention_without_the_hint_keeps_its_warps():
    k = _attention(ws=False)
    assert "ttng.producer_partition" not in k.asm["ttgir"] and k.metadata["num_warps"] == 8


@pytest.mark.skipif(PTXAS is None, reason="no ptxas on this machine")
@pytest.mark.parametrize("d, bn", [(128, 128), (64, 128)])
def test_attention_assembles_without_spills(tmp_path, d, bn):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(_attention(d=d, bn=bn).asm["ptx"])
    out = subprocess.run([PTXAS, "-arch=sm_90a", "-v", str(ptx), "-o", str(tmp_path / "k.cubin")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert re.search(r"0 bytes spill stores, 0 bytes spill loads", out.stderr), out.stderr


def test_attention_pingpong_turns():
    """Option ``pingpong``: the two consumer groups issue ``S = Q K^T`` in turns on named barriers
    2 and 3 (each a group's turn, counting both groups' 256 threads); group 1 opens group 0's
    first turn before the loop and group 0 takes the last one after it.  Off by default."""
    ptx = _attention(d=128, bn=128, pingpong=True).asm["ptx"]
    wait, turn = re.search(r"bar.sync \t%r\d+, 256;", ptx), re.search(r"bar.arrive \t%r\d+, 256;", ptx)
    assert wait and turn and wait.start() < turn.start()
    # the turn covers the issue of S's wgmma (both operands in shared memory), no P V, no wait
    turn_body = ptx[wait.end():turn.start()]
    s_mma = re.findall(r"wgmma.mma_async[^;]*\}, %rd\d+, %rd\d+,", turn_body)
    assert len(s_mma) == 128 // 16 and turn_body.count("wgmma.mma_async") == len(s_mma)
    assert "wgmma.wait_group" not in turn_body
    assert "bar.arrive \t2, 256;" in ptx and "bar.sync \t2, 256;" in ptx
    assert not re.search(r"bar\.(sync|arrive) \t(%r\d+|2), 256;", _attention(d=128, bn=128).asm["ptx"])


@tritium.jit
def two_loops_one_tile(q_desc, k_desc, o_desc, N, BLOCK: tl.constexpr):
    q = q_desc.load([0, 0])
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for i in tl.range(0, N, BLOCK):
        acc = tl.dot(q, k_desc.load([i, 0]).T, acc)
    for i in tl.range(N, 2 * N, BLOCK):
        acc = tl.dot(q, k_desc.load([i, 0]).T, acc)
    o_desc.store([0, 0], acc.to(tl.float16))


def test_a_tile_two_loops_read_is_copied_once():
    """Each loop's dot gets its own ``local_alloc`` of the tile from accelerate-matmul: one copy
    fills one buffer for both, waited for before the first loop, retired after the second."""
    descs = {"q_desc": ([128, 64], "zero"), "k_desc": ([128, 64], "zero"), "o_desc": ([128, 128], "zero")}
    ttgir = compile_mapped(two_loops_one_tile, descs, "fp16", {"BLOCK": 128}, {"N": "i32"}, num_warps=8,
                           num_stages=3).asm["ttgir"]
    lines = [ln.strip() for ln in ttgir.splitlines()]
    assert not any("tt.descriptor_load" in ln for ln in lines)
    assert not any(re.match(r"%\S+ = ttg.local_alloc %", ln) for ln in lines)  # no alloc from registers
    loops = [i for i, ln in enumerate(lines) if " scf.for " in ln]
    waits = [i for i, ln in enumerate(lines) if ln.startswith("ttg.wait_barrier") and "1xi64" in ln]
    invals = [i for i, ln in enumerate(lines) if ln.startswith("ttg.inval_barriers") and "1xi64" in ln]
    assert len(loops) == 2 and len(waits) == 1 and len(invals) == 1 and waits[0] < loops[0] < loops[1] < invals[0]


@pytest.mark.parametrize("ws, num_warps", [(True, 8), (False, 8), (False, 4)])
def test_causal_attention_two_loops_keep_the_accumulator_layout(ws, num_warps):
    """Causal attention runs two loops over one accumulator and its row statistics (left of the
    diagonal, then the diagonal): both carry them in the wgmma layout (remove-layout-conversions'
    forward rule follows a loop result into the next loop's iter arg).  They were carried in a
    blocked layout, converted through shared memory twice an iteration (299 KB of shared memory
    at d128, over the block's 227)."""
    k = _attention(ws=ws, d=128, bn=128 if num_warps == 8 else 64, causal=True, num_warps=num_warps)
    ttgir = k.asm["ttgir"]
    loops = [ln for ln in ttgir.splitlines() if " scf.for " in ln and "tensor<128x128xf32" in ln]
    assert len(loops) == 2 and all("#ttg.nvidia_mma" in ln and "#ttg.blocked" not in ln for ln in loops)
    # one conversion through shared memory in the whole kernel: the row statistics to the LSE store
    assert len(re.findall(r"ttg.convert_layout .*allocation.offset", ttgir)) == 1
    assert k.metadata["shared"] <= 232448
