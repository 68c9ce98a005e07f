"""Fixes found by the Triton-compatibility sweep (conformance category ``compat``): each test pins
one behaviour a Triton kernel relies on."""
import numpy as np
import pytest

import tritium
import tritium as triton
import tritium.language as tl
from tritium import CompilationError


def _ttir(fn, sig, **constexprs):
    return tritium.compile(fn, signature=sig, constexprs=constexprs, target="interpreter").asm["ttir"]


@triton.jit
def _u8_plus_scalar(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x + 1)
    tl.store(out_ptr + BLOCK + offs, x // 7)


def test_python_int_scalar_keeps_unsigned_tensor_type():
    # Triton's kinds are bool < integer < float: a Python int does not turn uint8 into int32
    ttir = _ttir(_u8_plus_scalar, {"x_ptr": "*u8", "out_ptr": "*u8"}, BLOCK=16)
    assert "arith.extui" not in ttir and "arith.extsi" not in ttir
    x = np.random.default_rng().integers(1, 256, 16, dtype=np.uint8)
    x[0] = 255
    out = np.zeros(32, np.uint8)
    _u8_plus_scalar[(1,)](x, out, BLOCK=16)
    np.testing.assert_array_equal(out[:16], (x + np.uint8(1)).astype(np.uint8))
    np.testing.assert_array_equal(out[16:], x // 7)


@triton.jit
def _u32_minus_negative(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + -3)


def test_negative_scalar_with_unsigned_tensor_is_an_error():
    with pytest.raises(CompilationError) as info:
        _ttir(_u32_minus_negative, {"x_ptr": "*u32"}, BLOCK=16)
    assert "negative scalar -3" in str(info.value)
    assert "tl.load(x_ptr + offs) + -3" in str(info.value) and "^" in str(info.value)
