"""The language's builtin functions, with Triton's names and signatures.  Each forwards to the
frontend's semantic layer with the builder the code generator passes as ``_builder``."""
from __future__ import annotations

from . import dtypes as _t
from .core import JITCallable, PropagateNan, _unwrap_if_constexpr as _u, builtin, semantics as _semantics, tensor
from ..errors import StaticAssertionFailed


def _s():
    return _semantics.semantic


def _st():
    return _semantics.semantic_tensor


def _sm():
    return _semantics.semantic_memory


# --- programs and creation ---------------------------------------------------------------------
@builtin
def program_id(axis, _builder=None):
    return _st().program_id(axis, _builder)


@builtin
def num_programs(axis, _builder=None):
    return _st().num_programs(axis, _builder)


@builtin
def arange(start, end, _builder=None):
    return _st().arange(start, end, _builder)


@builtin
def full(shape, value, dtype, _builder=None):
    return _st().full_(shape, value, dtype, _builder)


@builtin
def zeros(shape, dtype, _builder=None):
    return _st().zeros(shape, dtype, _builder)


@builtin
def zeros_like(input, _builder=None):
    x = _s().to_tensor(input, _builder)
    return _s().full(list(x.type.shape) if x.type.is_block() else [], 0, x.type.scalar, _builder)


@builtin
def full_like(input, value, _builder=None):
    x = _s().to_tensor(input, _builder)
    return _s().full(list(x.type.shape) if x.type.is_block() else [], value, x.type.scalar, _builder)


@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False, _builder=None):
    return _s().cast(input, _u(dtype), _builder, _u(fp_downcast_rounding), _u(bitcast))


# --- memory --------------------------------------------------------------------------------------
@builtin
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False, _builder=None):
    return _sm().load(pointer, mask, other, boundary_check, padding_option, cache_modifier, eviction_policy,
                      volatile, _builder)


@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy="", _builder=None):
    return _sm().store(pointer, value, mask, boundary_check, cache_modifier, eviction_policy, _builder)


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order, _builder=None):
    return _sm().make_block_ptr(base, shape, strides, offsets, block_shape, order, _builder)


@builtin
def advance(base, offsets, _builder=None):
    return _sm().advance(base, offsets, _builder)


advance._must_use_result = ("tl.advance returns the moved block pointer and leaves its argument as it was: "
                            "assign the result (ptr = tl.advance(ptr, offsets)).")


def _atomic(name):
    def fn(pointer, val, mask=None, sem=None, scope=None, _builder=None):
        return getattr(_sm(), name)(pointer, val, mask, sem, scope, _builder)
    fn.__name__ = name
    return builtin(fn)


atomic_add = _atomic("atomic_add")
atomic_max = _atomic("atomic_max")
atomic_min = _atomic("atomic_min")
atomic_and = _atomic("atomic_and")
atomic_or = _atomic("atomic_or")
atomic_xor = _atomic("atomic_xor")
atomic_xchg = _atomic("atomic_xchg")


@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None, _builder=None):
    return _sm().atomic_cas(pointer, cmp, val, sem, scope, _builder)


# --- elementwise ---------------------------------------------------------------------------------
@builtin
def where(condition, x, y, _builder=None):
    return _s().where(condition, x, y, _builder)


@builtin
def minimum(x, y, propagate_nan=PropagateNan.NONE, _builder=None):
    return _s().minimum(x, y, _u(propagate_nan) == PropagateNan.ALL, _builder)


@builtin
def maximum(x, y, propagate_nan=PropagateNan.NONE, _builder=None):
    return _s().maximum(x, y, _u(propagate_nan) == PropagateNan.ALL, _builder)


@builtin
def clamp(x, min, max, propagate_nan=PropagateNan.NONE, _builder=None):
    return _s().clamp(x, min, max, _u(propagate_nan) == PropagateNan.ALL, _builder)


def _unary(name):
    def fn(x, _builder=None):
        return _st().float_unary(name, x, _builder)
    fn.__name__ = name
    return builtin(fn)


exp = _unary("exp")
exp2 = _unary("exp2")
log = _unary("log")
log2 = _unary("log2")
cos = _unary("cos")
sin = _unary("sin")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
floor = _unary("floor")
ceil = _unary("ceil")
erf = _unary("erf")


@builtin
def sqrt_rn(x, _builder=None):
    return _st().sqrt_rn(x, _builder)


@builtin
def abs(x, _builder=None):
    return _st().abs_(x, _builder)


@builtin
def fma(x, y, z, _builder=None):
    return _st().fma(x, y, z, _builder)


@builtin
def fdiv(x, y, ieee_rounding=False, _builder=None):
    return _s().fdiv(x, y, bool(_u(ieee_rounding)), _builder)


@builtin
def div_rn(x, y, _builder=None):
    return _s().fdiv(x, y, True, _builder)


@builtin
def umulhi(x, y, _builder=None):
    return _st().umulhi(x, y, _builder)


@builtin
def sigmoid(x, _builder=None):
    s = _s()
    x = s.to_tensor(x, _builder)
    if not x.type.scalar.is_floating():
        raise TypeError(f"sigmoid expects a floating-point argument, got {x.type.scalar}")
    e = exp(s.minus(x, _builder), _builder=_builder)
    return s.truediv(1.0, s.add(1.0, e, _builder), _builder)


@builtin
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False, _builder=None):
    s = _s()
    x = s.to_tensor(x, _builder)
    dim = _u(dim)
    if dim is None:
        dim = len(x.type.shape) - 1 if x.type.is_block() else 0
    z = s.sub(x, max(x, dim, keep_dims=True, _builder=_builder), _builder)
    num = exp(z, _builder=_builder)
    den = sum(num, dim, keep_dims=True, _builder=_builder)
    # keep_dims only concerns the intermediate max and sum: the result has the input's shape
    return s.fdiv(num, den, bool(_u(ieee_rounding)), _builder)


@builtin
def logical_and(x, y, _builder=None):
    return _s().logical_and(x, y, _builder)


@builtin
def logical_or(x, y, _builder=None):
    return _s().logical_or(x, y, _builder)


# --- shapes --------------------------------------------------------------------------------------
@builtin
def broadcast(input, other, _builder=None):
    return _s().broadcast_values(_s().to_tensor(input, _builder), _s().to_tensor(other, _builder), _builder)


@builtin
def broadcast_to(input, *shape, _builder=None):
    shape = _shape_args(shape)
    return _st().broadcast_to(input, shape, _builder)


def _shape_args(shape):
    if len(shape) == 1 and isinstance(_u(shape[0]), (tuple, list)):
        return list(_u(shape[0]))
    return list(shape)


@builtin
def reshape(input, *shape, can_reorder=False, _builder=None):
    return _st().reshape(input, _shape_args(shape), bool(_u(can_reorder)), _builder)


@builtin
def view(input, *shape, _builder=None):
    return _st().reshape(input, _shape_args(shape), True, _builder)


@builtin
def ravel(x, can_reorder=False, _builder=None):
    x = _s().to_tensor(x, _builder)
    return _st().reshape(x, [x.type.numel if x.type.is_block() else 1], True, _builder)


@builtin
def expand_dims(input, axis, _builder=None):
    return _st().expand_dims(input, axis, _builder)


@builtin
def trans(input, *dims, _builder=None):
    return _st().trans(input, dims, _builder)


@builtin
def permute(input, *dims, _builder=None):
    return _st().permute(input, _shape_args(dims), _builder)


@builtin
def join(a, b, _builder=None):
    return _st().join(a, b, _builder)


@builtin
def split(a, _builder=None):
    return _st().split(a, _builder)


@builtin
def cat(input, other, can_reorder=False, _builder=None):
    return _st().cat(input, other, can_reorder, _builder)


@builtin
def interleave(a, b, _builder=None):
    j = _st().join(a, b, _builder)
    shape = list(j.type.shape)
    if len(shape) == 1:  # two scalars: the join is already the interleaving
        return j
    return _st().reshape(j, shape[:-2] + [shape[-2] * 2], False, _builder)


# --- dot -------------------------------------------------------------------------------------------
@builtin
def dot(input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=_t.float32, _builder=None):
    prec = _u(input_precision)
    if prec is None and _u(allow_tf32) is not None:
        prec = "tf32" if _u(allow_tf32) else "ieee"
    return _st().dot(input, other, acc, prec, max_num_imprecise_acc, out_dtype, _builder)


# --- reductions and scans ------------------------------------------------------------------------
def _combine_with_jit(fn):
    """Wrap a @jit combine function so it is emitted inline into the combine region."""
    def combine(builder, args):
        return builder.codegen.call_inline(fn, args)
    return combine


def _reduce_dtype(x, dtype):
    dtype = _u(dtype)
    if dtype is not None:
        return dtype
    sc = x.type.scalar
    if sc.is_int_signed() and sc.int_bitwidth < 32:
        return _t.int32
    if sc.is_int_unsigned() and sc.int_bitwidth < 32:
        return _t.uint32
    return None


def _simple_reduce(input, axis, keep_dims, builder, make_combine, dtype=None):
    s = _s()
    x = s.to_tensor(input, builder)
    out_dtype = _reduce_dtype(x, dtype) if dtype is not False else None
    if out_dtype is not None:
        x = s.cast(x, out_dtype, builder)
    return _st().reduce([x], axis, lambda b, a: [make_combine(a[0], a[1], b)], builder, bool(_u(keep_dims)))[0]


@builtin
def sum(input, axis=None, keep_dims=False, dtype=None, _builder=None):
    return _simple_reduce(input, axis, keep_dims, _builder, lambda a, b, bl: _s().add(a, b, bl), dtype)


@builtin
def xor_sum(input, axis=None, keep_dims=False, _builder=None):
    x = _s().to_tensor(input, _builder)
    if not x.type.scalar.is_int():
        raise TypeError(f"xor_sum needs integers, got {x.type.scalar}")
    return _simple_reduce(x, axis, keep_dims, _builder, lambda a, b, bl: _s().xor_(a, b, bl), False)


def _argreduce(x, axis, keep_dims, builder, greater: bool, tie_break_left: bool):
    s, st = _s(), _st()
    x = s.to_tensor(x, builder)
    axis = _u(axis)
    if axis is None:
        x = st.reshape(x, [x.type.numel], True, builder)
        axis = 0
    shape = list(x.type.shape)
    n = shape[axis]
    idx = st.arange(0, n, builder)
    if len(shape) > 1:
        view_shape = [1] * len(shape)
        view_shape[axis] = n
        idx = st.reshape(idx, view_shape, False, builder)
        idx = s.broadcast_to_shape(idx, shape, builder)

    def combine(b, a):
        v1, i1, v2, i2 = a
        cmp = s.greater_than(v1, v2, b) if greater else s.less_than(v1, v2, b)
        if tie_break_left:
            tie = s.and_(s.equal(v1, v2, b), s.less_than(i1, i2, b), b)
            cmp = s.or_(cmp, tie, b)
        if v1.type.scalar.is_floating():
            # a NaN wins, so argmax/argmin point at it (first NaN with left tie-breaking)
            nan1 = s.not_equal(v1, v1, b)
            nan2 = s.not_equal(v2, v2, b)
            cmp = s.or_(s.and_(cmp, s.not_(nan2, b), b), nan1, b)
        return [s.where(cmp, v1, v2, b), s.where(cmp, i1, i2, b)]

    return st.reduce([x, idx], axis, combine, builder, bool(_u(keep_dims)))


def _promote_bf16(x, builder):
    """bf16 values as fp32 before a reduction or scan, as Triton does (the result stays fp32)."""
    x = _s().to_tensor(x, builder)
    return _s().cast(x, _t.float32, builder) if x.type.scalar.is_bf16() else x


def _minmax_reduce(input, axis, return_indices, return_indices_tie_break_left, keep_dims, builder, is_max):
    s = _s()
    x = _promote_bf16(input, builder)
    if _u(return_indices):
        return tuple(_argreduce(x, axis, keep_dims, builder, is_max, bool(_u(return_indices_tie_break_left))))
    # Triton's rule: narrower than 32 bits is reduced, and returned, as fp32 / int32 (an unsigned
    # value is zero-extended, so the maximum is unchanged)
    sc = x.type.scalar
    if sc.primitive_bitwidth < 32:
        x = s.cast(x, _t.float32 if sc.is_floating() else _t.int32, builder)
    fn = s.maximum if is_max else s.minimum
    return _st().reduce([x], axis, lambda b, a: [fn(a[0], a[1], False, b)], builder, bool(_u(keep_dims)))[0]


@builtin
def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False, _builder=None):
    return _minmax_reduce(input, axis, return_indices, return_indices_tie_break_left, keep_dims, _builder, True)


@builtin
def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False, _builder=None):
    return _minmax_reduce(input, axis, return_indices, return_indices_tie_break_left, keep_dims, _builder, False)


@builtin
def argmax(input, axis, tie_break_left=True, keep_dims=False, _builder=None):
    return _argreduce(input, axis, keep_dims, _builder, True, bool(_u(tie_break_left)))[1]


@builtin
def argmin(input, axis, tie_break_left=True, keep_dims=False, _builder=None):
    return _argreduce(input, axis, keep_dims, _builder, False, bool(_u(tie_break_left)))[1]


@builtin
def reduce(input, axis, combine_fn, keep_dims=False, _builder=None):
    if isinstance(input, tensor):
        return _st().reduce([input], axis, _combine_with_jit(_u(combine_fn)), _builder, bool(_u(keep_dims)))[0]
    return tuple(_st().reduce(list(input), axis, _combine_with_jit(_u(combine_fn)), _builder, bool(_u(keep_dims))))


@builtin
def associative_scan(input, axis, combine_fn, reverse=False, _builder=None):
    if isinstance(input, tensor):
        return _st().scan([input], axis, _combine_with_jit(_u(combine_fn)), reverse, _builder)[0]
    return tuple(_st().scan(list(input), axis, _combine_with_jit(_u(combine_fn)), reverse, _builder))


@builtin
def map_elementwise(scalar_fn, *args, pack=1, _builder=None):
    """Call the @jit function ``scalar_fn`` on the elements of the (broadcast) ``args``: ``pack``
    consecutive elements of each argument per call (arguments ``a0..a{pack-1}, b0..``); it returns
    ``pack`` values per result the same way.  One result is a tensor, several a tuple."""
    fn = _u(scalar_fn)
    if not isinstance(fn, JITCallable):
        raise TypeError(f"map_elementwise: the scalar function must be a @jit function, got {fn!r}")
    return _st().map_elementwise(list(args), lambda scalars: _builder.codegen.call_jit(fn, scalars, {},
                                 _builder.codegen.last_node), pack, _builder)


def _simple_scan(x, axis, reverse, builder, op, dtype):
    if dtype is not None:
        x = _s().cast(x, dtype, builder)
    return _st().scan([x], axis, lambda b, a: [op(a[0], a[1], b)], reverse, builder)[0]


@builtin
def cumsum(input, axis=0, reverse=False, dtype=None, _builder=None):
    """Running sum along ``axis``: bf16 runs (and returns) fp32; integers narrower than 32 bits
    run in (u)int32 unless ``dtype`` says otherwise (Triton's ``cumsum``)."""
    x = _promote_bf16(input, _builder)
    return _simple_scan(x, axis, reverse, _builder, lambda a, b, bl: _s().add(a, b, bl), _reduce_dtype(x, dtype))


@builtin
def cumprod(input, axis=0, reverse=False, dtype=None, _builder=None):
    """Running product along ``axis``: bf16 runs (and returns) fp32, other types keep their own
    (integers wrap at their width), as in Triton; ``dtype`` picks another."""
    x = _promote_bf16(input, _builder)
    return _simple_scan(x, axis, reverse, _builder, lambda a, b, bl: _s().mul(a, b, bl), _u(dtype))


# --- compiler hints and debugging ----------------------------------------------------------------
@builtin
def multiple_of(input, values, _builder=None):
    return _st().set_hint(input, values, "divisibility", _builder)


@builtin
def max_contiguous(input, values, _builder=None):
    return _st().set_hint(input, values, "contiguity", _builder)


@builtin
def max_constancy(input, values, _builder=None):
    return _st().set_hint(input, values, "constancy", _builder)


@builtin
def static_print(*values, sep=" ", end="\n", file=None, flush=False, _builder=None):
    print(*[_u(v) for v in values], sep=sep, end=end, file=file, flush=flush)


@builtin
def static_assert(cond, msg="", _builder=None):
    cond = _u(cond)
    if isinstance(cond, tensor):
        raise TypeError("static_assert needs a constexpr condition; use device_assert for run-time values")
    if not cond:
        raise StaticAssertionFailed(f"static_assert failed: {_u(msg)}" if _u(msg) else "static_assert failed")


@builtin
def device_print(prefix, *args, hex=False, _builder=None):
    return _st().device_print(prefix, args, hex, _builder)


@builtin
def device_assert(cond, msg="", _builder=None):
    return _st().device_assert(cond, msg, _builder)


@builtin
def assume(cond, _builder=None):
    """Allow the compiler to assume ``cond`` (a scalar boolean) holds (``llvm.assume``); the
    interpreter checks it."""
    return _st().assume(cond, _builder)


@builtin
def debug_barrier(_builder=None):
    """Every thread of the program waits here; its memory accesses before are visible after."""
    return _st().debug_barrier(_builder)


@builtin
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack, _builder=None):
    """Target assembly applied elementwise (``pack`` elements per invocation, packed into one
    register per operand); ``dtype`` a dtype or a sequence of them (one result each).  Backends
    without inline assembly (the interpreter) reject it at the call's line."""
    semantic_extern = _semantics.semantic_extern
    return semantic_extern.inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack, _builder)


@builtin
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False, lhs_k_pack=True,
               rhs_k_pack=True, out_dtype=_t.float32, _builder=None):
    """The matrix product of two microscaled blocks (OCP MX: mxfp4 / mxfp8 with e8m0 scales).

    ``lhs_format``/``rhs_format``: ``"e2m1"`` (uint8, two values a byte packed along K, the first
    in the low nibble), ``"e4m3"``, ``"e5m2"`` (uint8 bits or the fp8 dtype), ``"bf16"``,
    ``"fp16"``.  ``lhs_scale`` ``[M, K // 32]`` and ``rhs_scale`` ``[N, K // 32]`` are uint8 e8m0
    exponents (value ``2 ** (s - 127)``, 0xFF is NaN), or ``None`` for an unscaled operand.
    ``fast_math=True`` lets the compiled code skip the NaN of scale 0xFF.  The result is float32
    (plus ``acc`` when given)."""
    semantic_dot_scaled = _semantics.semantic_dot_scaled
    return semantic_dot_scaled.dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc, fast_math,
                                          lhs_k_pack, rhs_k_pack, out_dtype, _builder)


def cdiv(x, div, _builder=None):
    """Ceiling division; works on the host, on constexprs and on tensors in kernels."""
    x, div = _u(x), _u(div)
    if not isinstance(x, tensor) and not isinstance(div, tensor):
        return (x + div - 1) // div
    if _builder is None:
        raise TypeError("tl.cdiv on tensors must be called inside a @jit function")
    s = _s()
    return s.floordiv(s.sub(s.add(x, div, _builder), 1, _builder), div, _builder)


setattr(cdiv, "__tritium_builtin__", True)


def next_power_of_2(n: int) -> int:
    n = int(_u(n))
    return 1 if n <= 1 else 1 << (n - 1).bit_length()
