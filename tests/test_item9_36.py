"""Triton 3.6 rules for smaller language corners: ``atomic_cas`` on 16-bit elements (bitwise
comparison), dots below a tensor-core tile, ``randint`` on 64-bit offsets, ``trans()`` without dims
on batched tensors, and unsigned pointer offsets.  Each runs on the interpreter against an
independent numpy reference on fresh random inputs, and (where the rule reaches code generation)
compiles for ``cuda:90``; on a CUDA device the same kernels run on the GPU."""
import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium import CompilationError

try:
    import torch
    _CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover - torch is a test dependency
    torch, _CUDA = None, False

_RNG = np.random.default_rng()


def _nvidia():
    pytest.importorskip("tritium_nvidia")


def _launch(kernel, grid, arrays: dict, **scalars):
    """Run on the GPU when there is one (numpy in, numpy out), else on the interpreter."""
    if _CUDA:
        dev = {k: torch.from_numpy(v.copy()).cuda() for k, v in arrays.items()}
        kernel[grid](**dev, **scalars)
        return {k: v.cpu().numpy() for k, v in dev.items()}
    kernel[grid](**arrays, **scalars)
    return arrays


# --- atomic_cas ------------------------------------------------------------------------------------

@tritium.jit
def _cas_kernel(z_ptr, c_ptr, v_ptr, o_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    old = tl.atomic_cas(z_ptr + r, tl.load(c_ptr + r), tl.load(v_ptr + r))
    tl.store(o_ptr + r, old)


def _bits(a):
    return a.view(f"u{a.dtype.itemsize}")


@pytest.mark.parametrize("dt", [np.float16, np.int16, np.uint16, np.float32])
def test_atomic_cas_16bit_compares_bit_patterns(dt):
    n = 512
    if np.dtype(dt).kind == "f":
        pool = np.array([0.0, -0.0, np.nan, 1.5, -2.25], dt)
    else:
        info = np.iinfo(dt)
        pool = np.array([0, 1, info.max, info.min, 300], dt)
    z = pool[_RNG.integers(0, len(pool), n)]
    c = pool[_RNG.integers(0, len(pool), n)]
    v = _RNG.integers(1, 100, n).astype(dt)
    out = _launch(_cas_kernel, (1,), {"z_ptr": z.copy(), "c_ptr": c, "v_ptr": v,
                                      "o_ptr": np.full(n, 77, dt)}, B=n)
    swap = _bits(z) == _bits(c)
    # every kind of pair shows up: equal patterns (NaN with NaN among them) and +0 / -0
    assert swap.any() and (~swap).any()
    np.testing.assert_array_equal(_bits(out["o_ptr"]), _bits(z))
    np.testing.assert_array_equal(_bits(out["z_ptr"]), _bits(np.where(swap, v, z)))


def test_atomic_cas_rejects_8bit():
    z = np.zeros(16, np.int8)
    with pytest.raises(CompilationError, match=r"atomic_cas supports 16-, 32- and 64-bit elements, got int8"):
        _cas_kernel[(1,)](z, z.copy(), z.copy(), z.copy(), B=16)


@pytest.mark.parametrize("sig", ["fp16", "bf16", "i16"])
def test_atomic_cas_16bit_compiles_for_sm90(sig):
    _nvidia()
    h = tritium.compile(_cas_kernel, target="cuda:90", signature={k: f"*{sig}" for k in ("z_ptr", "c_ptr", "v_ptr", "o_ptr")},
                        constexprs={"B": 128}, stage="cubin")
    assert "atom.global.acq_rel.gpu.cas.b16" in h.asm["ptx"]
    assert h.asm["cubin"]


# --- dots below a tensor-core tile -----------------------------------------------------------------

@tritium.jit
def _dot3d_kernel(a_ptr, b_ptr, c_ptr, BS: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rb = tl.arange(0, BS)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rb * M * K + rm * K + rk[None, None, :])
    b = tl.load(b_ptr + rb * K * N + rk[None, :, None] * N + rn)
    tl.store(c_ptr + rb * M * N + rm * N + rn, tl.dot(a, b, input_precision="ieee"))


@pytest.mark.parametrize("bs,m,n,k,dt", [(2, 1, 32, 16, np.float16), (4, 8, 8, 32, np.float32),
                                         (1, 32, 2, 16, np.float16), (2, 4, 4, 4, np.float32)])
def test_small_dot(bs, m, n, k, dt):
    if _CUDA and k < 16:
        pytest.skip("K < 16 is below NVIDIA's smallest dot")
    a = _RNG.uniform(-1, 1, (bs, m, k)).astype(dt)
    b = _RNG.uniform(-1, 1, (bs, k, n)).astype(dt)
    out = _launch(_dot3d_kernel, (1,), {"a_ptr": a, "b_ptr": b, "c_ptr": np.full((bs, m, n), np.nan, np.float32)},
                  BS=bs, M=m, N=n, K=k)
    np.testing.assert_allclose(out["c_ptr"], a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_small_dot_bounds_on_nvidia():
    _nvidia()
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}
    h = tritium.compile(_dot3d_kernel, target="cuda:90", signature=sig,
                        constexprs={"BS": 2, "M": 1, "N": 32, "K": 16}, stage="ptx")
    # below a tensor-core tile: mma.sync all the same, as Triton (the rows past M are copies)
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in h.asm["ptx"] and "fma.rn" not in h.asm["ptx"]
    with pytest.raises(CompilationError, match=r"Input shapes should have M >= 1, N >= 1 and K >= 16"):
        tritium.compile(_dot3d_kernel, target="cuda:90", signature=sig,
                        constexprs={"BS": 2, "M": 16, "N": 16, "K": 8}, stage="ttir")
    sig8 = {"a_ptr": "*i8", "b_ptr": "*i8", "c_ptr": "*i32"}
    with pytest.raises(CompilationError, match=r"Input shapes should have M >= 1, N >= 1 and K >= 32"):
        tritium.compile(_dot3d_kernel, target="cuda:90", signature=sig8,
                        constexprs={"BS": 1, "M": 16, "N": 16, "K": 16}, stage="ttir")


# --- randint on 64-bit offsets ---------------------------------------------------------------------

def _philox4x32(c, key, rounds=10):
    """Philox 4x32 from its definition (Salmon et al. 2011), in Python integers."""
    m32 = 0xFFFFFFFF
    c, (k0, k1) = list(c), key
    for _ in range(rounds):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & m32, p1 & m32, ((p0 >> 32) ^ c[3] ^ k1) & m32, p0 & m32]
        k0, k1 = (k0 + 0x9E3779B9) & m32, (k1 + 0xBB67AE85) & m32
    return c


@tritium.jit
def _randint_kernel(out_ptr, seed, base, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK).to(tl.int64) * 7919 + base
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.randint(seed, offs))


def test_randint_int64_offsets_are_two_counter_words():
    seed, base = int(_RNG.integers(0, 2**63)), int(_RNG.integers(2**33, 2**40))
    out = _launch(_randint_kernel, (1,), {"out_ptr": np.zeros(64, np.int64)}, seed=seed, base=base, BLOCK=64)
    key = (seed & 0xFFFFFFFF, seed >> 32)
    want = [_philox4x32([o & 0xFFFFFFFF, o >> 32, 0, 0], key)[0] for o in (np.arange(64) * 7919 + base).tolist()]
    np.testing.assert_array_equal(out["out_ptr"], np.array(want, np.int64))


# --- trans() without dims --------------------------------------------------------------------------

@tritium.jit
def _trans_kernel(x_ptr, z_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, A)[:, None, None] * B * C + tl.arange(0, B)[None, :, None] * C
                + tl.arange(0, C)[None, None, :])
    tl.store(z_ptr + tl.arange(0, A)[:, None, None] * C * B + tl.arange(0, C)[None, :, None] * B
             + tl.arange(0, B)[None, None, :], x.trans())


def test_trans_without_dims_swaps_last_two():
    x = _RNG.integers(-1000, 1000, (2, 4, 8)).astype(np.int32)
    out = _launch(_trans_kernel, (1,), {"x_ptr": x, "z_ptr": np.full((2, 8, 4), -1, np.int32)}, A=2, B=4, C=8)
    np.testing.assert_array_equal(out["z_ptr"], x.transpose(0, 2, 1))


@tritium.jit
def _trans_1d_kernel(x_ptr):
    tl.store(x_ptr + tl.arange(0, 8), tl.trans(tl.load(x_ptr + tl.arange(0, 8))))


def test_trans_without_dims_rejects_1d():
    with pytest.raises(CompilationError, match=r"tl.trans invoked with a 0- or 1-dimensional tensor"):
        _trans_1d_kernel[(1,)](np.zeros(8, np.float32))


# --- unsigned pointer offsets ----------------------------------------------------------------------

@tritium.jit
def _uoffset_kernel(x_ptr, z_ptr, base, UT: tl.constexpr):
    offs = (base + tl.arange(0, 32)).to(UT)
    tl.store(z_ptr + tl.arange(0, 32), tl.load(x_ptr + offs))


@pytest.mark.parametrize("ut,base", [(tl.uint8, 200), (tl.uint16, 33000)])
def test_unsigned_offset_zero_extended(ut, base):
    x = _RNG.uniform(-1, 1, base + 32).astype(np.float32)
    out = _launch(_uoffset_kernel, (1,), {"x_ptr": x, "z_ptr": np.full(32, np.nan, np.float32)}, base=base, UT=ut)
    np.testing.assert_array_equal(out["z_ptr"], x[base:])
    h = tritium.compile(_uoffset_kernel, target=None, signature={"x_ptr": "*fp32", "z_ptr": "*fp32", "base": "i32"},
                        constexprs={"UT": ut}, stage="ttir")
    assert "arith.extui" in h.asm["ttir"] and "tensor<32xi64>" in h.asm["ttir"]
