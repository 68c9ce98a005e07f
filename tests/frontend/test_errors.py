"""A kernel author's mistakes raise CompilationError quoting their own line with a caret,
saying what was expected and what was found — never an internal traceback."""
import inspect
import os
import traceback

import numpy as np
import pytest

import tritium
from tritium import CompilationError

import kernels_for_errors as K

SIG = {"x_ptr": "*i32"}


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn.fn)
    for i, line in enumerate(lines):
        if text in line:
            return first + i
    raise AssertionError(text)


def _compile(fn, sig=SIG, **kw):
    return tritium.compile(fn, signature=sig, target="interpreter", **kw)


@pytest.mark.parametrize("fn, text, needle", [
    (K.bad_arange, "tl.arange(0, 100)", "arange's range must be a power of 2"),
    (K.bad_shapes, "a + b", "cannot broadcast shapes [16] and [32]: incompatible dimensions at index 0: 16 and 32"),
    (K.bad_name, "undefined_thing", "name 'undefined_thing' is not defined"),
    (K.uses_try, "try:", "unsupported Python construct in a kernel: Try"),
    (K.uses_lambda, "lambda v", "unsupported Python construct in a kernel: Lambda"),
    (K.calls_with_wrong_count, "helper(1)", "missing 1 required argument: 'b'"),
])
def test_error_quotes_the_line(fn, text, needle):
    with pytest.raises(CompilationError) as info:
        _compile(fn)
    msg = str(info.value)
    assert needle in msg
    line = _line_of(fn, text)
    assert f"kernels_for_errors.py:{line}:" in msg
    quoted, caret = msg.splitlines()[1:3]
    assert text in quoted
    assert caret.strip() == "^"
    # the caret sits under the start of the offending expression or statement
    assert quoted.index(text.split("(")[0].split()[0]) <= caret.index("^") + len(text)
    # the cause, where there is one, is the language's own error (its words, as Triton's tests read
    # them from __cause__) without the code generator's frames it came through
    cause = info.value.__cause__
    assert cause is None or (needle in str(cause) and not _code_generator_frames(cause))
    assert info.value.__context__ is None or info.value.__suppress_context__
    # no walk through the code generator's or xDSL's internals
    assert not any(part in str(e.path) for e in info.traceback for part in ("core/frontend", "xdsl/"))


def test_runtime_value_where_constexpr_needed():
    with pytest.raises(CompilationError, match="arange's arguments must be constexpr integers"):
        _compile(K.needs_constexpr, {"x_ptr": "*i32", "n": "i32"})


def test_store_through_non_pointer():
    with pytest.raises(CompilationError, match="store expects a pointer"):
        _compile(K.store_to_int, {"x_ptr": "*i32", "n": "i32"})


def test_wrong_argument_count_at_launch():
    x = np.zeros(16, np.int32)
    def_line = _line_of(K.small_kernel, "def small_kernel")
    with pytest.raises(CompilationError, match="missing 1 required argument: 'n'") as info:
        K.small_kernel[(1,)](x, BLOCK=16)
    assert isinstance(info.value, TypeError)  # what Python raises for a bad call
    assert f"kernels_for_errors.py:{def_line}:" in str(info.value) and "def small_kernel" in str(info.value)
    with pytest.raises(CompilationError, match="takes 3 arguments but 4 were given"):
        K.small_kernel[(1,)](x, 16, 16, 16)


def test_wrong_argument_type_at_launch():
    with pytest.raises(CompilationError, match="cannot pass a value of type dict"):
        K.small_kernel[(1,)]({}, 16, BLOCK=16)


def test_dtype_unsupported_by_target():
    pytest.importorskip("tritium_nvidia")
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32"}
    with pytest.raises(CompilationError, match=r"type fp8e4nv not supported in this architecture \(cuda:80\)") as info:
        tritium.compile(K.fp8_kernel, signature=sig, target="cuda:80", stage="ttir")
    assert "to(tl.float8e4nv)" in str(info.value)
    tritium.compile(K.fp8_kernel, signature=sig, target="cuda:90", stage="ttir")  # supported there


def _code_generator_frames(exc) -> list:
    """The frames of ``exc``'s traceback inside the code generator (or ``ast``'s visitor)."""
    return [f for f in traceback.extract_tb(exc.__traceback__)
            if os.path.basename(f.filename) in ("codegen.py", "codegen_control.py", "generator.py", "ast.py")]


@pytest.mark.parametrize("fn, words", [
    (K.bad_program_id_axis, "program_id axis must be 0, 1, or 2 but got 20"),
    (K.bad_expand_dims_axis, "invalid axis -3. Expected -2 <= axis < 2"),
    (K.duplicate_expand_dims_axes, "expand_dims received duplicate axes, normalized axes = [0, 0]"),
])
def test_the_language_error_is_the_cause(fn, words):
    """As in Triton, the error a language function raised is the CompilationError's __cause__
    (where Triton's own tests read its words); both are TritonErrors' kin."""
    with pytest.raises(tritium.TritonError) as info:
        _compile(fn)
    assert isinstance(info.value, CompilationError)
    assert words in str(info.value) and words in str(info.value.__cause__)
    cause = info.value.__cause__
    assert isinstance(cause, ValueError) and not _code_generator_frames(cause)
    # as in Triton, its traceback runs from the language function the kernel called to the raise
    frames = traceback.extract_tb(cause.__traceback__)
    assert frames and frames[0].filename.endswith(os.path.join("language", "core.py"))


def test_interpreter_errors_are_triton_errors():
    from tritium.backends.interpreter.errors import InterpreterError
    assert issubclass(InterpreterError, tritium.TritonError) and issubclass(InterpreterError, RuntimeError)


def test_num_warps_not_a_power_of_two():
    """Triton asserts it; ``except AssertionError`` and ``except ValueError`` both catch it here."""
    x = np.zeros(16, np.int32)
    for kind in (AssertionError, ValueError):
        with pytest.raises(kind, match="num_warps must be a power of 2, got 3"):
            K.small_kernel[(1,)](x, 16, BLOCK=16, num_warps=3)


def test_noinline_with_a_block_argument():
    """Triton's rule (and wording): a compiled noinline function takes scalars; the interpreter,
    which has no layouts, accepts blocks as Triton's does."""
    with pytest.raises(CompilationError) as info:
        tritium.compile(K.noinline_with_block, signature={"x_ptr": "*fp32"}, target="cuda:90", stage="ttir")
    msg = str(info.value)
    assert "Function scale_noinline is marked noinline, but was called with non-scalar argument val:<128, fp32>" in msg
    assert str(_line_of(K.noinline_with_block, "scale_noinline(v, 3)")) in msg
    x = np.arange(128, dtype=np.float32)
    K.noinline_with_block[(1,)](x, backend="interpreter")
    np.testing.assert_array_equal(x, np.arange(128, dtype=np.float32) * 3)
