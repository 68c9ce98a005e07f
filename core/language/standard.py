"""Library functions built from the language's own operations: ``sort``, ``topk``, ``flip``,
``gather``, ``histogram``, ``swizzle2d``, ``reduce_or`` and the ``add``/``sub``/``mul`` forms.

Only ``gather`` has an op of its own (``tt.gather``).  The others are built from the language:
sorting is a bitonic network whose compare-exchange steps pair elements with
``reshape``/``permute``/``split`` and put them back with ``join``; ``histogram`` compares against
a range and reduces (O(n * num_bins)).  Every backend therefore runs them as they are.
"""
from __future__ import annotations

from .. import language as tl
from ..runtime.jit import jit
from .core import _unwrap_if_constexpr as _u, builtin, semantics as _semantics


def _s():
    return _semantics.semantic


def _st():
    return _semantics.semantic_tensor


def _block(x, what: str, b):
    x = _s().to_tensor(x, b)
    if not x.type.is_block():
        raise TypeError(f"{what} needs a tensor, got a scalar of type {x.type}")
    return x


def _axis(x, dim, what: str) -> int:
    rank = len(x.type.shape)
    d = rank - 1 if _u(dim) is None else int(_u(dim))
    if not -rank <= d < rank:
        raise ValueError(f"{what}: dimension {d} is out of range for a rank-{rank} tensor")
    return d + rank if d < 0 else d


def _log2(n: int, what: str | None = None) -> int:
    """log2 of a power of two (``what`` names the caller in the error); without ``what``, Triton's
    ``triton.language.standard._log2``: floor(log2(n)) of a constexpr, 0 for n <= 1."""
    n = int(_u(n))
    if what is None:
        return max(n, 1).bit_length() - 1
    if n < 1 or n & (n - 1):
        raise ValueError(f"{what} needs a power-of-two length along its dimension, got {n}")
    return n.bit_length() - 1


def _pair_perm(rank: int, axis: int) -> list[int]:
    return [d for d in range(rank + 2) if d != axis + 1] + [axis + 1]


def _halves(x, axis: int, s: int, b):
    """The elements ``i`` and ``i + s`` of every block of ``2s`` along ``axis``, as two tensors of
    shape ``shape[:axis] + [n // 2s, s] + shape[axis + 1:]``."""
    st = _st()
    shape = list(x.type.shape)
    n = shape[axis]
    v = st.reshape(x, shape[:axis] + [n // (2 * s), 2, s] + shape[axis + 1:], False, b)
    return st.split(st.permute(v, _pair_perm(len(shape), axis), b), b)


def _unhalves(lo, hi, axis: int, shape: list, b):
    """The inverse of ``_halves``."""
    st = _st()
    perm = _pair_perm(len(shape), axis)
    joined = st.join(lo, hi, b)
    return st.reshape(st.permute(joined, [perm.index(d) for d in range(len(perm))], b), shape, False, b)


def _group_parity(axis: int, rank: int, groups: int, period: int, b):
    """A boolean tensor, broadcastable against ``_halves``' results, true where the pair group's
    index ``g`` has ``(g // period)`` odd."""
    s, st = _s(), _st()
    g = st.arange(0, groups, b)
    odd = s.not_equal(s.and_(s.floordiv(g, period, b), 1, b), 0, b)
    return st.reshape(odd, [1] * axis + [groups, 1] + [1] * (rank - 1 - axis), False, b)


def _sort(x, axis: int, descending: bool, b):
    s = _s()
    shape = list(x.type.shape)
    n = shape[axis]
    k = _log2(n, "sort")
    for stage in range(1, k + 1):
        size = 1 << stage
        for sub in range(stage - 1, -1, -1):
            half = 1 << sub
            lo, hi = _halves(x, axis, half, b)
            groups = n // (2 * half)
            out_of_order = s.greater_than(lo, hi, b)
            in_order_desc = s.less_than(lo, hi, b)
            if size == n:  # the last merge runs in the requested direction everywhere
                swap = in_order_desc if descending else out_of_order
            else:  # earlier merges alternate direction between blocks of `size`
                flip = _group_parity(axis, len(shape), groups, size // (2 * half), b)
                if descending:
                    flip = s.not_(flip, b)
                swap = s.where(flip, in_order_desc, out_of_order, b)
            x = _unhalves(s.where(swap, hi, lo, b), s.where(swap, lo, hi, b), axis, shape, b)
    return x


@builtin
def sort(x, dim=None, descending=False, _builder=None):
    """Sort along ``dim`` (default: the last), ascending unless ``descending``; the length along
    ``dim`` must be a power of two."""
    x = _block(x, "sort", _builder)
    return _sort(x, _axis(x, dim, "sort"), bool(_u(descending)), _builder)


@builtin
def topk(x, k, dim=None, _builder=None):
    """The ``k`` largest values along ``dim`` (default: the last), in descending order."""
    st = _st()
    x = _block(x, "topk", _builder)
    axis = _axis(x, dim, "topk")
    k = int(_u(k))
    _log2(k, "topk's k")
    x = _sort(x, axis, True, _builder)
    shape = list(x.type.shape)
    while shape[axis] > k:
        lo, _ = _halves(x, axis, shape[axis] // 2, _builder)
        shape[axis] //= 2
        x = st.reshape(lo, shape, False, _builder)
    return x


@builtin
def flip(x, dim=None, _builder=None):
    """Reverse the order of the elements along ``dim`` (default: the last; a power-of-two length)."""
    x = _block(x, "flip", _builder)
    axis = _axis(x, dim, "flip")
    shape = list(x.type.shape)
    k = _log2(shape[axis], "flip")
    for sub in range(k):  # swapping the halves of every block of 2^(sub+1) reverses each index bit
        lo, hi = _halves(x, axis, 1 << sub, _builder)
        x = _unhalves(hi, lo, axis, shape, _builder)
    return x


@builtin
def gather(src, index, axis, _builder=None):
    """``out[..., i, ...] = src[..., index[..., i, ...], ...]`` along ``axis``; ``src`` and ``index``
    have the same rank and the same extent in every other dimension.  One ``tt.gather`` op; an
    index outside ``[0, src.shape[axis])`` gives an unspecified value (Tritium's backends read the
    element at ``index mod src.shape[axis]``, never outside ``src``)."""
    st = _st()
    src, index = _block(src, "gather", _builder), _block(index, "gather", _builder)
    axis = _axis(src, axis, "gather")
    rank = len(src.type.shape)
    if len(index.type.shape) != rank:
        raise ValueError(f"gather: src has rank {rank} but index has rank {len(index.type.shape)}")
    if not index.type.scalar.is_int():
        raise TypeError(f"gather's index must be integers, got {index.type.scalar}")
    for d in range(rank):
        if d != axis and src.type.shape[d] != index.type.shape[d]:
            raise ValueError(f"gather: src and index differ in dimension {d} "
                             f"({src.type.shape[d]} vs {index.type.shape[d]}), which is not the gather axis")
    return st.gather(src, index, axis, _builder)


@builtin
def histogram(input, num_bins, mask=None, _builder=None):
    """Counts (int32) of the values ``0 .. num_bins - 1`` in a 1-D integer tensor; values outside
    that range, and elements whose ``mask`` is false, are not counted."""
    s, st = _s(), _st()
    x = _block(input, "histogram", _builder)
    if len(x.type.shape) != 1 or not x.type.scalar.is_int():
        raise TypeError(f"histogram needs a 1-D integer tensor, got {x.type}")
    nb = int(_u(num_bins))
    hit = s.equal(st.expand_dims(x, [1], _builder),
                  st.reshape(st.arange(0, nb, _builder), [1, nb], False, _builder), _builder)
    mask = _u(mask)
    if mask is not None:
        m = s.broadcast_to_shape(s.to_tensor(mask, _builder), list(x.type.shape), _builder)
        if not m.type.scalar.is_bool():
            raise TypeError(f"histogram's mask must be boolean, got {m.type.scalar}")
        hit = s.and_(hit, st.expand_dims(m, [1], _builder), _builder)
    counts = s.cast(hit, tl.int32, _builder)
    return st.reduce([counts], 0, lambda b, a: [s.add(a[0], a[1], b)], _builder)[0]


@builtin
def reduce_or(input, axis, keep_dims=False, _builder=None):
    s = _s()
    x = s.to_tensor(input, _builder)
    if not x.type.scalar.is_int():
        raise TypeError(f"reduce_or needs integers, got {x.type.scalar}")
    return _st().reduce([x], _u(axis), lambda b, a: [s.or_(a[0], a[1], b)], _builder, bool(_u(keep_dims)))[0]


@builtin
def add(x, y, sanitize_overflow=True, _builder=None):
    """``x + y`` (integer overflow wraps; ``sanitize_overflow`` is accepted and has no effect)."""
    return _s().add(x, y, _builder)


@builtin
def sub(x, y, sanitize_overflow=True, _builder=None):
    return _s().sub(x, y, _builder)


@builtin
def mul(x, y, sanitize_overflow=True, _builder=None):
    return _s().mul(x, y, _builder)


@jit
def swizzle2d(i, j, size_i, size_j, size_g):
    """Renumber the tiles of a ``size_i x size_j`` row-major grid so that consecutive ids walk
    down columns within groups of ``size_g`` rows (the grouped ordering of the matmul tutorial)."""
    linear = i * size_j + j
    per_group = size_g * size_j
    first_row = (linear // per_group) * size_g
    rows = tl.minimum(size_i - first_row, size_g)
    in_group = linear % per_group
    return first_row + in_group % rows, in_group // rows
