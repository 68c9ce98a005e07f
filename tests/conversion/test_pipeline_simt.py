"""The ``pipeline`` pass's ``registers`` schedule (Triton's stream pipeliner: loads of iteration
``i + 1`` into registers before the dot of iteration ``i``, stored into the operand buffer after
it), run for real on the CPU with the host SIMT target of :mod:`simt`: a K loop of FMA dots whose
operands the pass moves into explicit shared buffers, checked against numpy for trip counts of
0, 1, 3, and a ragged last tile (masked loads with ``other``)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import simt  # noqa: E402

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.hooks.types import GPUTarget, Options  # noqa: E402
from tritium.ttgir.encodings import DotOperandEncodingAttr, SwizzledSharedEncodingAttr  # noqa: E402
from tritium.ttgir.ir import print_module  # noqa: E402
from tritium.ttgir.passes.software_pipeline import Pipeline  # noqa: E402
from tritium.ttgir.pass_lists import make_ttgir  # noqa: E402
from tritium.ttir.ir import parse_module  # noqa: E402

BM, BN, BK = 16, 16, 16


@tritium.jit
def k_loop(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * BN + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * BN
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)


def _operand_buffer(convert):
    if not isinstance(convert.result.type.encoding, DotOperandEncodingAttr):
        return None
    return SwizzledSharedEncodingAttr(1, 1, 1, convert.src.type.encoding.order)


def _pipelined_module(stages=2, operand_buffer=_operand_buffer):
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "K": "i32"}
    ttir = tritium.compile(k_loop, signature=sig, constexprs={"BM": BM, "BN": BN, "BK": BK}, target="interpreter",
                           stage="ttir").asm["ttir"]
    options = Options(num_warps=2, threads_per_warp=32)
    module = make_ttgir(parse_module(ttir), GPUTarget("cuda", 80, 32), options)
    p = Pipeline(stages, copy="registers", operand_buffer=operand_buffer)
    p.run(module)
    assert not p.skipped
    return module


def test_registers_schedule_shape():
    text = print_module(_pipelined_module())
    loop = text[text.index("scf.for"):]
    body = loop[:loop.index("scf.yield")]
    # iteration 0 before the loop; in the loop the next loads, then the dot, then the stores
    assert text.index("ttg.local_store") < text.index("scf.for")
    assert body.index("tt.load") < body.index("ttg.local_load") < body.index("tt.dot") < body.index("ttg.local_store")
    assert body.count("tt.load") == 2 and body.count("ttg.local_store") == 2 and "ttg.convert_layout" not in body


def test_registers_schedule_three_stages_shape():
    text = print_module(_pipelined_module(3))
    loop = text[text.index("scf.for"):]
    head, body = loop[:loop.index("\n")], loop[:loop.index("scf.yield")]
    # iterations 0 and 1 loaded and stored before the loop; two slots; the loop carries the
    # addresses of i + 2 and the slot it reads, no tile: the tiles it loads are stored into the
    # slot it read, after the dot
    assert text[:text.index("scf.for")].count("tt.load") == 4
    assert text[:text.index("scf.for")].count("ttg.local_store") == 4
    assert "memdesc<2x16x16xf32" in text and body.count("ttg.memdesc_index") == 2
    assert head.count("tensor<16x16xf32") == 1  # the accumulator alone
    assert body.index("tt.load") < body.index("ttg.local_load") < body.index("tt.dot") < body.index("ttg.local_store")
    read = {ln.split("ttg.local_load ")[1].split()[0] for ln in body.splitlines() if "ttg.local_load" in ln}
    written = {ln.split("ttg.local_store ")[1].split()[1] for ln in body.splitlines() if "ttg.local_store" in ln}
    assert len(read) == 2 and written == read


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("K", [0, 16, 40, 48, 80])
def test_registers_schedule_computes_the_loop(K, stages):
    rng = np.random.default_rng(K)
    a = rng.standard_normal((BM, max(K, 1))).astype(np.float32)
    b = rng.standard_normal((max(K, 1), BN)).astype(np.float32)
    c = np.full((BM, BN), np.nan, np.float32)
    assert simt.run_ttgir(_pipelined_module(stages), [a, b, c, K]) == 0
    want = a[:, :K].astype(np.float64) @ b[:K].astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


def _swizzled_buffer(convert):
    if not isinstance(convert.result.type.encoding, DotOperandEncodingAttr):
        return None
    return SwizzledSharedEncodingAttr(2, 1, 4, convert.src.type.encoding.order)


#: the lowering choices AMD's target makes (``TargetInfo.shared_writes_by_base``,
#: ``masks_by_constancy``): writes grouped by base register, one compare per constancy block
_AMD_CHOICES = {"shared_writes_by_base": True, "masks_by_constancy": True}


def _lowered(stages, flags):
    from tritium.conversion.ttgir_to_llvm import lower_to_llvm
    from tritium.ttgir.pass_lists import finalize_ttgir
    module = _pipelined_module(stages, _swizzled_buffer)
    finalize_ttgir(module, None, {})
    target = simt.HostSIMTTarget(2, 32)
    for name, value in flags.items():
        setattr(target, name, value)
    return lower_to_llvm(module, target)[0]


def test_amd_lowering_choices_apply_to_the_loop():
    # a thread holds rows r, r + 4, r + 8, r + 12 of A, whose mask bounds the columns alone: with
    # masks_by_constancy its four loads share one predicate
    plain, chosen = _lowered(2, {}), _lowered(2, _AMD_CHOICES)
    preds = lambda t: {ln.split("br i1 ")[1].split(",")[0] for ln in t.splitlines() if "br i1 " in ln}  # noqa: E731
    assert len(preds(chosen)) < len(preds(plain))


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("K", [0, 40, 80])
def test_amd_lowering_choices_compute_the_loop(K, stages):
    rng = np.random.default_rng(K)
    a = rng.standard_normal((BM, max(K, 1))).astype(np.float32)
    b = rng.standard_normal((max(K, 1), BN)).astype(np.float32)
    c = np.full((BM, BN), np.nan, np.float32)
    module = _pipelined_module(stages, _swizzled_buffer)
    assert simt.run_ttgir(module, [a, b, c, K], target_flags=_AMD_CHOICES) == 0
    want = a[:, :K].astype(np.float64) @ b[:K].astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


@tritium.jit
def two_dot_loop(q_ptr, k_ptr, v_ptr, o_ptr, N, BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr):
    # attention's shape without the softmax: S = Q K^T, O += relu(S) V; V is loaded after the
    # first dot, where the pipeline keeps the next iteration's V load
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, BD)
    q = tl.load(q_ptr + rm[:, None] * BD + rd[None, :])
    acc = tl.zeros((BM, BD), dtype=tl.float32)
    for start in range(0, N, BN):
        kt = tl.load(k_ptr + rd[:, None] + (start + rn)[None, :] * BD, mask=(start + rn)[None, :] < N, other=0.0)
        s = tl.maximum(tl.dot(q, kt), 0.0)
        v = tl.load(v_ptr + (start + rn)[:, None] * BD + rd[None, :], mask=(start + rn)[:, None] < N, other=0.0)
        acc = tl.dot(s, v, acc)
    tl.store(o_ptr + rm[:, None] * BD + rd[None, :], acc)


def _two_dot_module(stages):
    sig = {"q_ptr": "*fp32", "k_ptr": "*fp32", "v_ptr": "*fp32", "o_ptr": "*fp32", "N": "i32"}
    ttir = tritium.compile(two_dot_loop, signature=sig, constexprs={"BM": BM, "BN": BN, "BD": BK},
                           target="interpreter", stage="ttir").asm["ttir"]
    module = make_ttgir(parse_module(ttir), GPUTarget("cuda", 80, 32), Options(num_warps=2, threads_per_warp=32))
    p = Pipeline(stages, copy="registers", operand_buffer=_operand_buffer)
    p.run(module)
    assert not p.skipped
    return module


def test_registers_schedule_keeps_each_load_where_the_body_had_it():
    # Triton's stream pipeliner's placement: the next K tile is loaded before the first dot, the
    # next V tile after it (not held in registers across the first dot and what follows it)
    text = print_module(_two_dot_module(2))
    body = text[text.index("scf.for"):]
    body = body[:body.index("scf.yield")]
    loads = [i for i in range(len(body)) if body.startswith("tt.load", i)]
    dots = [i for i in range(len(body)) if body.startswith("tt.dot", i)]
    assert len(loads) == 2 and len(dots) == 2
    assert loads[0] < dots[0] < loads[1] < dots[1] < body.index("ttg.local_store")


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("N", [0, 16, 40, 64])
def test_registers_schedule_computes_two_dots(N, stages):
    rng = np.random.default_rng(N + 7)
    q = rng.standard_normal((BM, BK)).astype(np.float32)
    k = rng.standard_normal((max(N, 1), BK)).astype(np.float32)
    v = rng.standard_normal((max(N, 1), BK)).astype(np.float32)
    o = np.full((BM, BK), np.nan, np.float32)
    assert simt.run_ttgir(_two_dot_module(stages), [q, k, v, o, N]) == 0
    s = np.maximum(q.astype(np.float64) @ k[:N].astype(np.float64).T, 0.0)
    np.testing.assert_allclose(o, s @ v[:N].astype(np.float64), rtol=1e-5, atol=1e-5)
