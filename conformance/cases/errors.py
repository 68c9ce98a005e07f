"""Kernels that must be rejected at compile time with a ``CompilationError`` that says what is
wrong and quotes the offending source line."""
import tritium as triton
import tritium.language as tl

from ..case import Case, Err, Out, Rand


@triton.jit
def non_pow2_arange_kernel(x_ptr):
    offs = tl.arange(0, 100)
    tl.store(x_ptr + offs, offs)


@triton.jit
def shape_mismatch_kernel(x_ptr):
    a = tl.load(x_ptr + tl.arange(0, 16))
    b = tl.load(x_ptr + tl.arange(0, 32))
    tl.store(x_ptr + tl.arange(0, 16), a + b)


@triton.jit
def undefined_name_kernel(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, not_defined_anywhere + 1)  # noqa: F821


@triton.jit
def _two_args(a, b):
    return a + b


@triton.jit
def wrong_arg_count_kernel(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, _two_args(offs, offs, offs))


@triton.jit
def runtime_arange_bound_kernel(x_ptr, n):
    offs = tl.arange(0, n)
    tl.store(x_ptr + offs, offs)


@triton.jit
def runtime_zeros_shape_kernel(x_ptr, n):
    z = tl.zeros((n,), dtype=tl.int32)
    tl.store(x_ptr + tl.arange(0, 16), z)


@triton.jit
def try_kernel(x_ptr):
    offs = tl.arange(0, 16)
    try:
        tl.store(x_ptr + offs, offs)
    except Exception:
        pass


@triton.jit
def with_kernel(x_ptr):
    offs = tl.arange(0, 16)
    with open("f"):
        tl.store(x_ptr + offs, offs)


@triton.jit
def lambda_kernel(x_ptr):
    offs = tl.arange(0, 16)
    f = lambda v: v + 1  # noqa: E731
    tl.store(x_ptr + offs, f(offs))


@triton.jit
def store_to_int_kernel(x_ptr, n):
    offs = tl.arange(0, 16)
    tl.store(n, offs)


@triton.jit
def static_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 64 == 0, "BLOCK must be a multiple of 64")
    tl.store(x_ptr + tl.arange(0, BLOCK), 1)


@triton.jit
def small_dot_kernel(x_ptr):
    r = tl.arange(0, 8)
    a = tl.load(x_ptr + r[:, None] * 8 + r[None, :])
    tl.store(x_ptr + r[:, None] * 8 + r[None, :], tl.dot(a, a))


@triton.jit
def bad_reduce_axis_kernel(x_ptr):
    r = tl.arange(0, 16)
    x = tl.load(x_ptr + r[:, None] * 16 + r[None, :])
    tl.store(x_ptr + r, tl.sum(x, axis=2))


@triton.jit
def bitwise_float_kernel(x_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    y = x.to(tl.float32)
    tl.store(x_ptr + offs, (x & y).to(tl.int32))


@triton.jit
def mixed_signedness_div_kernel(x_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    u = x.to(tl.uint32)
    tl.store(x_ptr + offs, x // u)


@triton.jit
def slice_index_kernel(x_ptr):
    p = x_ptr[10:]
    tl.store(p, 1)


@triton.jit
def program_id_axis_kernel(x_ptr):
    pid = tl.program_id(3)
    tl.store(x_ptr + pid, 1)


@triton.jit
def expand_dims_axis_kernel(x_ptr):
    offs = tl.arange(0, 16)
    t = tl.expand_dims(offs, 2)
    tl.store(x_ptr + t, 1)


@triton.jit
def expand_dims_duplicate_kernel(x_ptr):
    offs = tl.arange(0, 16)
    t = tl.expand_dims(offs, (0, -3))
    tl.store(x_ptr + t, 1)


@triton.jit
def scalar_out_of_range_kernel(x_ptr):
    offs = tl.arange(0, 16)
    x8 = tl.load(x_ptr + offs).to(tl.int8)
    tl.store(x_ptr + offs, x8 + 300)


@triton.jit
def negative_scalar_unsigned_kernel(x_ptr):
    offs = tl.arange(0, 16)
    u = tl.load(x_ptr + offs).to(tl.uint32)
    tl.store(x_ptr + offs, u + -3)


@triton.jit
def float_shift_kernel(x_ptr):
    offs = tl.arange(0, 16)
    f = tl.load(x_ptr + offs).to(tl.float16)
    tl.store(x_ptr + offs, f << 2)


@triton.jit
def _needs_fp32(x):
    tl.static_assert(x.dtype == tl.float32, "needs_fp32 takes fp32 values")
    return x * 2.0


@triton.jit
def nested_static_assert_kernel(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, _needs_fp32(tl.load(x_ptr + offs)))


@triton.jit
def _branchy_returns(n):
    if n == 0:
        return tl.arange(0, 4)
    else:
        return tl.arange(0, 8)


@triton.jit
def nested_inconsistent_returns_kernel(x_ptr, n):
    _branchy_returns(n)


def _err(name, kernel, err, inputs=None, constexprs=None, dtype="int32"):
    return Case(id=f"errors/{name}", kernel=kernel, inputs={"x_ptr": Rand(dtype, (256,)), **(inputs or {})},
                outputs={}, constexprs=constexprs or {}, expect_error=err)


CASES = [
    _err("arange-not-power-of-two", non_pow2_arange_kernel,
         Err(("power of 2", "power of two"), line="tl.arange(0, 100)")),
    _err("shape-mismatch", shape_mismatch_kernel, Err(("incompatible", "mismatch"), "16", "32", line="a + b")),
    _err("undefined-name", undefined_name_kernel, Err("not_defined_anywhere", line="not_defined_anywhere + 1")),
    _err("wrong-number-of-args", wrong_arg_count_kernel,
         Err(("argument", "arguments"), line="_two_args(offs, offs, offs)")),
    _err("non-constexpr-arange-bound", runtime_arange_bound_kernel, Err("constexpr", line="tl.arange(0, n)"),
         inputs={"n": 16}),
    _err("non-constexpr-shape", runtime_zeros_shape_kernel, Err("constexpr", line="tl.zeros((n,), dtype=tl.int32)"),
         inputs={"n": 16}),
    _err("unsupported-try", try_kernel, Err(("try", "Try"), line="try:")),
    _err("unsupported-with", with_kernel, Err(("with", "With"), line='with open("f"):')),
    _err("unsupported-lambda", lambda_kernel, Err(("lambda", "Lambda"), line="lambda v: v + 1")),
    _err("store-to-non-pointer", store_to_int_kernel, Err(("pointer", "ptr"), line="tl.store(n, offs)"),
         inputs={"n": 16}),
    _err("static-assert", static_assert_kernel, Err("BLOCK must be a multiple of 64", line="tl.static_assert(BLOCK % 64 == 0",
                                                    kind="CompileTimeAssertionFailure"), constexprs={"BLOCK": 32}),
    _err("dot-too-small", small_dot_kernel, Err("16", line="tl.dot(a, a)"), dtype="fp16"),
    _err("reduce-axis-out-of-range", bad_reduce_axis_kernel, Err("invalid axis 2", line="tl.sum(x, axis=2)")),
    # Triton's wording inside the message (what Triton's users and tests search for)
    _err("bitwise-on-float", bitwise_float_kernel, Err("invalid operands of type int32 and fp32", line="x & y")),
    _err("shift-on-float", float_shift_kernel, Err("invalid operands of type fp16 and int32", line="f << 2")),
    _err("div-mixed-signedness", mixed_signedness_div_kernel,
         Err("Cannot use /, // or % with int32 and uint32 because they have different signedness", line="x // u")),
    _err("slice-index", slice_index_kernel, Err("unsupported tensor index: 10:", line="x_ptr[10:]")),
    _err("program-id-axis", program_id_axis_kernel,
         Err("program_id axis must be 0, 1, or 2 but got 3", line="tl.program_id(3)")),
    _err("expand-dims-axis", expand_dims_axis_kernel,
         Err("invalid axis 2. Expected -2 <= axis < 2", line="tl.expand_dims(offs, 2)")),
    _err("expand-dims-duplicate-axes", expand_dims_duplicate_kernel,
         Err("duplicate axes, normalized axes = [0, 0]", line="tl.expand_dims(offs, (0, -3))")),
    _err("scalar-out-of-range", scalar_out_of_range_kernel,
         Err("Scalar 300 is out of range for type int8", line="x8 + 300")),
    # an error in a called function: its place, then each call's, as `at L:C:` (lines from the def)
    _err("nested-static-assert", nested_static_assert_kernel,
         Err("in _needs_fp32 at 2:4:", "needs_fp32 takes fp32 values", "in nested_static_assert_kernel at 3:27:",
             "called from", line="_needs_fp32(tl.load(x_ptr + offs))", kind="CompileTimeAssertionFailure")),
    _err("nested-inconsistent-returns", nested_inconsistent_returns_kernel,
         Err("Inconsistent return types", "in _branchy_returns at 5:8:", "in nested_inconsistent_returns_kernel at 2:4:",
             line="return tl.arange(0, 8)"), inputs={"n": 0}),
    _err("negative-scalar-with-unsigned", negative_scalar_unsigned_kernel,
         Err("Cannot perform a binary operation between an unsigned tensor and a negative scalar", line="u + -3")),
]
