"""Kernels with a deliberate mistake each; the tests check the error points at the right line."""
import tritium as triton
import tritium.language as tl


@triton.jit
def bad_arange(x_ptr):
    offs = tl.arange(0, 100)
    tl.store(x_ptr + offs, offs)


@triton.jit
def bad_shapes(x_ptr):
    a = tl.arange(0, 16)
    b = tl.arange(0, 32)
    tl.store(x_ptr + a, a + b)


@triton.jit
def bad_name(x_ptr):
    tl.store(x_ptr, undefined_thing)  # noqa: F821


@triton.jit
def needs_constexpr(x_ptr, n):
    offs = tl.arange(0, n)
    tl.store(x_ptr + offs, offs)


@triton.jit
def uses_try(x_ptr):
    try:
        tl.store(x_ptr, 1)
    except Exception:
        pass


@triton.jit
def uses_lambda(x_ptr):
    f = lambda v: v + 1  # noqa: E731
    tl.store(x_ptr, f(1))


@triton.jit
def store_to_int(x_ptr, n):
    tl.store(n, 1)


@triton.jit
def helper(a, b):
    return a + b


@triton.jit
def calls_with_wrong_count(x_ptr):
    tl.store(x_ptr, helper(1))


@triton.jit
def fp8_kernel(x_ptr, y_ptr):
    tl.store(y_ptr, tl.load(x_ptr).to(tl.float8e4nv).to(tl.float32))


@triton.jit
def small_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs, mask=offs < n)


@triton.jit
def bad_program_id_axis(x_ptr):
    pid = tl.program_id(20)
    tl.store(x_ptr, pid)


@triton.jit
def bad_expand_dims_axis(x_ptr):
    t = tl.expand_dims(tl.arange(0, 16), -3)
    tl.store(x_ptr + t, 1)


@triton.jit
def duplicate_expand_dims_axes(x_ptr):
    t = tl.expand_dims(tl.arange(0, 16), (0, -3))
    tl.store(x_ptr + t, 1)


@triton.jit(noinline=True)
def scale_noinline(val, s):
    return val * s


@triton.jit
def noinline_with_block(x_ptr):
    r = tl.arange(0, 128)
    v = tl.load(x_ptr + r)
    v = scale_noinline(v, 3)
    tl.store(x_ptr + r, v)
