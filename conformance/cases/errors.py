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
    _err("static-assert", static_assert_kernel, Err("BLOCK must be a multiple of 64", line="tl.static_assert(BLOCK % 64 == 0"), constexprs={"BLOCK": 32}),
    _err("dot-too-small", small_dot_kernel, Err("16", line="tl.dot(a, a)"), dtype="fp16"),
    _err("reduce-axis-out-of-range", bad_reduce_axis_kernel, Err("axis", line="tl.sum(x, axis=2)")),
]
