"""How launch arguments specialize a kernel, by Triton's rules: an integer's type by its range
(i32, i64, u64), the constant 1, divisibility by 16 (0 included), OverflowError beyond 64 bits,
``do_not_specialize`` / ``do_not_specialize_on_alignment``, ``None`` as a constant, and the
``@jit(repr=...)`` kernel name; plus the launch of a kernel with no parameters."""
import numpy as np
import pytest

import tritium
import tritium as triton
import tritium.language as tl
from tritium.runtime.specialize import int_type_str, specialize_arg


@triton.jit
def _value_kernel(VALUE, X):
    pass


@triton.jit(do_not_specialize=["VALUE"])
def _value_kernel_dns(VALUE, X):
    pass


@triton.jit(do_not_specialize_on_alignment=["VALUE", "X"])
def _value_kernel_dnsa(VALUE, X):
    pass


def _param(fn):
    return fn.params[0]


@pytest.mark.parametrize("value, key", [
    (1, ("1",)),
    (16, ("a", "i32", "D")),
    (0, ("a", "i32", "D")),
    (-1, ("a", "i32", "")),
    (-16, ("a", "i32", "D")),
    (2**31 - 1, ("a", "i32", "")),
    (-2**31, ("a", "i32", "D")),
    (2**31, ("a", "i64", "D")),
    (2**32 - 1, ("a", "i64", "")),
    (2**63 - 1, ("a", "i64", "")),
    (-2**63, ("a", "i64", "D")),
    (2**63, ("a", "u64", "D")),
    (2**64 - 1, ("a", "u64", "")),
])
def test_integer_keys(value, key):
    assert specialize_arg(value, _param(_value_kernel)) == key


@pytest.mark.parametrize("value", [2**64, -2**63 - 1, 2**70])
def test_integers_beyond_64_bits_overflow(value):
    with pytest.raises(OverflowError, match=rf"integer {value} is out of range for a kernel argument"):
        int_type_str(value)
    with pytest.raises(OverflowError):
        specialize_arg(value, _param(_value_kernel))


def test_do_not_specialize_turns_off_one_and_divisibility():
    p = _param(_value_kernel_dns)
    assert specialize_arg(1, p) == ("a", "i32", "")
    assert specialize_arg(32, p) == ("a", "i32", "")
    assert specialize_arg(2**40, p) == ("a", "i64", "")


def test_do_not_specialize_on_alignment_keeps_the_constant_one():
    p = _param(_value_kernel_dnsa)
    assert specialize_arg(1, p) == ("1",)
    assert specialize_arg(32, p) == ("a", "i32", "")


def test_bool_none_and_float_keys():
    p = _param(_value_kernel)
    assert specialize_arg(True, p) == ("a", "i1", "")  # a bool is never the constant 1
    assert specialize_arg(None, p) == ("n",)
    assert specialize_arg(1.0, p) == ("a", "fp32", "")


@pytest.mark.parametrize("value, ty", [(-1, "i32"), (0, "i32"), (2**31, "i64"), (2**32, "i64"), (-2**63, "i64"),
                                       (2**63, "u64"), (2**64 - 1, "u64")])
def test_launch_type_and_repr_name(value, ty):
    @triton.jit(repr=lambda spec: f"kernel_{spec.signature['VALUE']}")
    def kernel(VALUE, X):
        pass

    x = np.zeros(4, np.float32)
    h = kernel[(1,)](value, x)
    assert h.name == f"kernel_{ty}"
    assert f"tt.func public @kernel_{ty}(" in h.asm["ttir"]


@pytest.mark.parametrize("value", [2**64, -2**63 - 1])
def test_launch_with_too_large_integer_raises_overflow_error(value):
    x = np.zeros(4, np.float32)
    with pytest.raises(OverflowError) as info:
        _value_kernel[(1,)](value, x)
    assert isinstance(info.value, tritium.CompilationError)
    assert "out of range for a kernel argument" in str(info.value)
    assert "def _value_kernel(VALUE, X):" in str(info.value)  # the kernel's own line


def test_pointer_divisibility_follows_do_not_specialize_on_alignment():
    x = np.zeros(64, np.float32)
    plain = _value_kernel[(1,)](3, x)
    unaligned = _value_kernel_dnsa[(1,)](3, x)
    assert "tt.divisibility" in plain.asm["ttir"]
    assert "tt.divisibility" not in unaligned.asm["ttir"]


@triton.jit
def _no_parameters():
    tl.static_assert(tl.program_id(0).dtype == tl.int32)


def test_kernel_without_parameters_launches():
    first = _no_parameters[(1,)]()
    again = _no_parameters[(2,)]()  # the generated fast path, from its cache
    called = _no_parameters[lambda meta: (3,)]()
    assert first is again is called
    assert "tt.func public @_no_parameters()" in first.asm["ttir"]
