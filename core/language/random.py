"""Counter-based random numbers: Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy
as 1, 2, 3", SC'11), with ``triton.language``'s names and results.

``randint(seed, offset)`` runs Philox on the counter ``(offset, 0, 0, 0)`` with the key
``(seed & 0xffffffff, seed >> 32)`` and returns the first output word; a kernel that draws
``tl.rand(seed, offsets)`` for distinct offsets gets independent streams.  A 64-bit offset fills
the first two counter words (low, high), so ``randint`` always yields uint32; ``philox`` called on
64-bit counters runs Philox 4x64 with its own constants.  The functions are ``@jit`` device functions written in the
language itself, so every backend runs them unchanged.
"""
from __future__ import annotations

from .. import language as tl
from ..runtime.jit import jit

N_ROUNDS_DEFAULT = tl.constexpr(10)

# Philox 4x32 multipliers and Weyl key increments (golden ratio, sqrt(3) - 1)
PHILOX_32_ROUND_A = tl.constexpr(0xD2511F53)
PHILOX_32_ROUND_B = tl.constexpr(0xCD9E8D57)
PHILOX_32_KEY_A = tl.constexpr(0x9E3779B9)
PHILOX_32_KEY_B = tl.constexpr(0xBB67AE85)
PHILOX_64_ROUND_A = tl.constexpr(0xD2E7470EE14C6C93)
PHILOX_64_ROUND_B = tl.constexpr(0xCA5A826395121157)
PHILOX_64_KEY_A = tl.constexpr(0x9E3779B97F4A7C15)
PHILOX_64_KEY_B = tl.constexpr(0xBB67AE8584CAA73B)


@jit
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """``n_rounds`` Philox rounds on the counter ``(c0, c1, c2, c3)`` (unsigned, all of one width)
    with the key ``(k0, k1)``."""
    if c0.dtype == tl.uint32:
        ra: tl.constexpr = PHILOX_32_ROUND_A
        rb: tl.constexpr = PHILOX_32_ROUND_B
        ka: tl.constexpr = PHILOX_32_KEY_A
        kb: tl.constexpr = PHILOX_32_KEY_B
    else:
        tl.static_assert(c0.dtype == tl.uint64, "philox_impl needs uint32 or uint64 counters")
        ra: tl.constexpr = PHILOX_64_ROUND_A
        rb: tl.constexpr = PHILOX_64_ROUND_B
        ka: tl.constexpr = PHILOX_64_KEY_A
        kb: tl.constexpr = PHILOX_64_KEY_B
    for _ in tl.static_range(n_rounds):
        a0 = c0
        a2 = c2
        c0 = tl.umulhi(a2, rb) ^ c1 ^ k0
        c2 = tl.umulhi(a0, ra) ^ c3 ^ k1
        c1 = a2 * rb
        c3 = a0 * ra
        k0 = k0 + ka
        k1 = k1 + kb
    return c0, c1, c2, c3


@jit
def philox(seed, c0, c1, c2, c3, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Philox on a counter of four integers of one width (32 or 64 bits, reinterpreted as
    unsigned) keyed by the integer ``seed``; returns four unsigned words."""
    tl.static_assert(seed.dtype.is_int(), "philox's seed must be an integer")
    seed = seed.to(tl.uint64)
    if c0.dtype.primitive_bitwidth == 32:
        c0 = c0.to(tl.uint32, bitcast=True)
        c1 = c1.to(tl.uint32, bitcast=True)
        c2 = c2.to(tl.uint32, bitcast=True)
        c3 = c3.to(tl.uint32, bitcast=True)
        k0 = (seed & 0xFFFFFFFF).to(tl.uint32)
        k1 = ((seed >> 32) & 0xFFFFFFFF).to(tl.uint32)
    else:
        tl.static_assert(c0.dtype.primitive_bitwidth == 64, "philox's counter must have 32 or 64 bits")
        c0 = c0.to(tl.uint64, bitcast=True)
        c1 = c1.to(tl.uint64, bitcast=True)
        c2 = c2.to(tl.uint64, bitcast=True)
        c3 = c3.to(tl.uint64, bitcast=True)
        k0 = seed
        k1 = seed * 0
    return philox_impl(c0, c1, c2, c3, k0, k1, n_rounds)


@jit
def randint4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of random uint32 from Philox 4x32 on the counter ``(lo, hi, 0, 0)``, where
    ``lo``/``hi`` are the low and high 32 bits of ``offset`` (``hi`` is 0 for offsets of 32 bits
    or fewer)."""
    lo = offset.to(tl.uint32)
    z = lo * 0
    if offset.dtype.primitive_bitwidth > 32:
        hi = (offset >> 32).to(tl.uint32)
    else:
        hi = z
    return philox(seed, lo, hi, z, z, n_rounds)


@jit
def randint(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A block of random uint32: the first word of ``randint4x``."""
    r0, r1, r2, r3 = randint4x(seed, offset, n_rounds)
    return r0


@jit
def uint_to_uniform_float(x):
    """Random integers to floats uniform in [0, 1): the integer read as signed, folded onto the
    non-negative half (``-x - 1`` for negative ``x``) and scaled by about 2**-31 (2**-63)."""
    if x.dtype.primitive_bitwidth == 32:
        x = x.to(tl.int32, bitcast=True)
        scale: tl.constexpr = 4.6566127342e-10
    else:
        tl.static_assert(x.dtype.primitive_bitwidth == 64, "uint_to_uniform_float needs 32- or 64-bit integers")
        x = x.to(tl.int64, bitcast=True)
        scale: tl.constexpr = 1.0842020432385337e-19
    x = tl.where(x < 0, -x - 1, x)
    return x * scale


@jit
def rand(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A block of fp32 values uniform in [0, 1)."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@jit
def rand4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of fp32 values uniform in [0, 1)."""
    i1, i2, i3, i4 = randint4x(seed, offset, n_rounds)
    return uniform_float4(i1, i2, i3, i4)


@jit
def uniform_float4(i1, i2, i3, i4):
    return uint_to_uniform_float(i1), uint_to_uniform_float(i2), uint_to_uniform_float(i3), uint_to_uniform_float(i4)


@jit
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniform blocks to two standard normal blocks."""
    u1 = tl.maximum(1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = tl.sqrt(-2.0 * tl.log(u1))
    return r * tl.cos(th), r * tl.sin(th)


@jit
def randn(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A block of fp32 standard normal values (Box-Muller on the first two Philox words)."""
    i1, i2, i3, i4 = randint4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))
    return n1


@jit
def randn4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of fp32 standard normal values."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
