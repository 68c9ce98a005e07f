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


@triton.jit
def _hinted_argument(x_ptr, n, BLOCK: tl.constexpr):
    n = tl.multiple_of(n, 16)
    offs = tl.max_contiguous(tl.arange(0, BLOCK), BLOCK)
    tl.store(x_ptr + offs, offs, mask=offs < n)


def test_multiple_of_on_an_argument_hints_the_function_argument():
    # a scalar argument has no defining op: the hint goes on the tt.func argument, as in Triton
    ttir = _ttir(_hinted_argument, {"x_ptr": "*i32", "n": "i32"}, BLOCK=16)
    assert "%n: i32 {tt.divisibility = 16 : i32}" in ttir
    assert "tt.contiguity" in ttir


@triton.jit
def _sort_odd(x_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    y = tl.reshape(x, (2, 8))
    tl.store(x_ptr + offs, tl.reshape(tl.sort(y, dim=0), (16,)))
    z = tl.reshape(x, (4, 4))
    tl.store(x_ptr + offs, tl.reshape(tl.flip(z, 2), (16,)))


def test_library_function_errors_quote_the_kernel_line():
    with pytest.raises(CompilationError) as info:
        _ttir(_sort_odd, {"x_ptr": "*fp32"})
    msg = str(info.value)
    assert "flip: dimension 2 is out of range for a rank-2 tensor" in msg
    assert "tl.flip(z, 2)" in msg and "^" in msg


@triton.jit
def _warm(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.rand(7, offs))


def test_warmup_compiles_without_launching():
    x = np.full(32, -1.0, np.float32)
    k = _warm.warmup(x, BLOCK=32, grid=(1,))
    assert "tt.func public @_warm" in k.asm["ttir"]
    assert "tt.mulhiui" in k.asm["ttir"]          # Philox rounds, inlined
    assert (x == -1.0).all()                      # nothing ran
    _warm[(1,)](x, BLOCK=32)
    assert ((x >= 0) & (x < 1)).all() and len(set(x.tolist())) > 16


@triton.jit
def _printer(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.device_print("x=", tl.load(x_ptr + offs))
    tl.static_print(f"compiling with BLOCK={BLOCK}")


def test_device_print_and_static_print(capfd, monkeypatch):
    monkeypatch.setenv("TRITIUM_ALWAYS_COMPILE", "1")  # static_print runs when the kernel compiles
    _printer.kernel_cache.clear()
    x = np.arange(1, 5, dtype=np.int32) * 11
    _printer[(1,)](x, BLOCK=4)
    out = capfd.readouterr().out
    assert "compiling with BLOCK=4" in out
    assert "x=" in out and "44" in out


@triton.jit
def _checked(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_assert(x > 0, "x must be positive")
    tl.store(x_ptr + offs, x * 2)


def test_device_assert_fires_only_with_debug():
    x = np.array([1, 2, -3, 4], np.int32)
    _checked[(1,)](x.copy(), BLOCK=4)             # debug off: the assert is not emitted
    with pytest.raises(Exception, match="x must be positive"):
        _checked[(1,)](x.copy(), BLOCK=4, debug=True)


@triton.constexpr_function
def _double(v):
    return v * 2


@triton.jit
def _uses_constexpr_function(x_ptr, B: tl.constexpr):
    offs = tl.arange(0, _double(B))
    tl.store(x_ptr + offs, offs)


def test_constexpr_function_shapes_a_range():
    x = np.zeros(16, np.int32)
    _uses_constexpr_function[(1,)](x, B=8)
    np.testing.assert_array_equal(x, np.arange(16))


@triton.jit
def _cast_method(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).cast(tl.float32) * 2)


def test_tensor_cast_method():
    # issue #9: `x.cast(tl.float32)`, as real kernels write it
    assert "arith.extf" in _ttir(_cast_method, {"x_ptr": "*fp16", "out_ptr": "*fp32"}, BLOCK=16)
    x = np.arange(16, dtype=np.float16)
    out = np.zeros(16, np.float32)
    _cast_method[(1,)](x, out, BLOCK=16)
    assert (out == 2 * x.astype(np.float32)).all()


@triton.jit
def _asm_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, tl.inline_asm_elementwise("shl.b32 $0, $1, 3;", "=r,r", [x], dtype=tl.int32,
                                                     is_pure=True, pack=1))


def test_inline_asm_is_refused_by_the_interpreter_at_its_line():
    with pytest.raises(CompilationError) as e:
        _asm_kernel[(1,)](np.zeros(16, np.int32), BLOCK=16)
    assert "interpreter" in str(e.value) and "inline_asm_elementwise(" in str(e.value)
    assert "tt.elementwise_inline_asm" in _ttir(_asm_kernel, {"x_ptr": "*i32"}, BLOCK=16)


@triton.jit
def _dot_scaled_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offs[:, None] * BLOCK + offs[None, :])
    tl.store(x_ptr + offs[:, None] * BLOCK + offs[None, :], tl.dot_scaled(a, None, "e4m3", a, None, "e4m3"))


def test_dot_scaled_operand_dtype_error_is_clear():
    # fp32 values are no e4m3 operand: the error names the format, the dtype found and the line
    with pytest.raises(CompilationError, match="Unexpected dtype for e4m3. Got fp32") as e:
        _ttir(_dot_scaled_kernel, {"x_ptr": "*fp32"}, BLOCK=32)
    assert 'tl.dot_scaled(a, None, "e4m3", a, None, "e4m3")' in str(e.value)
    assert "tt.dot_scaled" in _ttir(_dot_scaled_kernel, {"x_ptr": "*u8"}, BLOCK=32)
