"""CPU-only: ``tl.dot_scaled`` on sm_90 (no native microscaled instructions) is decomposed into an
upcast and an ordinary dot that runs on mma.sync with bf16 operands, as Triton's does and as its
tests check in the PTX (with vectorised global loads and stores), for every format pair those
tests use, both operand major orders and the tile sizes wgmma would otherwise take."""
import re

import numpy as np
import pytest

import tritium
import tritium.language as tl


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))


@tritium.jit
def _scaled(a_base, a_s0, a_s1, a_scale, b_base, b_s0, b_s1, out, BM: tl.constexpr, BN: tl.constexpr,
            BK: tl.constexpr, FA: tl.constexpr, FB: tl.constexpr):
    PACK: tl.constexpr = 2 if FA == "e2m1" else 1
    a = tl.load(a_base + tl.arange(0, BM)[:, None] * a_s0 + tl.arange(0, BK // PACK)[None, :] * a_s1)
    b = tl.load(b_base + tl.arange(0, BK)[:, None] * b_s0 + tl.arange(0, BN)[None, :] * b_s1)
    s = tl.load(a_scale + tl.arange(0, BM)[:, None] * (BK // 32) + tl.arange(0, BK // 32)[None, :])
    c = tl.dot_scaled(a, s, FA, b, None, FB)
    tl.store(out + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], c.to(tl.bfloat16))


def _compile(m, n, k, fa, fb, col_a, col_b):
    pack = 2 if fa == "e2m1" else 1
    a = np.zeros((k // pack, m), np.uint8).T if col_a else np.zeros((m, k // pack), np.uint8)
    bdt = np.uint16 if fb == "bf16" else np.uint8
    b = np.zeros((n, k), bdt).T if col_b else np.zeros((k, n), bdt)
    strides = lambda x: [s // x.itemsize for s in x.strides]  # noqa: E731
    bb = tritium.reinterpret(b, tl.bfloat16) if fb == "bf16" else b
    return _scaled.warmup(a, *strides(a), np.zeros((m, k // 32), np.uint8), bb, *strides(b),
                          tritium.reinterpret(np.zeros((m, n), np.uint16), tl.bfloat16), m, n, k, fa, fb,
                          grid=(1,), backend="nvidia", target="cuda:90", num_warps=4)


_SHAPES = [(64, 64, 64, False, False), (128, 64, 128, True, False), (32, 128, 64, False, True)]
_PAIRS = [(a, b) for a in ("e2m1", "e4m3", "e5m2") for b in ("e4m3", "e5m2", "bf16")]


@pytest.mark.parametrize("fa, fb, m, n, k, col_a, col_b", [(*p, *_SHAPES[i % 3]) for i, p in enumerate(_PAIRS)])
def test_decomposed_to_mma_sync_bf16(fa, fb, m, n, k, col_a, col_b):
    ck = _compile(m, n, k, fa, fb, col_a, col_b)
    ttgir, ptx = ck.asm["ttgir"], ck.asm["ptx"]
    assert "tt.dot_scaled" not in ttgir and "ttng.warp_group_dot" not in ttgir
    dot = next(line for line in ttgir.splitlines() if " tt.dot " in line)
    assert "tritium.from_dot_scaled" in dot and "versionMajor = 2" in dot
    assert re.search(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32", ptx)
    assert "ld.global.v4" in ptx and "st.global.v4" in ptx


def test_fp16_format_computes_in_fp16():
    @tritium.jit
    def k(a_ptr, b_ptr, s_ptr, z_ptr):
        r = tl.arange(0, 64)
        a = tl.load(a_ptr + r[:, None] * 64 + r[None, :])
        b = tl.load(b_ptr + tl.arange(0, 32)[:, None] * 64 + r[None, :])
        s = tl.load(s_ptr + r[:, None] * 2 + tl.arange(0, 2)[None, :])
        tl.store(z_ptr + r[:, None] * 64 + r[None, :], tl.dot_scaled(a, None, "fp16", b, s, "e2m1"))

    ck = tritium.compile(k, target="cuda:90", signature={"a_ptr": "*fp16", "b_ptr": "*u8", "s_ptr": "*u8",
                                                          "z_ptr": "*fp32"})
    assert "ttg.e2m1_to_fp" in ck.asm["ttgir"] and "xf16" in ck.asm["ttgir"]
    assert re.search(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32", ck.asm["ptx"])


def test_the_sm90_ttgir_computes_the_exact_product():
    # the finalized cuda:90 TTGIR (decomposition, layouts, shared-memory operands, mma.sync dot) run
    # on the interpreter, which reads layouts as placement only: the same values as the exact product
    from conformance.cases.dot_scaled import dot_scaled_kernel, scaled, unpack_e2m1
    m = n = k = 64
    sig = {"a_ptr": "*u8", "as_ptr": "*u8", "b_ptr": "*u8", "bs_ptr": "*u8", "c_ptr": "*fp32", "z_ptr": "*fp32"}
    consts = dict(M=m, N=n, K=k, FA="e2m1", FB="e2m1", SCALE_A=True, SCALE_B=True, FAST=False, USE_ACC=False,
                  A_K_PACK=True, B_K_PACK=True)
    ttgir = tritium.compile(dot_scaled_kernel, target="cuda:90", signature=sig, constexprs=consts,
                            stage="ttgir").asm["ttgir"]
    assert "#ttg.nvidia_mma" in ttgir and "ttg.local_load" in ttgir
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 256, (m, k // 2)).astype(np.uint8), rng.integers(0, 256, (k // 2, n)).astype(np.uint8)
    sa, sb = (rng.integers(118, 136, (r, k // 32)).astype(np.uint8) for r in (m, n))
    sa[5, 1] = 0xFF
    z = np.zeros((m, n), np.float32)
    tritium.compile(ttgir, target="interpreter")[(1, 1, 1)](a, sa, b, sb, np.zeros((m, n), np.float32), z)
    exact = scaled(unpack_e2m1(a, 1), sa, 1) @ scaled(unpack_e2m1(b, 0), sb, 0)
    assert np.isnan(z[5]).all() and np.array_equal(z, exact.astype(np.float32), equal_nan=True)
