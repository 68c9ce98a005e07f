"""Values as Triton kernels use them: None passed to helpers and kernels (``x is None``), numbers
and scalars as typed values (``.dtype``, ``.to``), integer arguments specialized by value,
reductions whose combine function calls helpers (the pattern of PyTorch Inductor's
``max2``/``welford``/``max_with_index``), ``split``/``interleave`` down to scalars, ``scalar[None,
None]``, a conditional expression of calls without values, ``isinstance`` in a kernel, and a
kernel with no parameters."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Err, Out, Rand, Scalar

B = 64


# --- None --------------------------------------------------------------------------------------

@triton.jit
def _scaled_sum(x, y, scale, limit, idx):
    # every optional argument is tested with `is None` at compile time, as Inductor's helpers do
    if y is None:
        r = x
    else:
        r = x + y
    if scale is not None:
        r = r * scale
    if limit is None:
        keep = tl.full(idx.shape, True, tl.int1)
    else:
        keep = idx < limit
    return tl.where(keep, r, 0.0)


@triton.jit
def none_args_kernel(x_ptr, y_ptr, z_ptr, w_ptr, n, LIMIT: tl.constexpr = tl.constexpr(None),
                     B: tl.constexpr = 64):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    if y_ptr is None:  # a None launch argument is a compile-time None
        y = None
    else:
        y = tl.load(y_ptr + offs)
    tl.store(z_ptr + offs, _scaled_sum(x, y, None, LIMIT, offs))
    tl.store(w_ptr + offs, _scaled_sum(x, None, 2.0, n, offs))


def _none_ref(with_y, limit):
    def ref(x_ptr, n, y_ptr=None):
        idx = np.arange(B)
        z = x_ptr + (y_ptr if with_y else 0)
        z = np.where(idx < limit, z, 0.0) if limit is not None else z
        return z, np.where(idx < n, x_ptr * 2.0, 0.0)
    return ref


# --- numbers and scalars as typed values -------------------------------------------------------

@triton.jit
def typed_scalars_kernel(z_ptr, s, f, B: tl.constexpr):
    value = 1  # a constant: Triton gives it int32
    out = tl.full([B], value=value, dtype=value.dtype)
    half = 0.5
    tl.static_assert(half.dtype == tl.float32)
    tl.static_assert(s.dtype == tl.int32)
    tl.static_assert(f.dtype == tl.float32)
    big = s.to(tl.int64) << 33  # a scalar argument converted before it overflows int32
    wide = B.to(tl.int64)       # a constexpr block size is a number too
    out = out + big + wide + (f * half).to(tl.int64, fp_downcast_rounding=None)
    tl.store(z_ptr + tl.arange(0, B), out)


@triton.jit
def induction_kernel(x_ptr, z_ptr, n, B: tl.constexpr):
    acc = tl.zeros([B], tl.int64)
    for i in range(0, n):
        tl.static_assert(i.dtype == tl.int32)
        acc += (i.to(tl.int64) << 36) + tl.load(x_ptr + i * B + tl.arange(0, B))
    tl.store(z_ptr + tl.arange(0, B), acc)


@triton.jit
def int_arg_kernel(z_ptr, t_ptr, s, B: tl.constexpr):
    # which type the launch gave `s`: 1 int32, 2 int64, 3 uint64 (a 1 is a constant int32)
    code = 1 if s.dtype == tl.int32 else 2 if s.dtype == tl.int64 else 3 if s.dtype == tl.uint64 else 0
    offs = tl.arange(0, B)
    tl.store(z_ptr + offs, tl.zeros([B], tl.uint64) + s.to(tl.uint64))
    tl.store(t_ptr + offs, tl.full([B], code, tl.int32))


def _int_arg_ref(value, code):
    return lambda: (np.full(B, value % 2**64, np.uint64), np.full(B, code, np.int32))


# --- reductions whose combine function calls helpers ---------------------------------------------

@triton.jit
def _as_value(x):
    return x + 0


@triton.jit
def _is_float(x):
    return _as_value(x).dtype.is_floating()


@triton.jit
def _nan_max(a, b):
    mask = a > b
    if _is_float(a):
        mask |= a != a
    return tl.where(mask, a, b)


@triton.jit
def _max_along(a, dim):
    return tl.reduce(a, dim, _nan_max)


@triton.jit
def _max_with_index_combine(a_value, a_index, b_value, b_index):
    mask = a_value > b_value
    equal = a_value == b_value
    if _is_float(a_value):
        a_nan = a_value != a_value
        mask |= a_nan & (b_value == b_value)
        equal |= a_nan & (b_value != b_value)
    mask |= equal & (a_index < b_index)
    return tl.where(mask, a_value, b_value), tl.where(mask, a_index, b_index)


@triton.jit
def _max_with_index(value, index, dim):
    return tl.reduce((value, index), dim, _max_with_index_combine)


@triton.jit
def _welford_step(value, mean, m2, weight, first):
    if first:
        new_weight = tl.full(weight.shape, 1, weight.dtype)
        new_mean = value
        new_m2 = tl.zeros_like(m2)
    else:
        delta = value - mean
        new_weight = weight + 1
        new_mean = mean + delta / new_weight
        new_m2 = m2 + delta * (value - new_mean)
    return new_mean, new_m2, new_weight


@triton.jit
def _welford_combine(mean_1, m2_1, weight_1, mean_2, m2_2, weight_2):
    delta = tl.where(mean_1 == mean_2, 0.0, mean_2 - mean_1)
    new_weight = weight_1 + weight_2
    w2_over_w = tl.where(new_weight == 0.0, 0.0, weight_2 / new_weight)
    return (mean_1 + delta * w2_over_w, m2_1 + m2_2 + delta * delta * weight_1 * w2_over_w, new_weight)


@triton.jit
def _welford(mean, m2, weight, dim):
    return tl.reduce((mean, m2, weight), dim, _welford_combine)


R, C = 8, 32


@triton.jit
def nested_max_kernel(x_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :])
    tl.store(z_ptr + tl.arange(0, R), _max_along(x, 1))


@triton.jit
def max_with_index_kernel(x_ptr, z_ptr, i_ptr, R: tl.constexpr, C: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :])
    idx = tl.broadcast_to(tl.arange(0, C)[None, :], [R, C])
    v, i = _max_with_index(x, idx, 1)
    tl.store(z_ptr + tl.arange(0, R), v)
    tl.store(i_ptr + tl.arange(0, R), i)


@triton.jit
def welford_kernel(x_ptr, mean_ptr, var_ptr, n_chunks, R: tl.constexpr, C: tl.constexpr):
    # Inductor's two-pass shape: per-lane running statistics over chunks, then a tuple reduction
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    mean = tl.zeros([R, C], tl.float32)
    m2 = tl.zeros([R, C], tl.float32)
    weight = tl.zeros([R, C], tl.float32)
    for k in range(0, n_chunks):
        x = tl.load(x_ptr + k * R * C + offs)
        mean, m2, weight = _welford_step(x, mean, m2, weight, k == 0)
    m, v, w = _welford(mean, m2, weight, 1)
    tl.store(mean_ptr + tl.arange(0, R), m)
    tl.store(var_ptr + tl.arange(0, R), v / w)


def _welford_ref(x_ptr):
    per_row = x_ptr.reshape(-1, R, C).transpose(1, 0, 2).reshape(R, -1)
    return per_row.mean(1), per_row.var(1)


def _max_index_ref(x_ptr):
    x = x_ptr.reshape(R, C)
    return x.max(1), x.argmax(1).astype(np.int32)


# --- shapes down to scalars -----------------------------------------------------------------------

@triton.jit
def split_scalar_kernel(x_ptr, a_ptr, b_ptr):
    pid = tl.program_id(0)
    pair = tl.load(x_ptr + 2 * pid + tl.arange(0, 2))
    a, b = tl.split(pair)
    tl.static_assert(isinstance(a, tl.tensor))
    tl.static_assert(a.shape == [])
    tl.store(a_ptr + pid, a)
    tl.store(b_ptr + pid, b)


@triton.jit
def interleave_scalar_kernel(x_ptr, y_ptr, z_ptr):
    pid = tl.program_id(0)
    z = tl.interleave(tl.load(x_ptr + pid), tl.load(y_ptr + pid))
    tl.static_assert(z.shape == [2])
    tl.store(z_ptr + 2 * pid + tl.arange(0, 2), z)


@triton.jit
def scalar_none_index_kernel(x_ptr, z_ptr, s, B: tl.constexpr):
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    row = v[None, None]  # a [1, 1] tensor
    tl.static_assert(len(row.shape) == 2)
    col = s[None]
    out = row + col[:, None] * tl.arange(0, B)[None, :]  # [1, B]
    dst = (z_ptr + pid * B)[None, None, :]  # a scalar pointer: ':' past its rank is no error
    tl.store(dst + tl.arange(0, B)[None, :], out)


# --- conditional expressions, isinstance, no parameters ------------------------------------------

@triton.jit
def void_ifexp_kernel(x_ptr, y_ptr, z_ptr):
    pid = tl.program_id(0)
    tl.store(z_ptr + pid, tl.load(x_ptr + pid)) if pid % 2 == 0 else tl.store(z_ptr + pid, tl.load(y_ptr + pid))


@triton.jit
def isinstance_kernel(x_ptr, z_ptr, K, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    tl.static_assert(isinstance(B, int) and isinstance(B, tl.constexpr))
    tl.static_assert(isinstance(x, tl.tensor) and not isinstance(x, tl.constexpr))
    if isinstance(K, tl.tensor):  # a run-time scalar
        x = x * K
    if isinstance(K, int):  # never: K is not a compile-time number here
        x = x - 1000
    tl.store(z_ptr + offs, x)


def _next_pow2_builtin(n, *, _builder=None):
    # a compile-time helper marked the way libraries mark Triton builtins (they get the builder)
    assert isinstance(n, tl.constexpr), f"a builtin receives constexprs as they are, got {n!r}"
    return tl.constexpr(1 << (int(n.value) - 1).bit_length())


def _other_or_none_builtin(mask, value, *, _semantic=None):
    # Triton's later spelling of the builder keyword
    assert _semantic is not None
    return tl.constexpr(None) if isinstance(mask, tl.constexpr) and mask.value is None else value


_next_pow2_builtin.__triton_builtin__ = True
_other_or_none_builtin.__triton_builtin__ = True


@triton.jit
def foreign_builtin_kernel(x_ptr, z_ptr, N: tl.constexpr):
    P: tl.constexpr = _next_pow2_builtin(N)
    offs = tl.arange(0, P)
    mask = offs < N
    x = tl.load(x_ptr + offs, mask=mask, other=_other_or_none_builtin(mask, -1.0))
    tl.store(z_ptr + offs, x)


@triton.jit
def no_parameters_kernel():
    tl.static_assert(tl.constexpr(None) is None)
    tl.static_assert(False, "a kernel without parameters reached the compiler")


CASES = [
    Case(id="values/none-launch-arg", kernel=none_args_kernel,
         inputs={"x_ptr": Rand("fp32", (B,)), "y_ptr": None, "n": Scalar("int32", 1, B - 1)},
         outputs={"z_ptr": Out("fp32", (B,)), "w_ptr": Out("fp32", (B,))}, reference=_none_ref(False, None),
         doc="None at launch and in helper calls, tested with `is None`"),
    Case(id="values/none-helper-args", kernel=none_args_kernel, constexprs={"LIMIT": 40},
         inputs={"x_ptr": Rand("fp32", (B,)), "y_ptr": Rand("fp32", (B,)), "n": Scalar("int32", 1, B - 1)},
         outputs={"z_ptr": Out("fp32", (B,)), "w_ptr": Out("fp32", (B,))}, reference=_none_ref(True, 40)),
    Case(id="values/typed-scalars", kernel=typed_scalars_kernel, constexprs={"B": B},
         inputs={"s": Scalar("int32", 1, 1000), "f": Scalar("fp32", 2.0, 1000.0)},
         outputs={"z_ptr": Out("int64", (B,), poison="sentinel")},
         reference=lambda s, f: np.full(B, 1 + (s << 33) + B + int(np.float32(np.float32(f) * np.float32(0.5))),
                                        np.int64)),
    Case(id="values/induction-variable-to", kernel=induction_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("int64", (5 * B,), -2**40, 2**40), "n": 5},
         outputs={"z_ptr": Out("int64", (B,), poison="sentinel")},
         reference=lambda x_ptr, n: sum((np.int64(i) << 36) + x_ptr[i * B:(i + 1) * B] for i in range(n))),
] + [
    Case(id=f"values/int-arg-{name}", kernel=int_arg_kernel, constexprs={"B": B}, inputs={"s": value},
         outputs={"z_ptr": Out("uint64", (B,), poison="sentinel"), "t_ptr": Out("int32", (B,), poison="sentinel")},
         reference=_int_arg_ref(value, code))
    for name, value, code in (("one", 1, 1), ("minus-one", -1, 1), ("multiple-of-16", 4096, 1),
                              ("2pow31", 2**31, 2), ("minus-2pow63", -2**63, 2), ("2pow63", 2**63, 3),
                              ("2pow64-1", 2**64 - 1, 3))
] + [
    Case(id="values/int-arg-too-large", kernel=int_arg_kernel, constexprs={"B": B}, inputs={"s": 2**64},
         outputs={"z_ptr": Out("uint64", (B,)), "t_ptr": Out("int32", (B,))},
         expect_error=Err("18446744073709551616", "out of range")),
    Case(id="values/reduce-nested-helpers-max-fp32", kernel=nested_max_kernel, constexprs={"R": R, "C": C},
         inputs={"x_ptr": Rand("fp32", (R * C,))}, outputs={"z_ptr": Out("fp32", (R,))},
         reference=lambda x_ptr: x_ptr.reshape(R, C).max(1)),
    Case(id="values/reduce-nested-helpers-max-int32", kernel=nested_max_kernel, constexprs={"R": R, "C": C},
         inputs={"x_ptr": Rand("int32", (R * C,))}, outputs={"z_ptr": Out("int32", (R,))},
         reference=lambda x_ptr: x_ptr.reshape(R, C).max(1)),
    Case(id="values/reduce-max-with-index-fp32", kernel=max_with_index_kernel, constexprs={"R": R, "C": C},
         inputs={"x_ptr": Rand("fp32", (R * C,))},
         outputs={"z_ptr": Out("fp32", (R,)), "i_ptr": Out("int32", (R,), poison="sentinel")},
         reference=_max_index_ref),
    Case(id="values/reduce-max-with-index-ties-int32", kernel=max_with_index_kernel, constexprs={"R": R, "C": C},
         inputs={"x_ptr": Rand("int32", (R * C,), -3, 3)},
         outputs={"z_ptr": Out("int32", (R,), poison="sentinel"), "i_ptr": Out("int32", (R,), poison="sentinel")},
         reference=_max_index_ref, doc="ties pick the lowest index"),
    Case(id="values/reduce-welford-fp32", kernel=welford_kernel, constexprs={"R": R, "C": C},
         inputs={"x_ptr": Rand("fp32", (4 * R * C,)), "n_chunks": 4},
         outputs={"mean_ptr": Out("fp32", (R,)), "var_ptr": Out("fp32", (R,))},
         reference=_welford_ref, rtol=1e-5, atol=1e-5),
    Case(id="values/split-to-scalars-int32", kernel=split_scalar_kernel, grid=(16,),
         inputs={"x_ptr": Rand("int32", (32,))},
         outputs={"a_ptr": Out("int32", (16,), poison="sentinel"), "b_ptr": Out("int32", (16,), poison="sentinel")},
         reference=lambda x_ptr: (x_ptr[0::2], x_ptr[1::2])),
    Case(id="values/interleave-scalars-fp32", kernel=interleave_scalar_kernel, grid=(16,),
         inputs={"x_ptr": Rand("fp32", (16,)), "y_ptr": Rand("fp32", (16,))},
         outputs={"z_ptr": Out("fp32", (32,))},
         reference=lambda x_ptr, y_ptr: np.stack([x_ptr, y_ptr], axis=1).reshape(32)),
    Case(id="values/scalar-none-index-fp32", kernel=scalar_none_index_kernel, grid=(4,), constexprs={"B": 16},
         inputs={"x_ptr": Rand("fp32", (4,)), "s": Scalar("fp32", -4.0, 4.0)}, outputs={"z_ptr": Out("fp32", (64,))},
         reference=lambda x_ptr, s: (x_ptr[:, None] + np.float64(np.float32(s)) * np.arange(16)[None, :]).reshape(64),
         rtol=1e-6, atol=1e-6),
    Case(id="values/void-conditional-expression", kernel=void_ifexp_kernel, grid=(16,),
         inputs={"x_ptr": Rand("fp32", (16,)), "y_ptr": Rand("fp32", (16,))}, outputs={"z_ptr": Out("fp32", (16,))},
         reference=lambda x_ptr, y_ptr: np.where(np.arange(16) % 2 == 0, x_ptr, y_ptr)),
    Case(id="values/isinstance", kernel=isinstance_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("int32", (B,), -1000, 1000), "K": Scalar("int32", 2, 9)},
         outputs={"z_ptr": Out("int32", (B,), poison="sentinel")}, reference=lambda x_ptr, K: x_ptr * K),
    Case(id="values/foreign-builtins", kernel=foreign_builtin_kernel, constexprs={"N": 12},
         inputs={"x_ptr": Rand("fp32", (16,))}, outputs={"z_ptr": Out("fp32", (16,))},
         reference=lambda x_ptr: np.where(np.arange(16) < 12, x_ptr, -1.0),
         doc="functions marked __triton_builtin__ run at compile time with the builder (_builder or _semantic)"),
    Case(id="values/no-parameters", kernel=no_parameters_kernel,
         expect_error=Err("a kernel without parameters reached the compiler", line="tl.static_assert(False"),
         doc="launching a kernel that takes no arguments reaches the compiler (its static_assert)"),
]
