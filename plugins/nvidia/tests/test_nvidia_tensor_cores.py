"""CPU-only: the tensor-core path.  The nvidia_mma / nvmma_shared layouts against the PTX ISA's
fragment tables (brute force over every lane, warp and register), their text form, and what the
tutorial matmul compiles to: wgmma + cp.async on cuda:90, mma.sync + cp.async on cuda:80, FMA with a
reason where no tensor-core instruction fits; compile time and code size for big tiles."""
import re
import time

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.ttgir.dialect import ensure_plugin_encodings
from tritium_nvidia.passes.encodings import NVMMASharedEncodingAttr, NvidiaMmaEncodingAttr

from conformance.cases import dot_tiles

ensure_plugin_encodings()


@pytest.mark.parametrize("version,warps,instr,shape", [
    (2, (2, 2), (16, 8), (64, 32)), (2, (4, 1), (16, 8), (64, 64)), (2, (1, 4), (16, 8), (16, 64)),
    (3, (4, 1), (16, 64, 16), (64, 64)), (3, (8, 1), (16, 256, 16), (128, 256)), (3, (4, 2), (16, 64, 16), (128, 128)),
])
def test_accumulator_layout_is_a_bijection_with_the_ptx_fragment(version, warps, instr, shape):
    enc = NvidiaMmaEncodingAttr(version, warps, instr)
    ll = enc.linear_layout(shape)
    tab = ll.table()
    cells = {tuple(c) for c in tab.reshape(-1, 2)}
    assert len(cells) == shape[0] * shape[1] == tab.shape[0] * tab.shape[1] * tab.shape[2]
    # the mma / wgmma D fragment: lane l, register pair (i, j) of 8-column block -> row l/4 + 8i,
    # column 2*(l%4) + j, every warp on its own 16-row slab
    for lane in range(32):
        for i in (0, 1):
            for j in (0, 1):
                r, c = tab[0, lane, i * 2 + j]
                assert (r, c) == (lane // 4 + 8 * i, 2 * (lane % 4) + j)
    wm = warps[0]
    for w in range(wm):
        assert tab[w, 0, 0][0] == 16 * w


@pytest.mark.parametrize("kw,instr_k", [(2, 16), (1, 8), (4, 32)])
def test_mma_v2_operand_layouts_match_the_ptx_fragments(kw, instr_k):
    enc = NvidiaMmaEncodingAttr(2, (2, 2), (16, 8))
    a = enc.dot_operand_linear_layout(0, kw, (32, instr_k)).table()
    b = enc.dot_operand_linear_layout(1, kw, (instr_k, 16)).table()
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for r in range(4):
            for e in range(kw):
                # A: row g + 8*(r&1), column kw*t + 4*kw*(r>>1) + e
                assert tuple(a[0, lane, r * kw + e]) == (g + 8 * (r & 1), kw * t + 4 * kw * (r >> 1) + e)
        for r in range(2):
            for e in range(kw):
                assert tuple(b[0, lane, r * kw + e]) == (kw * t + 4 * kw * r + e, g)
    # warps are numbered M first: warp 2 (the second along N) holds warp 0's A, warp 1 warp 0's B
    assert (a[2] == a[0]).all() and (b[1] == b[0]).all()
    assert not (a[1] == a[0]).all() and not (b[2] == b[0]).all()


@pytest.mark.parametrize("swizzle,transposed,bits,shape", [
    (128, False, 16, (128, 64)), (128, True, 16, (64, 128)), (64, False, 16, (64, 32)), (32, False, 8, (64, 32)),
    (128, False, 16, (64, 256)), (128, False, 8, (128, 128)), (128, False, 32, (64, 32)),
])
def test_nvmma_shared_is_a_bijection_keeping_16_byte_chunks(swizzle, transposed, bits, shape):
    enc = NVMMASharedEncodingAttr(swizzle, transposed, bits)
    eb = bits // 8
    offs = {}
    for x in range(shape[0]):
        for y in range(shape[1]):
            o = enc.byte_offset((x, y), shape)
            assert o % eb == 0 and o not in offs
            offs[o] = (x, y)
            # linear over GF(2): the offset is the xor of its coordinate bits' offsets
            bases = enc.offset_bases(shape)
            lin = 0
            for d, c in enumerate((x, y)):
                for bit, v in enumerate(bases[d]):
                    if c >> bit & 1:
                        lin ^= v
            assert lin == o
    assert sorted(offs) == list(range(0, shape[0] * shape[1] * eb, eb))
    fast = 0 if transposed else 1
    per_chunk = 16 // eb
    for x in range(shape[0]):
        for y in range(0, shape[1], per_chunk if fast == 1 else 1):
            c0 = (x, y)
            if fast == 1:
                run = [enc.byte_offset((x, y + i), shape) for i in range(min(per_chunk, shape[1] - y))]
            else:
                if x % per_chunk:
                    continue
                run = [enc.byte_offset((x + i, y), shape) for i in range(min(per_chunk, shape[0] - x))]
            assert run == list(range(run[0], run[0] + eb * len(run), eb)), c0


def test_encodings_print_and_parse_like_triton():
    from xdsl.parser import Parser
    from tritium.ttir.dialect import make_context

    def parse_attribute(text):
        return Parser(make_context(), text).parse_attribute()

    for text in ("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [8, 1], instrShape = [16, 256, 16]}>",
                 "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>",
                 "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>"):
        assert str(parse_attribute(text)) == text


D = {"tt.divisibility": 16}
SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"}


def _compile(target, bm, bn, bk, warps=4, stages=3, sig=SIG, precision="ieee"):
    acc = tritium.language.int32 if sig["c_ptr"] == "*i32" else tritium.language.float32
    return tritium.compile(dot_tiles.tiled_matmul_kernel, target=target, signature=sig,
                           constexprs={"BM": bm, "BN": bn, "BK": bk, "B_KMAJOR": False, "PRECISION": precision,
                                       "ACC": acc, "A_MMAJOR": False},
                           attrs={"a_ptr": D, "b_ptr": D, "c_ptr": D, "M": D, "N": D, "K": D},
                           num_warps=warps, num_stages=stages)


def test_sm90_matmul_uses_wgmma_fed_by_pipelined_cp_async(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = _compile("cuda:90", 128, 128, 64, stages=3)
    ptx, ttgir = k.asm["ptx"], k.asm["ttgir"]
    assert ".target sm_90a" in ptx
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in ptx
    assert "cp.async.cg.shared.global" in ptx and "cp.async.wait_group \t2;" in ptx  # 2 loads, 1 stage ahead
    assert "wgmma.wait_group.sync.aligned 1" in ptx  # one dot left in flight across iterations
    assert "#ttg.nvidia_mma<{versionMajor = 3" in ttgir and "ttg.async_copy_global_to_local" in ttgir
    # num_stages slots, refilled after the wgmma wait (Triton's schedule): a spare slot would take
    # 128 KB a block instead of 96, one block an SM instead of two (async_dot.blocks_per_sm)
    assert re.search(r"ttg.local_alloc .*3x128x64xf16", ttgir) and not re.search(r"4x128x64xf16", ttgir)
    assert k.metadata["shared"] == 3 * (128 * 64 + 64 * 128) * 2
    body = ttgir[ttgir.index("scf.for"):]
    body = body[:body.index("scf.yield")]
    assert body.count("ttg.barrier") == 2  # after the copies' wait, and before the refill


def test_sm90_spare_slot_where_it_costs_no_block(monkeypatch, tmp_path):
    """Four stages of 32 KB: one block an SM with or without a spare slot, so the loop gets
    num_stages + 1 slots (the refill then precedes the consumers without a barrier)."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = _compile("cuda:90", 128, 128, 64, stages=4)
    ttgir = k.asm["ttgir"]
    assert re.search(r"ttg.local_alloc .*5x128x64xf16", ttgir)
    body = ttgir[ttgir.index("scf.for"):]
    body = body[:body.index("scf.yield")]
    assert body.count("ttg.barrier") == 1  # the barrier after the wait; none before the refill
    assert "cp.async.wait_group \t4;" in k.asm["ptx"]


@pytest.mark.parametrize("bm,bn,slots", [
    (64, 256, 4),   # 5 slots: two blocks of 101 KiB fill the SM's 228 KiB carveout (4: two of 81)
    (128, 128, 5),  # 4 slots: three blocks of 65 KiB (past 196 KiB); 5: two of 81, the SM keeps two
    (128, 64, 5),   # four blocks of 49 KiB -> three of 61
])
def test_sm90_spare_slot_by_what_it_does_to_the_sm(bm, bn, slots, monkeypatch, tmp_path):
    """One warp group, BK 32, four stages (the tutorial's configs): a spare slot is taken unless it
    would leave one block an SM where two ran, or take the SM's blocks past 196 KiB of shared memory
    together where four slots stay within it (async_dot.spare_pays)."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = _compile("cuda:90", bm, bn, 32, warps=4, stages=4)
    assert re.search(rf"ttg.local_alloc .*{slots}x{bm}x32xf16", k.asm["ttgir"])
    assert k.metadata["shared"] == slots * (bm * 32 + 32 * bn) * 2


def test_sm90_tf32_copies_share_one_base_per_swizzle_constant(monkeypatch, tmp_path):
    """tf32 with an N-contiguous B: wgmma reads tf32 K-major only, so B is copied 4 bytes at a time
    into a 128-byte-swizzled buffer.  A register's offset there has bits the thread part also sets
    (XORed in) and others (an immediate): each distinct XOR constant is applied once and shared, not
    once per copy (19 ``xor.b32`` before; the main loop 211 -> 178 SASS instructions, Triton's 185)."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    sig = dict(SIG, a_ptr="*fp32", b_ptr="*fp32", c_ptr="*fp32")
    ptx = _compile("cuda:90", 128, 256, 32, warps=8, stages=3, sig=sig, precision="tf32").asm["ptx"]
    assert "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32" in ptx
    assert ptx.count("cp.async.ca.shared.global") == 96  # 32 four-byte copies of B per slot, 3 slots
    assert 0 < ptx.count("xor.b32") <= 4


def test_sm90_two_warp_group_matmul_refills_its_spare_slot_after_the_wgmma(monkeypatch, tmp_path):
    """128x256x64, 8 warps, 3 stages: four slots (one spare), and with two warp groups sharing the
    loop-top barrier the refill goes right after the wgmma is issued (membar's barrier before it),
    not between that barrier and the wgmma (run 27: the persistent matmul 3-4% more cycles than
    Triton's before, 1-2% fewer after).  One warp group keeps the refill first (the test above)."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = _compile("cuda:90", 128, 256, 64, warps=8, stages=3)
    ptx, ttgir = k.asm["ptx"], k.asm["ttgir"]
    assert re.search(r"ttg.local_alloc .*4x128x64xf16", ttgir) and "wgmma.wait_group.sync.aligned 1" in ptx
    body = ttgir[ttgir.index("scf.for"):]
    body = body[:body.index("scf.yield")]
    dot, wait = body.index("ttng.warp_group_dot "), body.index("ttng.warp_group_dot_wait")
    copies = [m.start() for m in re.finditer("ttg.async_copy_global_to_local", body)]
    assert len(copies) == 2 and all(dot < c < wait for c in copies)
    barriers = [m.start() for m in re.finditer("ttg.barrier", body)]
    assert len(barriers) == 2 and barriers[0] < dot < barriers[1] < copies[0]


def test_sm90_matmul_without_room_for_a_spare_slot_refills_after_the_wait(monkeypatch, tmp_path):
    """128x256x64 with 4 stages: five 48 KiB slots do not fit, so the loop takes Triton's schedule:
    four slots, the refill after the wait that leaves one wgmma in flight (retiring the previous
    iteration's), a barrier before the refill and one after the landed copies.  Before, the dot
    was waited for completely every iteration (measured on the H200 at 4096^3: 583 -> 654 TFLOP/s)."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = _compile("cuda:90", 128, 256, 64, warps=8, stages=4)
    ptx, ttgir = k.asm["ptx"], k.asm["ttgir"]
    assert re.search(r"ttg.local_alloc .*4x128x64xf16", ttgir) and not re.search(r"5x128x64xf16", ttgir)
    assert "wgmma.wait_group.sync.aligned 1" in ptx
    body = ttgir[ttgir.index("scf.for"):]
    body = body[:body.index("scf.yield")]
    wait = body.index("ttng.warp_group_dot_wait")
    assert "pendings = 1" in body[wait:body.index("\n", wait)]
    copies = [m.start() for m in re.finditer("ttg.async_copy_global_to_local", body)]
    assert copies and all(c > wait for c in copies)
    assert body.count("ttg.barrier") == 2
    assert body.rindex("ttg.barrier") < copies[0]


def test_sm80_matmul_uses_mma_sync_fed_by_cp_async(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    ptx = _compile("cuda:80", 64, 64, 32, stages=4).asm["ptx"]
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
    assert "cp.async.cg.shared.global" in ptx and "cp.async.wait_group \t4;" in ptx
    assert "wgmma" not in ptx


def test_tf32_int8_fp8_take_their_instructions(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    tf32 = _compile("cuda:80", 64, 64, 32, sig=dict(SIG, a_ptr="*fp32", b_ptr="*fp32"), precision="tf32").asm["ptx"]
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in tf32
    tf32x3 = _compile("cuda:80", 64, 64, 32, sig=dict(SIG, a_ptr="*fp32", b_ptr="*fp32"), precision="tf32x3")
    assert "cvt.rna.tf32.f32" in tf32x3.asm["ptx"]
    ieee = _compile("cuda:90", 64, 64, 32, sig=dict(SIG, a_ptr="*fp32", b_ptr="*fp32"), precision="ieee")
    assert "mma" not in ieee.asm["ptx"] and "keeps fp32 exact on FMA" in ieee.asm["ttgir"]
    i8 = _compile("cuda:80", 64, 64, 64, sig=dict(SIG, a_ptr="*i8", b_ptr="*i8", c_ptr="*i32"))
    assert "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32" in i8.asm["ptx"]
    fp8 = _compile("cuda:90", 64, 64, 64, sig=dict(SIG, a_ptr="*fp8e4nv", b_ptr="*fp8e4nv"))
    assert re.search(r"mma\S*e4m3", fp8.asm["ptx"])


@pytest.mark.parametrize("fp8", ["fp8e5"])  # fp8e4nv needs sm_89 (refused before, as by Triton)
def test_sm80_fp8_dot_is_fp16_mma_of_the_upcast_operands(monkeypatch, tmp_path, fp8):
    """No fp8 instruction before sm_89: the operands go through shared memory as fp8 (pipelined
    cp.async), are upcast to fp16 in the dot-operand registers and multiplied by fp16 mma.sync
    (every fp8 value and product is exact there), as Triton promotes them.  It was FMA code
    (about 40x the PTX, and minutes of ptxas for the conformance suite's cases)."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = _compile("cuda:80", 64, 64, 64, sig=dict(SIG, a_ptr=f"*{fp8}", b_ptr=f"*{fp8}"))
    ptx, ttgir = k.asm["ptx"], k.asm["ttgir"]
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
    assert "cp.async.cg.shared.global" in ptx
    assert re.search(r"tt.fp_to_fp .*#ttg.dot_op<\{opIdx = 0", ttgir)
    assert len(ptx.splitlines()) < 8000


def test_big_tiles_compile_fast_and_small(monkeypatch, tmp_path):
    """A 128x256x64 dot with 8 warps: the tensor-core IR does not grow with the tile as FMA does."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    t = time.perf_counter()
    k = _compile("cuda:90", 128, 256, 64, warps=8)
    elapsed = time.perf_counter() - t
    assert k.asm["cubin"][:4] == b"\x7fELF"
    small = _compile("cuda:90", 64, 64, 32)
    # 32x the multiply-adds of the small tile (FMA code grows by that); one wgmma per 64xNx16 here
    assert len(k.asm["llir"]) < 10 * len(small.asm["llir"]), (len(k.asm["llir"]), len(small.asm["llir"]))
    assert k.asm["ptx"].count("wgmma.mma_async") == 4
    assert elapsed < 60  # loose: the benchmark prints the real figure beside Triton's


def test_sm90_main_loop_shares_addresses_and_predicates(monkeypatch, tmp_path):
    """The 128x256x64 loop as Triton writes it: wgmma descriptors from a lane-0 warp id (uniform
    registers) plus constant offsets, cp.async destinations one base per operand plus immediates, and
    one mask compare per block of the mask's constancy (K divisible by 16: B's rows pair up)."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    ptx = _compile("cuda:90", 128, 256, 64, warps=8).asm["ptx"]
    assert "shfl.sync.idx.b32" in ptx
    assert ", 16383;" not in ptx  # no per-step mask of the descriptor's address field
    body = _loop_body(ptx)
    copies = re.findall(r"cp\.async\.cg\.shared\.global \[ (%r\d+) \+ 0 \], \[ %rd\d+ \+ 0 \], 16, (%r\d+);", body)
    assert len(copies) == 12  # A: 4 x 16 bytes per thread, B: 8
    assert len({size for _, size in copies}) == 4 + 4  # A's 4 rows (M masks); B's 8 rows in 4 pairs
    offset = set(re.findall(r"add\.s32\s+(%r\d+), %r\d+, \d+;", body))
    assert sum(dst in offset for dst, _ in copies) == 12 - 2


def test_sm90_copies_are_issued_grouped_by_their_base(monkeypatch, tmp_path):
    """A copy's per-thread pieces go out grouped by their swizzled base register (Triton's order):
    the 64x256x32 tile's B pieces use two bases, four pieces each, one base's four then the
    other's (alternating bases measured 1.4-6.6% slower on the H200 at 8192^3)."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    body = _loop_body(_compile("cuda:90", 64, 256, 32, warps=4, stages=4).asm["ptx"])
    imm_adds = dict((dst, base) for dst, base in re.findall(r"add\.s32\s+(%r\d+), (%r\d+), \d+;", body))
    groups = [re.findall(r"cp\.async\.cg\.shared\.global \[ (%r\d+) \+ 0 \]", g)
              for g in body.split("cp.async.commit_group")]
    groups = [g for g in groups if g]
    assert [len(g) for g in groups] == [2, 8]  # A then B, 16 bytes a piece
    for g in groups:
        bases = [imm_adds.get(dst, dst) for dst in g]
        runs = [b for i, b in enumerate(bases) if i == 0 or b != bases[i - 1]]
        assert len(runs) == len(set(runs)), f"pieces of one base split up: {bases}"
    b_bases = [imm_adds.get(dst, dst) for dst in groups[1]]
    assert len(set(b_bases)) == 2 and b_bases.count(b_bases[0]) == 4


def test_sm90_descriptors_count_from_the_ctas_own_window(monkeypatch, tmp_path):
    """A kernel the driver may launch in pairs (``pair_programs``: 4 warps, two blocks an SM) counts
    its wgmma descriptors' 14-bit address field from the CTA's own shared window (the base's bits
    below 256 KiB, masked once before the loop, plus the buffer's offset), so that it is right as
    the second CTA of a cluster too; the loop has no mask of its own.  An 8-warp 128x256 kernel
    (one block an SM) is not paired and keeps the plain address."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    paired = _compile("cuda:90", 64, 256, 32, warps=4, stages=4)
    ptx = paired.asm["ptx"]
    body = _loop_body(ptx)
    # the window's bits of the base, 262143 (256 KiB - 1), or shifted to the field, 16383; the
    # base's known 1024-byte alignment may be folded in (261120, 16320)
    masks = {261120, 262143, 16320, 16383}

    def window(text):
        return [m for m in re.finditer(r"and\.b32\s+%r\d+, %r\d+, (\d+);", text) if int(m.group(1)) in masks]
    assert len(window(ptx)) == 1 and not window(body)
    assert window(ptx)[0].start() < ptx.index(body)
    assert paired.metadata.get("pair_programs") is True
    plain = _compile("cuda:90", 128, 256, 64, warps=8)
    assert not window(plain.asm["ptx"]) and "pair_programs" not in plain.metadata


def _loop_body(ptx: str) -> str:
    """The PTX of the loop that holds the first wgmma (from its label to the branch back)."""
    label = re.search(r"bra\s+(\$L__BB\d+_\d+);", ptx[ptx.index("wgmma.mma_async"):]).group(1)
    body = ptx[ptx.index(label + ":"):]
    return body[:body.index(f"bra \t{label};")]


@pytest.mark.parametrize("d,in_flight", [(64, True), (128, False)])
def test_sm90_attention_leaves_p_at_v_in_flight(monkeypatch, tmp_path, d, in_flight):
    """Attention's second wgmma is retired by the next iteration's first wait (which ties the
    accumulator), and the K/V copies are issued after it; not where the registers live across it
    would not fit (head dim 128: the accumulator alone takes 128).  (With the overlap of the next
    test off: it starts from this loop.)"""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = _attention_kernel(d, overlap_dots=False)
    body = _loop_body(k.asm["ptx"])
    waits = body.count("wgmma.wait_group")
    last_commit = body.rindex("wgmma.commit_group")
    if in_flight:
        assert waits == 1
        assert body.index("cp.async.cg.shared.global") > last_commit
        assert k.asm["ptx"].count("wgmma.wait_group") == 2  # and one after the loop
    else:
        assert waits == 2
        assert body.rindex("cp.async.cg.shared.global") < body.index("wgmma.mma_async")


def _wgmma_loop(ptx: str) -> str:
    """The PTX of the loop (a label with a branch back to it) that holds wgmma."""
    for m in re.finditer(r"^(\$L__BB\d+_\d+):", ptx, re.M):
        rest = ptx[m.end():]
        back = re.search(rf"bra(\.uni)?\s+{re.escape(m.group(1))};", rest)
        if back and "wgmma.mma_async" in rest[:back.start()]:
            return rest[:back.start()]
    raise AssertionError("no loop with wgmma in the PTX")


def _attention_kernel(d, bm=128, warps=4, causal=False, **kw):
    from conformance.cases import tutorials_attention as ta
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32", "stride_h": "i32",
           "stride_m": "i32", "N_CTX": "i32"}
    return tritium.compile(ta.attn_fwd_kernel, target="cuda:90", signature=sig,
                           constexprs={"HEAD_DIM": d, "BLOCK_M": bm, "BLOCK_N": 64, "CAUSAL": causal},
                           attrs={n: D for n in ("Q", "K", "V", "Out", "stride_h", "stride_m", "N_CTX")},
                           num_warps=warps, num_stages=3, **kw)


@pytest.mark.parametrize("causal", [False, True])
def test_sm90_attention_overlaps_softmax_with_the_previous_p_at_v(monkeypatch, tmp_path, causal):
    """One warp group: each iteration issues S = Q K^T, then the previous iteration's P V, waits for
    S alone (wait_group 1) and runs the softmax while P V computes, then waits for it (wait_group 0)
    before the rescale; both groups retire within the iteration (a wait_group 1 whose groups were
    issued before the back edge makes ptxas serialize every wgmma: C7514).  The first iteration's
    stage is peeled before the loop and the last P V after it, under a guard for an empty loop."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = _attention_kernel(64, causal=causal)
    assert "tritium.overlapped_dots" in k.asm["ttgir"]
    body = _wgmma_loop(k.asm["ptx"])
    commits = [m.start() for m in re.finditer(r"wgmma\.commit_group", body)]
    w1 = body.index("wgmma.wait_group.sync.aligned 1;")
    w0 = body.index("wgmma.wait_group.sync.aligned 0;")
    assert len(commits) == 2 and commits[1] < w1 < w0
    assert "wgmma.mma_async" not in body[w0:]  # nothing left in flight over the back edge
    # S's wgmma (both operands in shared memory) comes first, then P V's (A in registers)
    mmas = [m.group(0) for m in re.finditer(r"wgmma\.mma_async[^;]*;", body)]
    assert "{%r" not in mmas[0].split("},", 1)[1] and "{%r" in mmas[-1].split("},", 1)[1]
    # the peeled first iteration and the last P V: three more wgmma groups outside the loop
    assert k.asm["ptx"].count("wgmma.commit_group") == 4


@pytest.mark.parametrize("kw", [{"overlap_dots": False}, {"warps": 8}])
def test_sm90_attention_overlap_off_and_with_two_warp_groups(monkeypatch, tmp_path, kw):
    """``overlap_dots=False``, and a block of two warp groups (whose softmaxes already overlap each
    other's dots), keep the loop as the dot-wait pass leaves it."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = _attention_kernel(64, **kw)
    assert "tritium.overlapped_dots" not in k.asm["ttgir"]
    assert "wgmma.wait_group.sync.aligned 1;" not in _wgmma_loop(k.asm["ptx"])


@tritium.jit
def _attention_with_descriptors(Q, K, V, Out, N_CTX, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    start_m = tl.program_id(0)
    k_desc = tl.make_tensor_descriptor(K, shape=[N_CTX, D], strides=[D, 1], block_shape=[BN, D])
    v_desc = tl.make_tensor_descriptor(V, shape=[N_CTX, D], strides=[D, 1], block_shape=[BN, D])
    q_desc = tl.make_tensor_descriptor(Q, shape=[N_CTX, D], strides=[D, 1], block_shape=[BM, D])
    q = q_desc.load([start_m * BM, 0])
    m_i = tl.zeros([BM], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BM], dtype=tl.float32) + 1.0
    acc = tl.zeros([BM, D], dtype=tl.float32)
    for start_n in range(0, N_CTX, BN):
        qk = tl.dot(q, k_desc.load([start_n, 0]).T)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(tl.float16), v_desc.load([start_n, 0]), acc * alpha[:, None])
        m_i = m_ij
    o_desc = tl.make_tensor_descriptor(Out, shape=[N_CTX, D], strides=[D, 1], block_shape=[BM, D])
    o_desc.store([start_m * BM, 0], (acc / l_i[:, None]).to(tl.float16))


def test_sm90_attention_over_tma_copies_is_not_overlapped(monkeypatch, tmp_path):
    """K and V through tensor descriptors (TMA copies completing on mbarriers): the pass leaves the
    loop alone (only the cp.async form has run reordered on a GPU)."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = tritium.compile(_attention_with_descriptors, target="cuda:90",
                        signature={"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "N_CTX": "i32"},
                        constexprs={"D": 64, "BM": 128, "BN": 64},
                        attrs={n: D for n in ("Q", "K", "V", "Out", "N_CTX")}, num_warps=4, num_stages=3)
    ttgir = k.asm["ttgir"]
    assert "ttg.async_copy_descriptor_to_local" in ttgir and "ttg.wait_barrier" in ttgir
    assert "tritium.overlapped_dots" not in ttgir


@pytest.mark.parametrize("out", ["fp16", "bf16"])
def test_sm90_epilogue_stores_accumulator_tiles_with_stmatrix(out, monkeypatch, tmp_path):
    """The 16-bit result of a wgmma accumulator reaches its store layout through shared memory with
    stmatrix, four 8x8 tiles (16 bytes a lane) an instruction, not one 32-bit store per pair;
    sm_80 has no stmatrix and an fp32 result is not 16-bit: both keep element stores."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    sig = dict(SIG, c_ptr=f"*{out}")
    ptx = _compile("cuda:90", 128, 256, 64, warps=8, sig=sig).asm["ptx"]
    # 128x256 elements over 256 threads: 128 each, 64 pairs, 16 stores of 4 tiles
    assert ptx.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == 16
    assert not re.search(r"st\.shared\.(b|u)32", ptx)
    assert ptx.count("ld.shared.v4.b32") == 16  # read back 8 elements a thread per load
    assert "stmatrix" not in _compile("cuda:80", 128, 128, 64, sig=sig).asm["ptx"]
    assert "stmatrix" not in _compile("cuda:90", 128, 256, 64, warps=8).asm["ptx"]


def _attention_ptx(d=64, bm=64, **kw):
    """(the PTX before the loop, all of it); the loop as the pipeline and the dot waits leave it:
    the overlap of the softmax with P V (on by default) peels the first iteration before the loop."""
    from conformance.cases import tutorials_attention as ta
    kw.setdefault("overlap_dots", False)
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32", "stride_h": "i32",
           "stride_m": "i32", "N_CTX": "i32"}
    k = tritium.compile(ta.attn_fwd_kernel, target="cuda:90", signature=sig,
                        constexprs={"HEAD_DIM": d, "BLOCK_M": bm, "BLOCK_N": 64, "CAUSAL": False},
                        attrs={n: D for n in ("Q", "K", "V", "Out", "stride_h", "stride_m", "N_CTX")},
                        num_warps=4, num_stages=3, **kw)
    ptx = k.asm["ptx"]
    label = re.search(r"bra\s+(\$L__BB\d+_\d+);", ptx[ptx.index("wgmma.mma_async"):]).group(1)
    return ptx[:ptx.index(label + ":")], ptx


@pytest.mark.parametrize("d,bm", [(64, 64), (128, 128)])
def test_sm90_attention_copies_q_ahead_of_the_pipeline_prologue(monkeypatch, tmp_path, d, bm):
    """Attention's Q tile, loop-invariant and read only by the loop's wgmma, goes to shared memory
    by cp.async in a commit group of its own, issued before the first K and V copies: no register
    round trip (no st.shared, no proxy fence) and no barrier before the loop (the body's barrier
    after its first wait publishes Q with the first K and V tiles); every group is waited for
    after the loop."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    prologue, ptx = _attention_ptx(d, bm)
    groups = prologue.split("cp.async.commit_group;")
    assert len(groups) == 1 + 1 + 2 * 2  # Q, then K and V of the two prologue stages
    q_copies = re.findall(r"cp\.async\.cg\.shared\.global \[ %r\d+ \+ 0 \], \[ %rd\d+ \+ 0 \], 16", groups[0])
    assert len(q_copies) == bm * d * 2 // 16 // 128  # the tile in 16-byte pieces over 128 threads
    assert "ld.global" not in prologue and "st.shared" not in prologue
    assert "fence.proxy.async" not in prologue and "bar.sync" not in prologue
    assert "cp.async.wait_group \t0;" in ptx[len(prologue):]


def test_sm90_attention_register_q_stores_after_the_prologue_copies(monkeypatch, tmp_path):
    """With the cp.async path off (``async_operand_loads=False``), Q is loaded to registers and
    written to shared memory, and that store and its proxy fence come after the prologue's copies
    (which no longer wait for Q); the body's barrier after its first wait publishes it (write,
    proxy fence, barrier, wgmma)."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    prologue, _ = _attention_ptx(async_operand_loads=False)
    last_commit = prologue.rindex("cp.async.commit_group;")
    assert prologue.index("ld.global") < prologue.index("cp.async.cg.shared.global")
    assert last_commit < prologue.index("st.shared") < prologue.index("fence.proxy.async")
    assert "bar.sync" not in prologue


@pytest.mark.parametrize("bn,warps,stages,nslots", [(128, 4, 3, 3), (128, 4, 4, 5), (256, 8, 4, 4)])
def test_sm90_pipelined_loop_carries_the_slot_it_refills(monkeypatch, tmp_path, bn, warps, stages, nslots):
    """The slot a pipelined loop's copies write is a loop-carried counter of its own, starting at
    ``S - 1`` and wrapping at the slot count like the slot read (Triton's form), not recomputed from
    the slot read every iteration.  Checked on the final TTGIR: the copies' ``ttg.memdesc_index``
    reads a block argument of the loop, whose init is the constant ``S - 1`` and whose yielded next
    value is ``select(arg + 1 >= nslots, 0, arg + 1)``."""
    from xdsl.dialects import scf
    from tritium.ttgir.ir import parse_module
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    m = parse_module(_compile("cuda:90", 128, bn, 64, warps=warps, stages=stages).asm["ttgir"])
    loop = next(op for op in m.walk() if isinstance(op, scf.ForOp))
    body = loop.body.block
    copies = [op for op in body.ops if op.name == "ttg.async_copy_global_to_local"]
    assert len(copies) == 2
    slots = {c.operands[1].owner.operands[1] for c in copies}  # memdesc_index(buffer, slot)
    assert len(slots) == 1
    slot = slots.pop()
    assert slot in body.args
    k = body.args.index(slot) - 1
    init = loop.iter_args[k].owner
    assert init.name == "arith.constant" and init.value.value.data == stages - 1
    nxt = body.last_op.operands[k].owner
    assert nxt.name == "arith.select"
    cmp, zero, inc = (v.owner for v in nxt.operands)
    assert zero.value.value.data == 0 and inc.name == "arith.addi" and slot in inc.operands
    assert cmp.name == "arith.cmpi" and cmp.operands[1].owner.value.value.data == nslots


@tritium.jit
def _fp8_attention_loop(Q, K, V, Out, N_CTX, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # the fp8 attention forward's loop: P (fp32 softmax numerators) cast to fp8 as the second dot's A
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.zeros([BM], dtype=tl.float32) - float("inf")
    acc = tl.zeros([BM, D], dtype=tl.float32)
    for start_n in range(0, N_CTX, BN):
        k = tl.load(K + (start_n + offs_n)[None, :] * D + offs_d[:, None])
        qk = tl.dot(q, k)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        acc = acc * tl.math.exp2(m_i - m_ij)[:, None]
        v = tl.load(V + (start_n + offs_n)[:, None] + offs_d[None, :] * N_CTX)  # V stored [D, N]: B K-contiguous
        acc = tl.dot(p.to(tl.float8e4nv), v, acc)
        m_i = m_ij
    tl.store(Out + offs_m[:, None] * D + offs_d[None, :], acc.to(tl.float16))


def test_fp8_attention_p_reaches_wgmma_in_one_shuffle_a_register(monkeypatch, tmp_path):
    """fp8 attention's P (the wgmma accumulator, cast to e4m3 by paired ``cvt``) becomes the second
    wgmma's A registers by word fetches in rounds: one ``shfl.sync.idx`` and one ``prmt`` per A
    register (Triton's count; plain fetches took two shuffles and byte-by-byte packing), the
    conversion's 16-bit pairs packed two to a word by ``mov.b32 {lo, hi}``, no shared memory."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = tritium.compile(_fp8_attention_loop, target="cuda:90", num_warps=4, num_stages=3,
                        signature={"Q": "*fp8e4nv", "K": "*fp8e4nv", "V": "*fp8e4nv", "Out": "*fp16", "N_CTX": "i32"},
                        constexprs={"D": 64, "BM": 64, "BN": 64},
                        attrs={n: {"tt.divisibility": 16} for n in ("Q", "K", "V", "Out", "N_CTX")},
                        stage="ptx")
    body = _wgmma_loop(k.asm["ptx"])
    a_regs = 64 * 64 // 128 // 4            # P's bytes a thread holds, four to an A register
    assert body.count("cvt.rn.satfinite.e4m3x2.f32") == 2 * a_regs
    assert body.count("shfl.sync.idx.b32") == a_regs
    assert body.count("prmt.b32") == a_regs
    assert len(re.findall(r"mov\.b32\s+%r\d+, \{%rs\d+, %rs\d+\};", body)) == a_regs
    assert "st.shared" not in body and "ld.shared" not in body
