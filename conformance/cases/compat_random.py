"""``tl.randint``/``randint4x``/``rand``/``randn``/``philox``: Philox 4x32-10 (a 64-bit offset fills
the first two counter words; ``philox`` on 64-bit counters runs 4x64-10), checked bit for bit against an independent numpy model of the published algorithm."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Out, Rand
from ._common import BLOCK, GRID, N

_M32 = (0xD2511F53, 0xCD9E8D57)
_W32 = (0x9E3779B9, 0xBB67AE85)
_M64 = (0xD2E7470EE14C6C93, 0xCA5A826395121157)
_W64 = (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)


def philox4x32(ctr, key, rounds=10):
    """Philox4x32: ``ctr`` four uint32 arrays, ``key`` two uint32 scalars."""
    c = [np.asarray(v, np.uint64) for v in ctr]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    mask = np.uint64(0xFFFFFFFF)
    for _ in range(rounds):
        p0 = np.uint64(_M32[0]) * c[0]
        p1 = np.uint64(_M32[1]) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & mask, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & mask]
        k0, k1 = (k0 + np.uint64(_W32[0])) & mask, (k1 + np.uint64(_W32[1])) & mask
    return [v.astype(np.uint32) for v in c]


def philox4x64(ctr, key, rounds=10):
    """Philox4x64 with Python integers (128-bit products)."""
    m = (1 << 64) - 1
    out = []
    for c0 in ctr[0]:
        c = [int(c0), int(ctr[1]), int(ctr[2]), int(ctr[3])]
        k0, k1 = key
        for _ in range(rounds):
            p0, p1 = _M64[0] * c[0], _M64[1] * c[2]
            c = [(p1 >> 64) ^ c[1] ^ k0, p1 & m, (p0 >> 64) ^ c[3] ^ k1, p0 & m]
            k0, k1 = (k0 + _W64[0]) & m, (k1 + _W64[1]) & m
        out.append(c)
    return [np.array([o[i] for o in out], np.uint64) for i in range(4)]


def _words(seed, offs, rounds=10):
    s = seed & (2**64 - 1)
    z = np.zeros_like(offs, dtype=np.uint32)
    return philox4x32([offs.astype(np.uint32), z, z, z], (s & 0xFFFFFFFF, s >> 32), rounds)


def _uniform(w):
    i = w.view(np.int32)
    i = np.where(i < 0, -(i.astype(np.int64)) - 1, i).astype(np.int32)
    return (i.astype(np.float32) * np.float32(4.6566127342e-10)).astype(np.float64)


def _normal(w1, w2):
    u1 = np.maximum(np.float32(1e-7), _uniform(w1).astype(np.float32)).astype(np.float64)
    th = 6.283185307179586 * _uniform(w2)
    r = np.sqrt(-2.0 * np.log(u1))
    return r * np.cos(th), r * np.sin(th)


@triton.jit
def randint_kernel(out_ptr, seed, FN: tl.constexpr, ROUNDS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if FN == "randint":
        r = tl.randint(seed, offs, ROUNDS)
    elif FN == "rand":
        r = tl.rand(seed, offs, n_rounds=ROUNDS)
    else:
        r = tl.randn(seed, offs)
    tl.store(out_ptr + offs, r)


@triton.jit
def randint4x_kernel(a_ptr, b_ptr, c_ptr, d_ptr, seed, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if FN == "randint4x":
        a, b, c, d = tl.randint4x(seed, offs)
    elif FN == "rand4x":
        a, b, c, d = tl.rand4x(seed, offs)
    elif FN == "randn4x":
        a, b, c, d = tl.randn4x(seed, offs)
    else:  # philox on an explicit counter: (offs, 7, offs * 3, 11)
        a, b, c, d = tl.philox(seed, offs, offs * 0 + 7, offs * 3, offs * 0 + 11)
    tl.store(a_ptr + offs, a)
    tl.store(b_ptr + offs, b)
    tl.store(c_ptr + offs, c)
    tl.store(d_ptr + offs, d)


@triton.jit
def randint64_kernel(out_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    big = offs.to(tl.int64) * 3 + (2**40 + 5)
    tl.store(out_ptr + offs, tl.randint(seed, big))


@triton.jit
def philox64_kernel(out_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    big = offs.to(tl.int64) + 2**40
    z = big * 0
    a, b, c, d = tl.philox(seed, big, z, z, z)
    tl.store(out_ptr + offs, a)


@triton.jit
def dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    # the tutorial's seeded dropout
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


_OFFS = np.arange(N)
_SEEDS = (0, 42, 123456789012, 2**63 + 5)

CASES = []
for seed in _SEEDS:
    CASES.append(Case(id=f"compat/randint-seed{seed}", kernel=randint_kernel, grid=GRID,
                      constexprs={"FN": "randint", "ROUNDS": 10, "BLOCK": BLOCK}, inputs={"seed": seed},
                      outputs={"out_ptr": Out("uint32", (N,))},
                      reference=lambda seed: _words(seed, _OFFS)[0]))
for rounds in (7, 3):
    CASES.append(Case(id=f"compat/randint-rounds{rounds}", kernel=randint_kernel, grid=GRID,
                      constexprs={"FN": "randint", "ROUNDS": rounds, "BLOCK": BLOCK}, inputs={"seed": 99},
                      outputs={"out_ptr": Out("uint32", (N,))},
                      reference=(lambda r: lambda seed: _words(seed, _OFFS, r)[0])(rounds)))
for seed in (17, 2**40 + 1):
    CASES += [
        Case(id=f"compat/rand-seed{seed}", kernel=randint_kernel, grid=GRID,
             constexprs={"FN": "rand", "ROUNDS": 10, "BLOCK": BLOCK}, inputs={"seed": seed},
             outputs={"out_ptr": Out("fp32", (N,))}, reference=lambda seed: _uniform(_words(seed, _OFFS)[0]),
             rtol=0, atol=0),
        Case(id=f"compat/randn-seed{seed}", kernel=randint_kernel, grid=GRID,
             constexprs={"FN": "randn", "ROUNDS": 10, "BLOCK": BLOCK}, inputs={"seed": seed},
             outputs={"out_ptr": Out("fp32", (N,))},
             reference=lambda seed: _normal(*_words(seed, _OFFS)[:2])[0], rtol=1e-4, atol=1e-5),
    ]


def _four(fn):
    def ref(seed):
        w = _words(seed, _OFFS)
        if fn == "randint4x":
            return tuple(w)
        if fn == "rand4x":
            return tuple(_uniform(v) for v in w)
        if fn == "randn4x":
            return _normal(w[0], w[1]) + _normal(w[2], w[3])
        z = np.zeros(N, np.uint32)
        return tuple(philox4x32([_OFFS.astype(np.uint32), z + 7, (_OFFS * 3).astype(np.uint32), z + 11],
                                (seed & 0xFFFFFFFF, seed >> 32)))
    return ref


for fn, tag, kw in (("randint4x", "uint32", {}), ("rand4x", "fp32", {"rtol": 0, "atol": 0}),
                    ("randn4x", "fp32", {"rtol": 1e-4, "atol": 1e-5}), ("philox", "uint32", {})):
    CASES.append(Case(id=f"compat/{fn}", kernel=randint4x_kernel, grid=GRID,
                      constexprs={"FN": fn, "BLOCK": BLOCK}, inputs={"seed": 31337},
                      outputs={n: Out(tag, (N,)) for n in ("a_ptr", "b_ptr", "c_ptr", "d_ptr")},
                      reference=_four(fn), **kw))
_BIG = _OFFS.astype(np.uint64) * 3 + (2**40 + 5)
for seed in (2024, 2**63 + 5):
    # int64 offsets: Philox 4x32 on (low word, high word, 0, 0); the result is uint32 stored into int64
    CASES.append(Case(id=f"compat/randint-int64-offsets-seed{seed}", kernel=randint64_kernel, grid=GRID,
                      constexprs={"BLOCK": BLOCK}, inputs={"seed": seed}, outputs={"out_ptr": Out("int64", (N,))},
                      reference=lambda seed: philox4x32(
                          [(_BIG & 0xFFFFFFFF).astype(np.uint32), (_BIG >> np.uint64(32)).astype(np.uint32),
                           np.zeros(N, np.uint32), np.zeros(N, np.uint32)],
                          (seed & 0xFFFFFFFF, seed >> 32))[0].astype(np.int64)))
CASES.append(Case(id="compat/philox-int64-counter", kernel=philox64_kernel, grid=GRID,
                  constexprs={"BLOCK": BLOCK}, inputs={"seed": 2024}, outputs={"out_ptr": Out("uint64", (N,))},
                  reference=lambda seed: philox4x64([_OFFS + 2**40, 0, 0, 0], (seed, 0))[0]))
CASES.append(Case(id="compat/rand-dropout", kernel=dropout_kernel, grid=GRID, constexprs={"BLOCK": BLOCK},
                  inputs={"x_ptr": Rand("fp32", (N,)),
                          "n": N - 5, "p": 0.5, "seed": 7},
                  outputs={"out_ptr": Out("fp32", (N,), init=Rand("fp32", (N,)))},
                  reference=lambda x_ptr, n, p, seed, out_ptr: np.where(
                      _OFFS < n, np.where(_uniform(_words(seed, _OFFS)[0]) > np.float32(p), x_ptr * 2.0, 0.0), out_ptr)))
