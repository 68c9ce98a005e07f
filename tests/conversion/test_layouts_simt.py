"""The shared lowering of layout conversions, reductions and scans, run for real on the CPU.

Every ``ir_files`` conformance kernel (blocked, slice, dot_op, linear, nvidia_mma v2/v3, amd_mfma;
convert, local_alloc/local_load, reduce, scan) is lowered with the host SIMT target of
:mod:`simt` -- one OS thread per GPU thread, real shuffles and barriers -- and its output checked
against the case's numpy reference: a wrong element-to-thread mapping anywhere in the lowering
gives wrong numbers here, as it would on a GPU."""
import importlib.util
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

import simt  # noqa: E402
from conformance import dtypes  # noqa: E402
from conformance.cases import ir_files  # noqa: E402
from conformance.runner import case_seed, compare, prepare  # noqa: E402

from tritium.ttgir import layouts  # noqa: E402
from tritium.ttgir.ir import parse_module  # noqa: E402

_PLUGIN = {"nvidia-": "tritium_nvidia", "amd-": "tritium_amd", "rdna-": "tritium_amd"}


def _vendor(case_id: str):
    name = case_id.split("/", 1)[1]
    return next((p for prefix, p in _PLUGIN.items() if name.startswith(prefix)), None)


def _run(case, warp_size: int, seed: int = 0, stores_matrices: bool = False, edit=None):
    prep = prepare(case, case_seed(seed, case.id))
    args = [prep.host[n] for n in case.kernel.arg_names]
    text = case.kernel.text(warp_size)
    failed = simt.run_ttgir(parse_module(edit(text) if edit else text), args, stores_matrices=stores_matrices)
    assert failed == 0, f"{failed} device assertions failed"
    (name, out), = case.outputs.items()
    inputs = {k: v for k, v in prep.ref_args.items() if k not in case.outputs}
    expected = case.reference(**inputs)
    actual = prep.host[name].view(dtypes.STORAGE[out.dtype])
    return compare(name, out, actual, expected, prep.out_start[name], case)


@pytest.mark.parametrize("case", ir_files.CASES, ids=lambda c: c.id)
def test_ir_case_on_host_simt(case):
    plugin = _vendor(case.id)
    if plugin is not None and importlib.util.find_spec(plugin) is None:
        pytest.skip(f"{plugin} is not installed: its layouts are not registered")
    warp_size = case.kernel.warp_size
    problem = _run(case, warp_size)
    assert problem is None, problem


def _exchange_cases():
    return [c for c in ir_files.CASES if "/" in c.id and "convert-" in c.id and "-via-" not in c.id]


def _run_converting(case, seed: int, flags: dict, rule):
    """Run an IR convert case on the host SIMT emulator with target ``flags`` and the
    ``ttg.convert_layout`` scratch ``rule``; check the copy; return the finalized module's data
    conversion (the one of the loaded tensor)."""
    plugin = _vendor(case.id)
    if plugin is not None and importlib.util.find_spec(plugin) is None:
        pytest.skip(f"{plugin} is not installed: its layouts are not registered")
    module = parse_module(case.kernel.text(case.kernel.warp_size))
    prep = prepare(case, case_seed(seed, case.id))
    args = [prep.host[n] for n in case.kernel.arg_names]
    assert simt.run_ttgir(module, args, target_flags=flags, scratch_rules={"ttg.convert_layout": rule}) == 0
    (name, out), = case.outputs.items()
    inputs = {k: v for k, v in prep.ref_args.items() if k not in case.outputs}
    actual = prep.host[name].view(dtypes.STORAGE[out.dtype])
    problem = compare(name, out, actual, case.reference(**inputs), prep.out_start[name], case)
    assert problem is None, problem
    return next(op for op in module.walk()
                if op.name == "ttg.convert_layout" and getattr(op.operands[0].owner, "name", "") == "tt.load")


@pytest.mark.parametrize("case", _exchange_cases(), ids=lambda c: c.id)
def test_conversion_by_lane_exchanges(case, monkeypatch):
    """On a target that exchanges lanes (``TargetInfo.warp_exchange``, AMD's), a conversion whose
    elements stay in their warp moves by ``shuffle_xor`` alone, with no scratch (the
    ``convert_scratch_in_warp`` rule); the others still go through shared memory.  Every convert
    case runs both ways and must give the same (exact) copy."""
    from tritium.conversion.ttgir_to_llvm import convert_layout as cl
    from tritium.ttgir.register_plans import warp_exchange_plan
    from tritium.ttgir.scratch import convert_scratch_in_warp
    used = []
    real = cl.exchange_in_warp
    monkeypatch.setattr(cl, "exchange_in_warp", lambda fl, regs, moves: used.append(moves) or real(fl, regs, moves))
    cvt = _run_converting(case, 3, {"warp_exchange": True}, convert_scratch_in_warp)
    src_t, dst_t = cvt.operands[0].type, cvt.results[0].type
    plan = warp_exchange_plan(layouts.linear_layout(src_t.encoding, src_t.get_shape()),
                              layouts.linear_layout(dst_t.encoding, dst_t.get_shape()))
    if "amd_wmmat-to-amd_wmma_a" in case.id:
        assert plan is not None    # the point of the transposed WMMA accumulator
    if plan is not None:
        assert used, "an exchangeable conversion went through shared memory"
        assert "allocation.offset" not in str(cvt.attributes)


@pytest.mark.parametrize("case", _exchange_cases(), ids=lambda c: c.id)
def test_conversion_by_word_fetches(case, monkeypatch):
    """On a target that gathers (``TargetInfo.warp_gather``, NVIDIA's), a conversion of 8- or
    16-bit elements into a matrix operand that stays in its warp fetches packed words across lanes
    (``shuffle_idx``) with no scratch (the ``convert_scratch_gathering`` rule): fp8 attention's P
    into wgmma's A registers, each result word one byte permute of two fetched words (the
    emulator's ``prmt``).  Every convert case runs and must give the same (exact) copy."""
    from tritium.conversion.ttgir_to_llvm import convert_layout as cl
    from tritium.ttgir.scratch import convert_scratch_gathering, gather_plan
    used, permuted = [], []
    real, real_words = cl.gather_in_warp, cl._permuted_words
    monkeypatch.setattr(cl, "gather_in_warp", lambda fl, regs, plan, bits: used.append(plan) or
                        real(fl, regs, plan, bits))
    monkeypatch.setattr(cl, "_permuted_words", lambda *a: (lambda w: permuted.append(w is not None) or w)(
        real_words(*a)))
    cvt = _run_converting(case, 4, {"warp_gather": True}, convert_scratch_gathering)
    expect = gather_plan(cvt.operands[0].type, cvt.results[0].type) is not None
    if "nvidia_mma3-to-nvidia_dot_a3_k4" in case.id:
        assert expect and permuted == [True]   # the point of the gather: one byte permute a word
    assert bool(used) == expect
    if expect:
        assert "allocation.offset" not in str(cvt.attributes)


@pytest.mark.parametrize("case", [c for c in _exchange_cases() if "nvidia_mma3-to-nvidia_dot_a3_k4" in c.id],
                         ids=lambda c: c.id)
def test_word_fetch_rounds_without_byte_permute(case, monkeypatch):
    """The rounds of fp8 P into wgmma's A registers on a target without ``byte_permute``: each
    element from the fetched word its lane bits choose, at its slot (the per-element path); the
    copy is exact."""
    from tritium.conversion.ttgir_to_llvm import convert_layout as cl
    from tritium.ttgir.scratch import convert_scratch_gathering
    used = []
    real = cl.gather_in_warp
    monkeypatch.setattr(cl, "gather_in_warp", lambda fl, regs, plan, bits: used.append(plan) or
                        real(fl, regs, plan, bits))
    _run_converting(case, 5, {"warp_gather": True, "byte_permute": lambda b, x, y, s: None},
                    convert_scratch_gathering)
    assert used and any(len(set(fs)) > 1 for plan in used for fs, _ in plan.picks)


def test_packed_words_from_paired_bytes():
    """``_pack_word``: four bytes cut from two 16-bit values (low byte, high byte, as a paired
    fp8 conversion gives them) travel as a 2 x i16 vector of those values -- no shifts or masks
    in the IR -- and every packing (those, unrelated bytes, 16-bit halves) gives the same word as
    plain arithmetic, compiled for the host and run on random values."""
    import ctypes
    import llvmlite.binding as llvm
    import llvmlite.ir as ir
    from tritium.conversion.ttgir_to_llvm.convert_layout import _pack_word
    i8, i16, i32 = ir.IntType(8), ir.IntType(16), ir.IntType(32)
    m = ir.Module(name="pack")
    m.triple = llvm.get_process_triple()
    bodies = {}
    for name in ("pairs", "bytes", "halves"):
        fn = ir.Function(m, ir.FunctionType(i32, [i16, i16, i8, i8]), name)
        b = ir.IRBuilder(fn.append_basic_block())
        x, y, p, q = fn.args
        if name == "pairs":
            cut = [b.trunc(v, i8) if k == 0 else b.trunc(b.lshr(v, ir.Constant(i16, 8)), i8)
                   for v in (x, y) for k in (0, 1)]
            b.ret(_pack_word(b, cut, 8))
        elif name == "bytes":
            b.ret(_pack_word(b, [p, b.trunc(x, i8), q, b.trunc(y, i8)], 8))
        else:
            b.ret(_pack_word(b, [x, y], 16))
        bodies[name] = str(fn)
    assert "shl" not in bodies["pairs"] and "lshr" not in bodies["pairs"].split("insertelement")[-1]
    assert "<2 x i16>" in bodies["pairs"] and "<2 x i16>" in bodies["halves"]
    engine = simt.host_engine(m)
    sig = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint16, ctypes.c_uint16, ctypes.c_uint8, ctypes.c_uint8)
    run = {n: sig(engine.get_function_address(n)) for n in bodies}
    rng = np.random.default_rng(11)
    for x, y, p, q in rng.integers(0, [1 << 16, 1 << 16, 256, 256], size=(200, 4)).tolist():
        assert run["pairs"](x, y, p, q) == x | y << 16
        assert run["halves"](x, y, p, q) == x | y << 16
        assert run["bytes"](x, y, p, q) == p | (x & 0xFF) << 8 | q << 16 | (y & 0xFF) << 24


def test_gather_plan_is_exact():
    """The word-fetch plan of the 8-bit wgmma accumulator -> A registers conversion: simulated lane
    by lane (each lane packs what the fetch has it send, reads the word of the lane the fetch
    names, picks its slot), every register of every lane gets the element the result layout gives
    it; one fetch a 32-bit A register (rounds: each a permutation of the lanes, a sender packing
    the four bytes its one reader needs), where plain fetches need two (its halves come from two
    lanes, each read by two lanes wanting different bytes)."""
    pytest.importorskip("tritium_nvidia")
    from tritium.ttgir import register_plans as rp
    from tritium_nvidia.passes.encodings import NvidiaMmaEncodingAttr
    from tritium.ttgir.encodings import DotOperandEncodingAttr
    for warps, shape, n in (((4, 1), (64, 64), 64), ((4, 1), (128, 128), 128), ((8, 1), (128, 64), 64)):
        enc = NvidiaMmaEncodingAttr(3, warps, (16, n, 32))
        acc = enc.linear_layout(shape)
        a = DotOperandEncodingAttr(0, enc, 4).linear_layout(shape)
        plain, rounds = rp._gather_plan(acc, a, 4), rp._round_plan(acc, a, 4)
        assert rp.warp_gather_plan(acc, a, 8) is rounds
        src, dst = acc.table(), a.table()
        for plan in (plain, rounds):
            assert plan is not None and len(plan.picks) == a.num_registers
            for lane in range(32):
                for r, (fs, slots) in enumerate(plan.picks):
                    g = plan.fetches[fs[lane]]
                    sender = g.lane[lane]
                    assert (src[:, sender, g.regs_of(sender)[slots[lane]]] == dst[:, lane, r]).all()
        assert len(plain.fetches) == a.num_registers // 4 * 2
        assert len(rounds.fetches) == a.num_registers // 4
        for g in rounds.fetches:
            assert sorted(g.lane) == list(range(32))        # a permutation: one reader a sender
            assert len(g.words) <= 2 and rp.deciding_bits(g.sent or (0,) * 32) is not None


def test_every_word_fetch_plan_is_exact():
    """Both word-fetch plans (plain fetches and rounds), for every pair of a spread of layouts
    whose warps hold the same elements (mma.sync and wgmma accumulators, their operands of
    kWidth 2/4/8, blocked layouts), 8- and 16-bit elements: simulated lane by lane, every result
    register of every lane gets the element the result layout gives it; every round is a
    permutation of the lanes, and what a sender sends and where a lane reads each register are
    chosen by at most two lane bits (what the lowering's selects can build)."""
    pytest.importorskip("tritium_nvidia")
    from tritium.ttgir import register_plans as rp
    from tritium.ttgir.encodings import BlockedEncodingAttr, DotOperandEncodingAttr
    from tritium_nvidia.passes.encodings import NvidiaMmaEncodingAttr
    shape = (64, 64)
    encs = [NvidiaMmaEncodingAttr(2, (4, 1), (16, 8)), NvidiaMmaEncodingAttr(2, (2, 2), (16, 8)),
            NvidiaMmaEncodingAttr(3, (4, 1), (16, 64, 16)), NvidiaMmaEncodingAttr(3, (4, 1), (16, 32, 32))]
    layouts = []
    for enc in encs:
        layouts.append(enc.linear_layout(shape))
        for kw in (2, 4, 8):
            layouts.append(DotOperandEncodingAttr(0, enc, kw).linear_layout(shape))
            if enc.version == 2:
                layouts.append(DotOperandEncodingAttr(1, enc, kw).linear_layout(shape))
    for spt, tpw, wpc in (([1, 8], [4, 8], [4, 1]), ([4, 4], [8, 4], [4, 1]), ([1, 4], [8, 4], [2, 2]),
                          ([2, 2], [16, 2], [4, 1])):
        layouts.append(BlockedEncodingAttr(spt, tpw, wpc, [1, 0]).linear_layout(shape))
    checked = {"plain": 0, "rounds": 0}
    for src in layouts:
        for dst in layouts:
            if src == dst or src.warp != dst.warp:
                continue
            s_tab, d_tab = src.table(), dst.table()
            for per_word in (2, 4):
                for kind, plan in (("plain", rp._gather_plan(src, dst, per_word)),
                                   ("rounds", rp._round_plan(src, dst, per_word))):
                    if plan is None:
                        continue
                    checked[kind] += 1
                    assert len(plan.picks) == dst.num_registers
                    for g in plan.fetches:
                        assert len(g.words) == 1 or sorted(g.lane) == list(range(32))
                        assert all(len(w) <= per_word for w in g.words)
                        assert rp.deciding_bits(g.sent or (0,) * 32) is not None
                    for r, (fs, slots) in enumerate(plan.picks):
                        assert rp.deciding_bits(fs) is not None
                        for lane in range(32):
                            g = plan.fetches[fs[lane]]
                            sender = g.lane[lane]
                            assert (s_tab[:, sender, g.regs_of(sender)[slots[lane]]] == d_tab[:, lane, r]).all()
    assert checked["plain"] > 20 and checked["rounds"] > 20, checked


def test_lane_exchange_plan_is_exact():
    """The plan of attention's P conversion (transposed WMMA accumulator -> A operand): every
    register of every lane gets exactly the element the result layout gives it; the untransposed
    accumulator has no such plan (each lane would need a whole column's lanes)."""
    pytest.importorskip("tritium_amd")
    from tritium_amd.passes.encodings import AMDWmmaEncodingAttr
    from tritium.ttgir.encodings import DotOperandEncodingAttr
    from tritium.ttgir.register_plans import warp_exchange_plan
    for warps, shape in (([4, 1], (128, 64)), ([2, 1], (64, 128)), ([8, 1], (128, 32))):
        acc = AMDWmmaEncodingAttr(1, warps, True).linear_layout(shape)
        a = DotOperandEncodingAttr(0, AMDWmmaEncodingAttr(1, warps, True), 16).linear_layout(shape)
        moves = warp_exchange_plan(acc, a)
        assert moves is not None and len(moves) == a.num_registers
        src, dst = acc.table(), a.table()
        for lane in range(32):
            for r, m in enumerate(moves):
                peer = lane if m.bit < 0 or (lane >> m.bit) & 1 == m.keep else lane ^ (1 << m.bit)
                assert (src[:, peer, m.reg] == dst[:, lane, r]).all()
        assert all(m.bit == 4 for m in moves)    # every register: one half of the wavefront, read by both
        plain = AMDWmmaEncodingAttr(1, warps, False).linear_layout(shape)
        assert warp_exchange_plan(plain, a) is None


@pytest.mark.parametrize("case_id", [
    "ir_files/convert-blocked-to-blocked_t-64x64-fp16",          # chunk fixed by the registers
    "ir_files/convert-blocked_t-to-blocked_row-32x128-fp32",     # warps along rows: chunk tested per element
    "ir_files/convert-linear_swizzled-to-blocked_t-64x64-fp16",
    "ir_files/convert-blocked-to-blocked_t-via-swizzled-64x64-fp16",
])
def test_conversion_in_row_slices(case_id, monkeypatch):
    """A conversion larger than the scratch limit moves dimension 0 in slices; with a tiny limit
    every case above goes through 4 to 64 slices, some fixed per register, some tested at run time."""
    monkeypatch.setattr(layouts, "CONVERT_SCRATCH_LIMIT", 1024)
    case = {c.id: c for c in ir_files.CASES}[case_id]
    problem = _run(case, 32, seed=1)
    assert problem is None, problem


def test_emulation_catches_a_wrong_mapping(monkeypatch):
    """The check is not vacuous: without separable-reductions the lowering folds lanes whose bases
    mix rows and columns as if they only moved along the axis, and the sums come out wrong."""
    from tritium.ttgir.passes.separable_reductions import SeparableReductions
    monkeypatch.setattr(SeparableReductions, "run", lambda self, module: None)
    case = {c.id: c for c in ir_files.CASES}["ir_files/reduce-sum-linear_swizzled-axis1-64x64-fp32"]
    assert "elements differ" in (_run(case, 32) or "")


_TILE_CASES = [c for c in ir_files.CASES if "convert-nvidia_mma" in c.id and "-via-" not in c.id]


def _count_tile_stores(monkeypatch) -> list:
    calls = []
    real = simt.HostSIMTTarget.store_matrices

    def counted(self, b, row_ptr, words):
        calls.append(len(words))
        return real(self, b, row_ptr, words)
    monkeypatch.setattr(simt.HostSIMTTarget, "store_matrices", counted)
    return calls


@pytest.mark.parametrize("case", _TILE_CASES, ids=lambda c: c.id)
def test_accumulator_conversion_with_tile_stores(case, monkeypatch):
    """On a target with an 8x8 tile store, a 16-bit tensor-core accumulator is written tile by
    tile (four tiles a store where the registers allow); other element widths keep element stores."""
    calls = _count_tile_stores(monkeypatch)
    problem = _run(case, 32, stores_matrices=True)
    assert problem is None, problem
    # 16 rows over 4 warps of 16-row tiles: warps hold copies, which element stores deduplicate
    copies = case.id.endswith("nvidia_mma3-to-blocked_t-16x64-fp16")
    sixteen_bit = case.id.endswith(("fp16", "bf16")) and not copies
    assert bool(calls) == sixteen_bit, calls
    if sixteen_bit:
        assert set(calls) == {4}, calls


@pytest.mark.parametrize("case_id,warps", [
    ("ir_files/nvidia-convert-nvidia_mma3_n128-to-blocked_v8-128x128-bf16", "[8, 1]"),
    ("ir_files/nvidia-convert-nvidia_mma3_n128-to-blocked_v8-64x256-fp16", "[4, 2]"),
    ("ir_files/nvidia-convert-nvidia_mma3-to-blocked_v8-64x64-fp16", "[4, 2]"),
    ("ir_files/nvidia-convert-nvidia_mma2-to-blocked_v8-32x64-bf16", "[2, 4]"),
])
def test_tile_stores_with_eight_warps(case_id, warps, monkeypatch):
    """Eight warps, the accumulator's warps along rows or along both dimensions (the warp bases
    enter each lane's tile-row address)."""
    def edit(text):
        text = text.replace('"ttg.num-warps" = 4', '"ttg.num-warps" = 8')
        text = text.replace("warpsPerCTA = [4, 1], instrShape", f"warpsPerCTA = {warps}, instrShape")
        text = text.replace("warpsPerCTA = [2, 2], instrShape", f"warpsPerCTA = {warps}, instrShape")
        return text.replace("warpsPerCTA = [4, 1], order", "warpsPerCTA = [8, 1], order")
    calls = _count_tile_stores(monkeypatch)
    case = {c.id: c for c in ir_files.CASES}[case_id]
    assert '"ttg.num-warps" = 8' in edit(case.kernel.text(32))
    problem = _run(case, 32, stores_matrices=True, edit=edit)
    assert problem is None, problem
    assert calls, "no tile store was used"


def test_tile_store_emulation_catches_a_wrong_tile(monkeypatch):
    """The check is not vacuous: storing the tiles of a group in the wrong order is caught."""
    real = simt.HostSIMTTarget.store_matrices
    monkeypatch.setattr(simt.HostSIMTTarget, "store_matrices",
                        lambda self, b, row_ptr, words: real(self, b, row_ptr, words[::-1]))
    case = {c.id: c for c in ir_files.CASES}["ir_files/nvidia-convert-nvidia_mma3-to-blocked_v8-64x64-fp16"]
    assert "elements differ" in (_run(case, 32, stores_matrices=True) or "")
