"""``decompose-scaled-dot`` computes what ``tt.dot_scaled`` means: a kernel's TTIR with the op and
the same TTIR after the pass give identical results on the interpreter (which runs the op exactly
and the decomposed form op by op, bf16 rounding included).  Also: which ops it leaves, that
convert-to-ttgir gives its decode ops layouts, and that a backend declaring native support keeps
the op."""
from __future__ import annotations

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.backends.interpreter import plugin
from tritium.hooks.types import GPUTarget, Options
from tritium.ttgir.passes.convert_to_ttgir import convert_to_ttgir
from tritium.ttgir.passes.decompose_scaled_dot import FROM_DOT_SCALED, decompose_scaled_dot
from tritium.ttgir.pass_lists import ttgir_passes
from tritium.ttir.ir import parse_module, print_module


@tritium.jit
def _kernel(a_ptr, as_ptr, b_ptr, bs_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
            FA: tl.constexpr, FB: tl.constexpr, SA: tl.constexpr, SB: tl.constexpr, FAST: tl.constexpr,
            A_K_PACK: tl.constexpr):
    AM: tl.constexpr = M if A_K_PACK else M // 2
    AK: tl.constexpr = K // 2 if FA == "e2m1" and A_K_PACK else K
    BK: tl.constexpr = K // 2 if FB == "e2m1" else K
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    a = tl.load(a_ptr + tl.arange(0, AM)[:, None] * AK + tl.arange(0, AK)[None, :])
    b = tl.load(b_ptr + tl.arange(0, BK)[:, None] * N + rn[None, :])
    sa = tl.load(as_ptr + rm[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :]) if SA else None
    sb = tl.load(bs_ptr + rn[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :]) if SB else None
    z = tl.dot_scaled(a, sa, FA, b, sb, FB, fast_math=FAST, lhs_k_pack=A_K_PACK)
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], z)


def _operand(fmt, shape, rng):
    if fmt == "bf16":
        return (rng.uniform(-4, 4, shape).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    if fmt == "fp16":
        return rng.uniform(-4, 4, shape).astype(np.float16)
    v = rng.integers(0, 256, shape).astype(np.uint8)
    if fmt == "e4m3":  # no NaN codes
        v = np.where((v & 0x7F) == 0x7F, v ^ 1, v).astype(np.uint8)
    if fmt == "e5m2":  # small exponents: in range for the fp16 compute type too
        v = (v & 0x83) | (rng.integers(0, 20, shape).astype(np.uint8) << 2)
    return v


_SIG = {"bf16": "*bf16", "fp16": "*fp16"}


def _run_both(fa, fb, sa, sb, fast=False, a_k_pack=True, m=32, n=32, k=64, nan=False):
    rng = np.random.default_rng(7)
    a_shape = (m, k // 2 if fa == "e2m1" else k) if a_k_pack else (m // 2, k)
    a, b = _operand(fa, a_shape, rng), _operand(fb, (k // 2 if fb == "e2m1" else k, n), rng)
    lo, hi = (123, 131) if "fp16" in (fa, fb) else (100, 150)
    s_a, s_b = rng.integers(lo, hi, (m, k // 32)).astype(np.uint8), rng.integers(lo, hi, (n, k // 32)).astype(np.uint8)
    if nan:
        s_a[1, 0] = s_b[2, 1] = 0xFF
    const = dict(M=m, N=n, K=k, FA=fa, FB=fb, SA=sa, SB=sb, FAST=fast, A_K_PACK=a_k_pack)
    sig = {"a_ptr": _SIG.get(fa, "*u8"), "as_ptr": "*u8", "b_ptr": _SIG.get(fb, "*u8"), "bs_ptr": "*u8", "z_ptr": "*fp32"}
    ttir = tritium.compile(_kernel, target="interpreter", signature=sig, constexprs=const, stage="ttir").asm["ttir"]
    module = parse_module(ttir)
    decompose_scaled_dot(module)
    decomposed = print_module(module)
    assert "tt.dot_scaled" in ttir and "tt.dot_scaled" not in decomposed
    driver = plugin.tritium_driver(backend="interpreter")
    outs = []
    for text in (ttir, decomposed):
        z = np.zeros((m, n), np.float32)
        driver.make_launcher(driver.load_binary("", text, {}, 0), {}, {})((1, 1, 1), None, [a, s_a, b, s_b, z])
        outs.append(z)
    return outs, decomposed


@pytest.mark.parametrize("fa, fb, sa, sb", [
    ("e2m1", "e4m3", True, False), ("e4m3", "e2m1", False, True), ("e5m2", "bf16", True, True),
    ("e2m1", "e2m1", True, True), ("fp16", "e2m1", False, True), ("e5m2", "fp16", True, False),
    ("bf16", "e5m2", False, False),
])
def test_decomposition_matches_the_op(fa, fb, sa, sb):
    (op, decomposed), _ = _run_both(fa, fb, sa, sb, nan=sa or sb)
    assert np.isnan(op).any() == (sa or sb)  # a 0xFF scale turns its block's products into NaN
    assert np.array_equal(op, decomposed, equal_nan=True)


def test_e2m1_packed_along_m_and_fast_math():
    (op, decomposed), text = _run_both("e2m1", "e4m3", True, True, fast=True, a_k_pack=False)
    assert np.array_equal(op, decomposed)
    assert "ttg.e8m0_to_fp" in text and "fastMath = true" in text


def test_decomposed_form_is_an_upcast_a_scale_and_an_ordinary_dot():
    _, text = _run_both("e2m1", "e4m3", True, False)
    dot = next(line for line in text.splitlines() if "tt.dot " in line)
    assert FROM_DOT_SCALED in dot and "xbf16>" in dot and "-> tensor<32x32xf32>" in dot
    for op in ("ttg.e2m1_to_fp", "tt.join", "tt.reshape", "tt.fp_to_fp", "ttg.e8m0_to_fp", "tt.broadcast", "arith.mulf"):
        assert op in text, op


def test_convert_to_ttgir_gives_the_decode_ops_layouts():
    sig = {"a_ptr": "*u8", "as_ptr": "*u8", "b_ptr": "*u8", "bs_ptr": "*u8", "z_ptr": "*fp32"}
    const = dict(M=32, N=32, K=64, FA="e2m1", FB="e2m1", SA=True, SB=True, FAST=False, A_K_PACK=True)
    module = parse_module(tritium.compile(_kernel, target="interpreter", signature=sig, constexprs=const,
                                          stage="ttir").asm["ttir"])
    convert_to_ttgir(decompose_scaled_dot(module), 4, 32, 1, "cuda:90")
    module.verify()
    for op in module.walk():
        if op.name in ("ttg.e2m1_to_fp", "ttg.e8m0_to_fp"):
            assert "#ttg.blocked" in str(op.results[0].type)


def test_a_backend_with_native_support_keeps_the_op():
    target = GPUTarget("cuda", 90, 32)
    names = [p.name for p in ttgir_passes(target, Options())]
    assert names[0] == "decompose-scaled-dot"
    assert "decompose-scaled-dot" not in [p.name for p in ttgir_passes(target, Options(native_dot_scaled=True))]
