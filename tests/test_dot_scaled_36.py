"""``tl.dot_scaled`` as Triton 3.6 defines it, and ``tritium.tools.mxfp``.

* e2m1 operands hold two values a byte, the first in the low nibble, along K or (``*_k_pack=False``)
  along M / N; the rhs scale is ``[N, K // 32]`` whichever way the rhs is packed.
* A scale of 0xFF makes its block NaN (``fast_math`` included, on the interpreter).
* ``MXFP4Tensor`` / ``MXScaleTensor`` decode, encode (round to nearest even, saturating) and pack
  like the format definitions, checked here against decodings written from those definitions with
  Python's own float arithmetic.

The kernels run on the interpreter against float64 references; one compiles for ``cuda:90``."""
import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.tools.mxfp import MXFP4Tensor, MXScaleTensor  # noqa: E402


# ---- independent decodings -----------------------------------------------------------------------

def e2m1_value(code: int) -> float:
    """s.ee.m: ee = 0 is the subnormal m/2, else 2^(ee-1) * (1 + m/2)."""
    s, e, m = code >> 3 & 1, code >> 1 & 3, code & 1
    mag = m / 2 if e == 0 else 2.0 ** (e - 1) * (1 + m / 2)
    return -mag if s else mag


def e8m0_value(code: int) -> float:
    return math.nan if code == 255 else math.ldexp(1.0, code - 127)


def nearest_e2m1(x: float) -> int:
    """Brute force: the closest of the 16 codes (ties to the even code), saturating at +-6."""
    if math.isnan(x):
        x = math.inf
    sign = 8 if math.copysign(1.0, x) < 0 else 0
    mag = min(abs(x), 6.0)
    best = min(range(8), key=lambda c: (abs(e2m1_value(c) - mag), c & 1))
    return sign | best


# ---- tritium.tools.mxfp --------------------------------------------------------------------------

def test_mxfp4_decodes_every_code():
    t = MXFP4Tensor(size=(16,))
    t.data = torch.arange(16, dtype=torch.uint8)
    got = t.to(torch.float32).tolist()
    want = [e2m1_value(c) for c in range(16)]
    assert got == want
    assert [math.copysign(1, v) for v in got] == [math.copysign(1, v) for v in want]  # -0.0 at code 8
    assert t.to(torch.bfloat16).float().tolist() == want


def test_mxfp4_from_float_rounds_to_nearest_even_and_saturates():
    rng = np.random.default_rng(1)
    mids = [(e2m1_value(c) + e2m1_value(c + 1)) / 2 for c in range(7)]
    specials = [0.0, -0.0, math.inf, -math.inf, math.nan, 6.0, 7.0, 1e30, -1e-30, 0.2499, 0.2501]
    vals = np.concatenate([rng.uniform(-8, 8, 500), mids, [-m for m in mids], specials]).astype(np.float32)
    codes = MXFP4Tensor(torch.from_numpy(vals)).data.tolist()
    assert codes == [nearest_e2m1(float(v)) for v in vals]


def test_mxfp4_random_covers_the_codes():
    torch.manual_seed(0)
    t = MXFP4Tensor(size=(64, 32)).random()
    assert t.data.dtype == torch.uint8 and tuple(t.data.shape) == (64, 32)
    assert set(t.data.unique().tolist()) == set(range(16))


@pytest.mark.parametrize("shape, dim", [((6, 4, 10), 0), ((6, 4, 10), 1), ((6, 4, 10), 2), ((5, 3), 0), ((3, 7), 1)])
def test_mxfp4_packs_the_first_of_a_pair_in_the_low_nibble(shape, dim):
    torch.manual_seed(1)
    t = MXFP4Tensor(size=shape).random()
    packed = t.to_packed_tensor(dim)
    codes = np.moveaxis(t.data.numpy(), dim, 0)
    if codes.shape[0] % 2:
        codes = np.concatenate([codes, np.zeros_like(codes[:1])])
    want = np.moveaxis(codes[0::2] | (codes[1::2] << 4), 0, dim)
    assert packed.dtype == torch.uint8 and np.array_equal(packed.numpy(), want)
    assert torch.equal(t.unpack_packed_tensor(packed, dim, shape), t.data)


def test_mxscale_decodes_and_encodes_like_the_definition():
    t = MXScaleTensor(size=(256,))
    t.data = torch.arange(256, dtype=torch.uint8)
    got = t.to(torch.float32).tolist()
    want = [e8m0_value(c) for c in range(256)]
    assert all((math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(got, want))
    vals = [1.0, 0.75, 3.9999, 4.0, 2.0 ** -126, 2.0 ** 127 * 1.5, 0.0, -2.0, math.inf, math.nan]
    codes = MXScaleTensor(torch.tensor(vals, dtype=torch.float64)).data.tolist()
    want = [min(254, max(0, math.frexp(v)[1] - 1 + 127)) if (v > 0 and math.isfinite(v)) else 255 for v in vals]
    assert codes == want


def test_mxscale_random_stays_in_range_and_skips_nan():
    torch.manual_seed(2)
    full = MXScaleTensor(size=(4096,)).random().data
    assert 255 not in full.tolist() and full.min() < 20 and full.max() > 235
    s = MXScaleTensor(size=(64, 4)).random(high=64.0).to(torch.float32)
    assert float(s.max()) <= 64.0
    s = MXScaleTensor(size=(1000,)).random(low=0.3, high=3.0).to(torch.float64)
    assert set(s.unique().tolist()) == {0.5, 1.0, 2.0}
    with pytest.raises(ValueError, match="no power of two"):
        MXScaleTensor(size=(4,)).random(low=5.0, high=7.0)
    with pytest.raises(ValueError, match="data .* or size"):
        MXScaleTensor()


# ---- tl.dot_scaled on the interpreter --------------------------------------------------------------

@tritium.jit
def _mx_dot(a_ptr, sa_ptr, b_ptr, sb_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
            FA: tl.constexpr, FB: tl.constexpr, A_KPACK: tl.constexpr, B_KPACK: tl.constexpr, FAST: tl.constexpr):
    # operands stored row-major as packed; scales [M, K/32] and [N, K/32]
    AR: tl.constexpr = M if A_KPACK else M // 2
    AC: tl.constexpr = (K // 2 if FA == "e2m1" else K) if A_KPACK else K
    BR: tl.constexpr = (K // 2 if FB == "e2m1" else K) if B_KPACK else K
    BC: tl.constexpr = N if B_KPACK else N // 2
    a = tl.load(a_ptr + tl.arange(0, AR)[:, None] * AC + tl.arange(0, AC)[None, :])
    b = tl.load(b_ptr + tl.arange(0, BR)[:, None] * BC + tl.arange(0, BC)[None, :])
    sa = tl.load(sa_ptr + tl.arange(0, M)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    sb = tl.load(sb_ptr + tl.arange(0, N)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    z = tl.dot_scaled(a, sa, FA, b, sb, FB, fast_math=FAST, lhs_k_pack=A_KPACK, rhs_k_pack=B_KPACK)
    tl.store(z_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], z)


def _fp8_codes(g, shape, fmt):
    """Random fp8 codes without NaN / inf."""
    c = torch.randint(0, 256, shape, dtype=torch.uint8, generator=g)
    top = 0x7F if fmt == "e4m3" else 0x7C
    return torch.where(c & top == top, c & 0xF3 if fmt == "e5m2" else c & 0xF7, c)


def _fp8_values(codes, fmt):
    return codes.view(torch.float8_e4m3fn if fmt == "e4m3" else torch.float8_e5m2).to(torch.float64)


def _run(fa, fb, m, n, k, a_kpack=True, b_kpack=True, fast=False, nan_at=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    ops = []
    for fmt, rows, cols, kpack, pack_dim in ((fa, m, k, a_kpack, 1 if a_kpack else 0),
                                              (fb, k, n, b_kpack, 0 if b_kpack else 1)):
        if fmt == "e2m1":
            t = MXFP4Tensor(size=(rows, cols))
            t.data = torch.randint(0, 16, (rows, cols), dtype=torch.uint8, generator=g)
            ops.append((t.to_packed_tensor(pack_dim), t.to(torch.float32).double()))
        else:
            c = _fp8_codes(g, (rows, cols), fmt)
            ops.append((c, _fp8_values(c, fmt)))
    sa = torch.randint(118, 137, (m, k // 32), dtype=torch.uint8, generator=g)
    sb = torch.randint(118, 137, (n, k // 32), dtype=torch.uint8, generator=g)
    if nan_at == "lhs":
        sa[3, -1] = 255
    elif nan_at == "rhs":
        sb[5, 0] = 255
    (a, x), (b, y) = ops
    ta, tb = MXScaleTensor(size=sa.shape), MXScaleTensor(size=sb.shape)
    ta.data, tb.data = sa, sb
    x = x * ta.to(torch.float64).repeat_interleave(32, dim=1)
    y = y * tb.to(torch.float64).repeat_interleave(32, dim=1).T
    z = torch.full((m, n), float("nan"), dtype=torch.float32)  # poisoned: every element must be written
    z[::7] = 12345.0
    _mx_dot[(1,)](a.contiguous(), sa, b.contiguous(), sb, z, m, n, k, fa, fb, a_kpack, b_kpack, fast)
    return z.double(), x @ y, x.abs().nan_to_num() @ y.abs().nan_to_num()


def _assert_fp32_accumulation(got, exact, mag, k):
    assert torch.equal(torch.isnan(got), torch.isnan(exact))
    ok = torch.isnan(exact) | ((got - exact).abs() <= k * 2.0 ** -23 * mag + 2.0 ** -24 * exact.abs())
    assert bool(ok.all()), f"{int((~ok).sum())} elements off; first {(got - exact)[~ok][:4].tolist()}"


@pytest.mark.parametrize("fa, fb, a_kpack, b_kpack", [
    ("e2m1", "e4m3", True, True), ("e5m2", "e2m1", True, True), ("e2m1", "e2m1", True, True),
    ("e2m1", "e4m3", False, True), ("e4m3", "e2m1", True, False), ("e2m1", "e2m1", False, False)])
def test_dot_scaled_matches_the_decoded_product(fa, fb, a_kpack, b_kpack):
    got, exact, mag = _run(fa, fb, 32, 64, 64, a_kpack, b_kpack)
    _assert_fp32_accumulation(got, exact, mag, 64)


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("side", ["lhs", "rhs"])
def test_nan_scale_makes_its_block_nan(side, fast):
    got, exact, mag = _run("e2m1", "e2m1", 32, 32, 64, b_kpack=False, fast=fast, nan_at=side)
    nan = torch.isnan(got)
    if side == "lhs":
        assert bool(nan[3].all()) and int(nan.sum()) == 32  # row 3 of the output
    else:
        assert bool(nan[:, 5].all()) and int(nan.sum()) == 32  # column 5 (scale rows are N)
    _assert_fp32_accumulation(got, exact, mag, 64)


def test_scale_shape_error_reads_as_triton_36():
    @tritium.jit
    def k(z_ptr):
        a = tl.full((32, 64), 0, tl.uint8)
        b = tl.full((64, 32), 0, tl.uint8)
        s = tl.full((32, 4), 0, tl.uint8)
        tl.store(z_ptr + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :],
                 tl.dot_scaled(a, s, "e5m2", b, None, "e5m2"))

    with pytest.raises(tritium.CompilationError) as e:
        k[(1,)](torch.zeros(32 * 32))
    assert str(e.value.__cause__) == "lhs_scale must be a tensor of shape [32, 2]. Got ['32', '4']"
    assert "tl.dot_scaled(a, s" in str(e.value)


def test_k_pack_false_needs_e2m1():
    @tritium.jit
    def k(z_ptr):
        a = tl.full((32, 64), 0, tl.uint8)
        tl.store(z_ptr + tl.arange(0, 32)[:, None] * 64 + tl.arange(0, 64)[None, :],
                 tl.dot_scaled(a, None, "e4m3", a.T, None, "e4m3", lhs_k_pack=False))

    with pytest.raises(tritium.CompilationError, match="only mxfp4 inputs can be packed along a dimension"):
        k[(1,)](torch.zeros(32 * 64))


# ---- nvidia: the forms above compile for sm_90 ----------------------------------------------------

def test_packed_along_m_and_n_compiles_for_sm90(monkeypatch, tmp_path):
    fa, fb, a_kpack, b_kpack = "e2m1", "e2m1", False, False
    pytest.importorskip("tritium_nvidia")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    m = n = 64
    kk = 64
    a = np.zeros((m, kk // 2) if fa == "e2m1" and a_kpack else ((m // 2, kk) if not a_kpack else (m, kk)), np.uint8)
    b = np.zeros((kk, n // 2) if not b_kpack else ((kk // 2, n) if fb == "e2m1" else (kk, n)), np.uint8)
    s = np.zeros((64, kk // 32), np.uint8)
    ck = _mx_dot.warmup(a, s, b, s, np.zeros((m, n), np.float32), m, n, kk, fa, fb, a_kpack, b_kpack, False,
                        grid=(1,), backend="nvidia", target="cuda:90", num_warps=4)
    assert "tt.dot_scaled" not in ck.asm["ttgir"]
    assert "mma.sync.aligned" in ck.asm["ptx"]
