"""The interpreter's microscaling decoding (every e2m1 code, e8m0 with its NaN, the fp8 specials
dot_scaled operands can hold) and ``tt.dot_scaled`` computed exactly from them."""
from __future__ import annotations

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.backends.interpreter.mx_formats import (E2M1_TABLE, apply_scale, decode, decode_e8m0,
                                                     unpack_e2m1)


def test_all_sixteen_e2m1_codes():
    # s.ee.m: 0.0m is m * 0.5 (the subnormal), ee > 0 is 2^(ee-1) * (1 + m/2); bit 3 is the sign
    expected = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    assert list(E2M1_TABLE[:8]) == expected
    assert list(E2M1_TABLE[8:]) == [-v for v in expected]
    assert np.signbit(E2M1_TABLE[8]) and not np.signbit(E2M1_TABLE[0])


def test_e2m1_pairs_unpack_low_nibble_first_along_the_packed_axis():
    packed = np.array([[0x72, 0x1F]], np.uint8)  # low, high: (1.0, 6.0), (-6.0, 0.5)
    assert unpack_e2m1(packed, 1).tolist() == [[1.0, 6.0, -6.0, 0.5]]
    assert unpack_e2m1(packed.T, 0).tolist() == [[1.0], [6.0], [-6.0], [0.5]]


def test_e8m0_is_a_bare_exponent_with_nan_at_0xff():
    codes = np.arange(256, dtype=np.uint8)
    v = decode_e8m0(codes)
    assert v[127] == 1.0 and v[0] == 2.0 ** -127 and v[254] == 2.0 ** 127 and v[128] == 2.0
    assert np.isnan(v[255]) and not np.isnan(v[:255]).any()
    assert (v[1:255] == 2 * v[:254]).all()
    assert np.isnan(decode_e8m0(np.array([-1], np.int8)))[0]  # i8 bits read as unsigned


@pytest.mark.parametrize("fmt, code, value", [
    ("e4m3", 0x7E, 448.0), ("e4m3", 0x08, 2.0 ** -6), ("e4m3", 0x01, 2.0 ** -9), ("e4m3", 0x78, 256.0),
    ("e4m3", 0x7F, np.nan), ("e4m3", 0xFF, np.nan), ("e4m3", 0x80, -0.0),
    ("e5m2", 0x7B, 57344.0), ("e5m2", 0x04, 2.0 ** -14), ("e5m2", 0x01, 2.0 ** -16), ("e5m2", 0x7C, np.inf),
    ("e5m2", 0xFC, -np.inf), ("e5m2", 0x7D, np.nan), ("e5m2", 0x7F, np.nan),
])
def test_fp8_operand_bits_decode_with_their_specials(fmt, code, value):
    got = decode(np.array([code], np.uint8).view(np.int8), fmt, 0)[0]  # held as TTIR's i8
    if np.isnan(value):
        assert np.isnan(got)
    else:
        assert got == value and np.signbit(got) == np.signbit(value)


def test_scales_cover_32_elements_along_k_for_either_operand():
    x = np.ones((2, 64))
    s = np.array([[127, 128], [126, 255]], np.uint8)
    out = apply_scale(x, s, 1)
    assert (out[0, :32] == 1).all() and (out[0, 32:] == 2).all() and (out[1, :32] == 0.5).all()
    assert np.isnan(out[1, 32:]).all()
    # the rhs [K, N] takes its scale as [N, K/32]
    assert np.array_equal(apply_scale(x.T, s, 0), out.T, equal_nan=True)


@tritium.jit
def _mx_kernel(a_ptr, s_ptr, b_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    a = tl.load(a_ptr + rm[:, None] * (K // 2) + tl.arange(0, K // 2)[None, :])
    s = tl.load(s_ptr + rm[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    b = tl.load(b_ptr + tl.arange(0, K)[:, None] * N + rn[None, :])
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], tl.dot_scaled(a, s, "e2m1", b, None, "bf16"))


def test_dot_scaled_is_exact_then_rounded_once_to_fp32():
    m, n, k = 16, 16, 64
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, (m, k // 2), dtype=np.uint8)
    s = rng.integers(100, 150, (m, k // 32), dtype=np.uint8)
    s[3, 1] = 0xFF
    b = rng.standard_normal((k, n)).astype(np.float32)
    b_bits = (b.view(np.uint32) >> 16).astype(np.uint16)  # truncated to bf16: exact values below
    z = np.zeros((m, n), np.float32)
    _mx_kernel[(1,)](a, s, tritium.reinterpret(b_bits, tl.bfloat16), z, m, n, k)
    x = unpack_e2m1(a, 1) * np.repeat(decode_e8m0(s), 32, axis=1)
    y = (b_bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    expected = (x @ y).astype(np.float32)
    assert np.isnan(z[3]).all() and not np.isnan(np.delete(z, 3, 0)).any()
    assert np.array_equal(z, expected, equal_nan=True)
