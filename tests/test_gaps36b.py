"""Triton 3.6 language additions, second part: ``tl.map_elementwise``, ``tl.dot`` with several
batch dimensions, ``knobs.runtime.override_arch`` and constexpr assignments."""
import importlib.util

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium import CompilationError

HAS_NVIDIA = importlib.util.find_spec("tritium_nvidia") is not None
needs_nvidia = pytest.mark.skipif(not HAS_NVIDIA, reason="needs the tritium-nvidia plugin (compile-only)")


def _compile(fn, signature, constexprs=None, target="interpreter"):
    return triton.compile(triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=constexprs or {}),
                          target=target)


# --- tl.map_elementwise --------------------------------------------------------------------------

@triton.jit
def _clamp_branches(x, lo, hi):
    if x < lo:
        return lo
    elif x > hi:
        return hi
    return x


@triton.jit
def _map_clamp_kernel(X, Z, lo, hi, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(Z + offs, tl.map_elementwise(_clamp_branches, tl.load(X + offs), lo, hi))


def test_map_elementwise_branches_per_element():
    rs = np.random.RandomState(1)
    x = rs.uniform(-5, 5, (8, 32)).astype(np.float32)
    z = torch.full((8, 32), float("nan"))
    _map_clamp_kernel[(1,)](torch.from_numpy(x), z, -1.5, 2.5, R=8, C=32)
    np.testing.assert_array_equal(z.numpy(), np.clip(x, np.float32(-1.5), np.float32(2.5)))


@triton.jit
def _collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@triton.jit
def _map_loop_kernel(X, Z, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(Z + offs, tl.map_elementwise(_collatz_steps, tl.load(X + offs)))


def _collatz_ref(v):
    s = 0
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        s += 1
    return s


def test_map_elementwise_loop_per_element():
    rs = np.random.RandomState(2)
    x = rs.randint(1, 200, 64).astype(np.int64)
    z = torch.full((64,), -7, dtype=torch.int32)
    _map_loop_kernel[(1,)](torch.from_numpy(x), z, B=64)
    np.testing.assert_array_equal(z.numpy(), [_collatz_ref(int(v)) for v in x])


@triton.jit
def _swap_pairs(a0, a1, b0, b1):
    # the pack's elements are consecutive: (a0, a1) are elements 2i and 2i+1
    return a0 + b0, a1 + b1, a1, a0


@triton.jit
def _map_pack_kernel(A, B, S, W, N: tl.constexpr):
    offs = tl.arange(0, N)
    s, w = tl.map_elementwise(_swap_pairs, tl.load(A + offs), tl.load(B + offs), pack=2)
    tl.store(S + offs, s)
    tl.store(W + offs, w)


def test_map_elementwise_pack_groups_consecutive_elements():
    rs = np.random.RandomState(3)
    a = rs.randint(-1000, 1000, 32).astype(np.int32)
    b = rs.randint(-1000, 1000, 32).astype(np.int32)
    s = torch.full((32,), -7, dtype=torch.int32)
    w = torch.full((32,), -7, dtype=torch.int32)
    _map_pack_kernel[(1,)](torch.from_numpy(a), torch.from_numpy(b), s, w, N=32)
    np.testing.assert_array_equal(s.numpy(), a + b)
    np.testing.assert_array_equal(w.numpy(), a.reshape(-1, 2)[:, ::-1].reshape(-1))


@triton.jit
def _two_values(a):
    return a, a + 1


@triton.jit
def _map_bad_pack_kernel(A, N: tl.constexpr, P: tl.constexpr):
    x = tl.map_elementwise(_two_values, tl.load(A + tl.arange(0, N)), pack=P)


def test_map_elementwise_pack_must_be_power_of_two():
    with pytest.raises(CompilationError) as e:
        _compile(_map_bad_pack_kernel, {"A": "*i32"}, {"N": 16, "P": 3})
    assert "pack must be a power of 2, got 3" in str(e.value)
    assert "tl.map_elementwise(_two_values" in str(e.value)


@triton.jit
def _pair_sums(a0, a1, a2, a3):
    return a0 + a1, a2 + a3


@triton.jit
def _map_short_results_kernel(A, N: tl.constexpr):
    x = tl.map_elementwise(_pair_sums, tl.load(A + tl.arange(0, N)), pack=4)


def test_map_elementwise_results_must_fill_the_pack():
    with pytest.raises(CompilationError) as e:
        _compile(_map_short_results_kernel, {"A": "*i32"}, {"N": 16})
    assert "must return a multiple of 4 values" in str(e.value)


def test_map_elementwise_ttir_has_region():
    k = _compile(_map_clamp_kernel, {"X": "*fp32", "Z": "*fp32", "lo": "fp32", "hi": "fp32"}, {"R": 8, "C": 32})
    ttir = k.asm["ttir"]
    assert '"tt.map_elementwise"' in ttir and "tt.map_elementwise.return" in ttir and "scf.if" in ttir


@needs_nvidia
def test_map_elementwise_compiles_for_sm90():
    k = _compile(_map_loop_kernel, {"X": "*i64", "Z": "*i32"}, {"B": 64}, target="cuda:90")
    assert "tt.map_elementwise" in k.asm["ttgir"] and k.asm["cubin"]
    k = _compile(_map_pack_kernel, {"A": "*i32", "B": "*i32", "S": "*i32", "W": "*i32"}, {"N": 256},
                 target="cuda:90")
    assert k.asm["cubin"]


# --- tl.dot with several batch dimensions --------------------------------------------------------

@triton.jit
def _dot_nd_kernel(X, Y, Z, RANK: tl.constexpr, TRANS_A: tl.constexpr, TRANS_B: tl.constexpr):
    x = tl.load(X + tl.arange(0, 256 << RANK)).reshape([2] * (RANK - 2) + [32, 32])
    y = tl.load(Y + tl.arange(0, 256 << RANK)).reshape([2] * (RANK - 2) + [32, 32])
    if TRANS_A:
        x = tl.trans(x)
    if TRANS_B:
        y = tl.trans(y)
    tl.store(Z + tl.arange(0, 256 << RANK), tl.dot(x, y).reshape([256 << RANK]))


@pytest.mark.parametrize("rank,trans_a,trans_b", [(4, False, True), (5, True, False)])
def test_dot_several_batch_dimensions(rank, trans_a, trans_b):
    shape = (2,) * (rank - 2) + (32, 32)
    g = torch.Generator().manual_seed(rank)
    a = torch.randint(-4, 5, shape, generator=g).float()
    b = torch.randint(-4, 5, shape, generator=g).float()
    c = torch.full(shape, float("nan"))
    _dot_nd_kernel[(1,)](a, b, c, rank, trans_a, trans_b)
    aa = a.double().transpose(-1, -2) if trans_a else a.double()
    bb = b.double().transpose(-1, -2) if trans_b else b.double()
    np.testing.assert_array_equal(c.numpy(), (aa @ bb).float().numpy())


@triton.jit
def _dot_nd_mismatch_kernel(X):
    x = tl.load(X + tl.arange(0, 2048)).reshape(2, 2, 16, 32)
    y = tl.load(X + tl.arange(0, 2048)).reshape(4, 1, 32, 16)
    tl.dot(x, y)


def test_dot_batch_dimensions_must_agree():
    with pytest.raises(CompilationError) as e:
        _compile(_dot_nd_mismatch_kernel, {"X": "*fp32"})
    assert "the batch dimensions differ" in str(e.value) and "[2, 2] vs [4, 1]" in str(e.value)
    assert "tl.dot(x, y)" in str(e.value)


@needs_nvidia
def test_dot_several_batch_dimensions_compiles_for_sm90():
    k = _compile(_dot_nd_kernel, {"X": "*bf16", "Y": "*bf16", "Z": "*fp32"},
                 {"RANK": 5, "TRANS_A": True, "TRANS_B": True}, target="cuda:90")
    assert "tt.dot" in k.asm["ttgir"] and k.asm["cubin"]


# --- the arch= option and knobs.runtime.override_arch ---------------------------------------------

@triton.jit
def _arch_simple(data, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(data + offs) * 1.5 + 1.0)


@needs_nvidia
@pytest.mark.parametrize("arch", ["sm80", "sm_86", "sm90"])
@pytest.mark.parametrize("by_knob", [False, True])
def test_arch_names_the_compile_target(arch, by_knob):
    import re
    data, out = np.zeros(128, np.float32), np.zeros(128, np.float32)
    if by_knob:
        old = triton.knobs.runtime.override_arch
        triton.knobs.runtime.override_arch = arch
        try:
            h = _arch_simple.warmup(data, out, grid=(1,), backend="nvidia")
        finally:
            triton.knobs.runtime.override_arch = old
    else:
        h = _arch_simple.warmup(data, out, grid=(1,), arch=arch, backend="nvidia")
    cc = arch.removeprefix("sm").removeprefix("_")
    assert re.search(r'cuda:(\d+)', h.asm["ttgir"]).group(1) == cc
    assert f".target sm_{cc}" in h.asm["ptx"]


@needs_nvidia
def test_arch_option_wins_over_the_knob_and_the_named_target():
    import re
    src = triton.compiler.ASTSource(fn=_arch_simple, signature={"data": "*fp32", "out": "*fp32"}, constexprs={})
    k = triton.compile(src, target="cuda:90", options={"arch": "sm80"})
    assert re.search(r'cuda:(\d+)', k.asm["ttgir"]).group(1) == "80"
    old = triton.knobs.runtime.override_arch
    triton.knobs.runtime.override_arch = "sm86"
    try:
        h = _arch_simple.warmup(np.zeros(128, np.float32), np.zeros(128, np.float32), grid=(1,), arch="sm80",
                                backend="nvidia")
    finally:
        triton.knobs.runtime.override_arch = old
    assert re.search(r'cuda:(\d+)', h.asm["ttgir"]).group(1) == "80"


# --- plain assignment of a compile-time number -----------------------------------------------------

@triton.jit
def _assign_rules(X, B: tl.constexpr):
    plain = B  # a run-time scalar of the number's type
    tl.static_assert(plain.dtype == tl.int32)
    half = 0.5
    tl.static_assert(half.dtype == tl.float32)
    kept: tl.constexpr = B * 2  # stays a compile-time constant
    tl.static_assert(kept == 2 * B)
    offs = tl.arange(0, kept)
    tl.store(X + offs, offs * half + plain)


def test_plain_assignment_makes_a_scalar_annotated_keeps_constexpr():
    x = torch.full((32,), float("nan"))
    _assign_rules[(1,)](x, B=16)
    np.testing.assert_array_equal(x.numpy(), np.arange(32, dtype=np.float32) * 0.5 + 16)


@triton.jit
def _plain_arange_bound(X):
    N = 16
    tl.store(X + tl.arange(0, N), 1.0)


def test_arange_of_a_plainly_assigned_number_is_rejected():
    with pytest.raises(CompilationError) as e:
        _compile(_plain_arange_bound, {"X": "*fp32"})
    assert "arange's arguments must be constexpr" in str(e.value) and "tl.arange(0, N)" in str(e.value)
