"""Tuples in kernels: tuple and named-tuple arguments (specialization, signature, cache keys,
flattened parameters), tl.tuple / tl.tuple_type, tuples through @jit calls, loops and ifs, and
the errors for what tuples cannot do."""
from typing import NamedTuple

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.compiler import ASTSource
from tritium.frontend.errors import CompilationError
from tritium.runtime.specialize import flatten_tuple_args, specialize_arg


class Pair(NamedTuple):
    lo: object
    hi: object


class View(NamedTuple):
    ptr: object
    shape: tuple
    stride: tuple


def _rand(n, seed=None):
    return np.random.default_rng(seed).random(n).astype(np.float32)


@triton.jit
def nested_kernel(ptrs, out_ptr, meta):
    x_ptr, (y_ptr, scale) = ptrs
    n, nothing = meta[0], meta[2]
    BLOCK: tl.constexpr = meta[1]  # a plain assignment would make the number a run-time scalar
    tl.static_assert(nothing is None)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale + tl.load(y_ptr + offs, mask=mask), mask=mask)


def test_nested_tuple_arguments_with_constexpr_none_and_scalars():
    x, y = _rand(50), _rand(50)
    out = np.full(64, np.nan, np.float32)
    nested_kernel[(1,)]((x, (y, 2.5)), out, (50, tl.constexpr(64), None))
    np.testing.assert_allclose(out[:50], x * 2.5 + y, rtol=1e-6)
    assert np.isnan(out[50:]).all()  # masked lanes untouched


def test_tuple_key_and_flattening():
    class P:
        name = "t"
        do_not_specialize = do_not_specialize_on_alignment = False
    x = np.zeros(4, np.float32)
    k = specialize_arg((x, (1, None, tl.constexpr(4)), 7, Pair(3, 32)), P)
    assert k[0] == "t" and k[1] is tuple
    assert k[2][1] == ("t", tuple, (("1",), ("n",), ("c", ("int", 4))))
    assert k[2][2] == ("a", "i32", "")
    assert k[2][3][1] is Pair and k[2][3][2] == (("a", "i32", ""), ("a", "i32", "D"))
    vals, keys, names = flatten_tuple_args([(x, (1, None, 5))], [k[:2] + (k[2][:2],)], ["t"])
    assert names == ["t[0]", "t[1][0]", "t[1][1]", "t[1][2]"]
    assert vals[0] is x and vals[1:] == [1, None, 5]


def test_signature_flattens_leaves_and_constexprs_by_path():
    src = ASTSource(nested_kernel, {"ptrs": ("*fp32", ("*fp32", "fp32")), "out_ptr": "*fp32",
                                    "meta": ["i32", "constexpr", "constexpr"]},
                    constexprs={(2, 1): 64, (2, 2): None}, attrs={(0, 0): {"tt.divisibility": 16}})
    assert src.signature["meta"] == ("i32", "constexpr", "constexpr")  # a JSON list reads as a tuple
    k = triton.compile(src, target="interpreter")
    assert k.metadata["arg_names"] == ["ptrs[0]", "ptrs[1][0]", "ptrs[1][1]", "out_ptr", "meta[0]"]
    assert list(k.runtime_signature.values()) == ["*fp32", "*fp32", "fp32", "*fp32", "i32"]
    assert "tt.divisibility = 16" in k.asm["ttir"].split("\n", 3)[1] + k.asm["ttir"]


@triton.jit
def const_in_tuple_kernel(out_ptr, t):
    tl.store(out_ptr + tl.arange(0, t[1]), tl.full([t[1]], t[0], tl.int32))


def test_constexprs_inside_a_tuple_compile_separately_and_hit_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    const_in_tuple_kernel.kernel_cache.clear()
    out = np.full(16, -1, np.int32)
    a = const_in_tuple_kernel[(1,)](out, (5, tl.constexpr(8)))
    np.testing.assert_array_equal(out, [5] * 8 + [-1] * 8)
    b = const_in_tuple_kernel[(1,)](out, (6, tl.constexpr(16)))
    np.testing.assert_array_equal(out, [6] * 16)
    assert a is not b and a.asm["ttir"] != b.asm["ttir"]
    assert const_in_tuple_kernel[(1,)](out, (7, tl.constexpr(8))) is a  # same constexprs: same kernel
    np.testing.assert_array_equal(out[:8], [7] * 8)
    # the on-disk cache: a fresh in-memory cache finds the same entry, a different constexpr does not
    entries = {p.parent for p in tmp_path.rglob("*.ttir")}
    assert len(entries) == 2
    const_in_tuple_kernel.kernel_cache.clear()
    c = const_in_tuple_kernel[(1,)](out, (5, tl.constexpr(8)))
    assert c.asm["ttir"] == a.asm["ttir"] and {p.parent for p in tmp_path.rglob("*.ttir")} == entries


@triton.jit
def _make_view(ptr, shape, stride):
    return View(ptr=ptr, shape=shape, stride=stride)


@triton.jit
def _swap(p):
    return Pair(p.hi, p.lo)


@triton.jit
def namedtuple_kernel(src, dst, pair, B: tl.constexpr):
    s = _make_view(src.ptr, src.shape, src.stride)
    r = tl.arange(0, B)
    mask = (r[:, None] < s.shape[0]) & (r[None, :] < s.shape[1])
    x = tl.load(s.ptr + r[:, None] * s.stride[0] + r[None, :] * s.stride[1], mask=mask, other=0.0)
    q = _swap(pair)
    tl.store(dst.ptr + r[:, None] * dst.stride[0] + r[None, :] * dst.stride[1], x * q.lo + q.hi, mask=mask)


def test_namedtuple_arguments_fields_and_helpers():
    src = np.random.default_rng().random((5, 7)).astype(np.float32)
    dst = np.full((5, 7), np.nan, np.float32)
    namedtuple_kernel[(1,)](View(src, (5, 7), (7, 1)), View(dst, (5, 7), (7, 1)), Pair(1.0, 3.0), B=8)
    np.testing.assert_allclose(dst, src * 3.0 + 1.0, rtol=1e-6)


@triton.jit
def loops_kernel(x_ptr, out_ptr, n, flag, N: tl.constexpr):
    offs = tl.arange(0, N)
    acc = (tl.zeros([N], tl.float32), (tl.zeros([N], tl.float32) + 1.0, 0))
    for i in range(n):
        x = tl.load(x_ptr + i * N + offs)
        acc = (acc[0] + x, (acc[1][0] * 2.0, acc[1][1] + 1))
    if flag > 0:
        acc = (acc[0] * 10.0, acc[1])
    else:
        acc = (acc[0], (acc[1][0] - 1.0, acc[1][1]))
    j = 0
    w = (0, acc[0])
    while j < 2:
        w = (w[0] + 1, w[1] + 1.0)
        j += 1
    tl.store(out_ptr + offs, w[1])
    tl.store(out_ptr + N + offs, acc[1][0] + acc[1][1] + w[0])


@pytest.mark.parametrize("flag", [0, 1])
def test_tuples_carried_by_loops_and_merged_by_if(flag):
    x = np.random.default_rng().random((3, 16)).astype(np.float32)
    out = np.full(32, np.nan, np.float32)
    loops_kernel[(1,)](x, out, 3, flag, N=16)
    s = x.astype(np.float64).sum(0)
    np.testing.assert_allclose(out[:16], (s * 10 if flag else s) + 2, rtol=1e-5)
    np.testing.assert_allclose(out[16:], (8.0 if flag else 7.0) + 3 + 2)


@triton.jit
def tuple_ops_kernel(out_ptr):
    # annotated: a plain assignment would make the numbers run-time scalars
    t: tl.constexpr = tl.tuple((1, 2)) + (3,)
    u: tl.constexpr = (0,) + t
    tl.static_assert(len(u) == 4)
    tl.static_assert(u == (0, 1, 2, 3))
    tl.static_assert(tl.tuple((1, 2)) != (1, 3))
    tl.static_assert(u[1:3] == (1, 2))
    sq = tl.tuple([v * v for v in u if v > 0])
    for i in tl.static_range(len(sq)):
        tl.store(out_ptr + i, sq[i])
    for i, v in enumerate(u):
        tl.store(out_ptr + 3 + i, v + 10)


def test_tuple_operations_at_compile_time():
    out = np.full(8, -1, np.int32)
    tuple_ops_kernel[(1,)](out)
    np.testing.assert_array_equal(out, [1, 4, 9, 10, 11, 12, 13, -1])


def test_tl_tuple_and_types():
    t = tl.tuple([1, 2.0])
    assert isinstance(t, tuple) and t.values == [1, 2.0] and len(t) == 2
    assert t.type == tl.tuple_type([tl.constexpr_type(1), tl.constexpr_type(2.0)])
    assert tl.constexpr(3).type == tl.constexpr_type(3) and tl.constexpr(3).type != tl.constexpr_type(4)
    named = tl.tuple([1, 2], tl.tuple_type([tl.constexpr_type(1), tl.constexpr_type(2)], ["a", "b"]))
    assert named.b == 2 and named.type.fields == ["a", "b"]
    assert (t + (3,)) == (1, 2.0, 3) and type(t + (3,)) is tl.tuple


@triton.jit
def setitem_kernel():
    t = tl.tuple([5, 6, 7])
    t[0] = 0


@triton.jit
def bad_loop_kernel(x_ptr, n):
    t = (tl.load(x_ptr), 1.0)
    for i in range(n):
        t = (t[0], 1.0, 2.0)
    tl.store(x_ptr, t[0])


def test_tuple_errors_point_at_the_line():
    with pytest.raises(CompilationError, match=r"item assignment `t\[0\] = \.\.\.`") as e:
        setitem_kernel[(1,)]()
    assert "t[0] = 0" in str(e.value)
    with pytest.raises(CompilationError, match="loop-carried tuple 't' is a tuple of 2 before the loop but a tuple of 3"):
        bad_loop_kernel[(1,)](np.zeros(1, np.float32), 2)


def test_tuple_kernel_compiles_for_cuda90():
    pytest.importorskip("tritium_nvidia")
    src = ASTSource(nested_kernel, {"ptrs": ("*fp32", ("*fp32", "fp32")), "out_ptr": "*fp32",
                                    "meta": ("i32", "constexpr", "constexpr")}, constexprs={(2, 1): 64, (2, 2): None})
    try:
        k = triton.compile(src, target="cuda:90", stage="ptx")
    except (RuntimeError, FileNotFoundError) as e:  # no LLVM NVPTX target / toolchain here
        pytest.skip(f"cannot build for cuda:90 here: {e}")
    entry = k.asm["ptx"].split(".entry", 1)[1].split(")", 1)[0]
    assert entry.count(".param") == 5  # x, y, scale, out, n: the tuples' run-time leaves


def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    return torch


def test_tuple_arguments_on_the_gpu():
    torch = _cuda()
    x = torch.rand(300, device="cuda")
    y = torch.rand(300, device="cuda")
    out = torch.full((320,), float("nan"), device="cuda")
    for _ in range(2):  # the second launch goes through the cached kernel
        nested_kernel[(1,)]((x, (y, 0.5)), out, (300, tl.constexpr(512), None))
    torch.testing.assert_close(out[:300], x * 0.5 + y)
    assert torch.isnan(out[300:]).all()
    src = torch.rand((6, 9), device="cuda")
    dst = torch.full((6, 9), float("nan"), device="cuda")
    namedtuple_kernel[(1,)](View(src, src.shape, src.stride()), View(dst, dst.shape, dst.stride()), Pair(2.0, 4.0), B=16)
    torch.testing.assert_close(dst, src * 4.0 + 2.0)
