"""A compile error met by a launch on the interpreter is also an ``InterpreterError`` (as Triton's
interpreter reports every error in a kernel) whose ``__cause__`` carries the reason, and still the
``CompilationError`` subclass a GPU backend raises, with the same message."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.frontend.errors import CompileTimeAssertionFailure


@triton.jit
def narrow_descriptor_kernel(ptr):
    desc = tl.make_tensor_descriptor(ptr, [128, 128], [128, 1], [1, 2])
    desc.load([0, 0])


@triton.jit
def static_assert_kernel(x, B: tl.constexpr):
    tl.static_assert(B % 64 == 0, "B must be a multiple of 64")


def test_a_descriptor_error_is_both_and_its_cause_names_the_reason():
    x = np.zeros((128, 128), np.int32)
    with pytest.raises(triton.InterpreterError) as e:
        narrow_descriptor_kernel[(1,)](x)
    assert isinstance(e.value, triton.CompilationError)
    assert "Descriptor block shape must have at least 16 bytes" in str(e.value.__cause__)
    assert "Descriptor block shape must have at least 16 bytes" in str(e.value)


def test_the_subclass_and_message_are_kept():
    with pytest.raises(CompileTimeAssertionFailure, match="B must be a multiple of 64") as e:
        static_assert_kernel[(1,)](np.zeros(4, np.float32), 32)
    assert isinstance(e.value, triton.InterpreterError)
    assert type(e.value).__name__ == "CompileTimeAssertionFailure"
