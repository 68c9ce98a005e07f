"""``tl.dot(..., input_precision="bf16x3" / "bf16x6")``: fp32 operands split into bf16 pieces whose
products are summed in fp32.  On the interpreter against a float64 reference on fresh random
inputs (bf16x6 as accurate as fp32, bf16x3 about 16 mantissa bits; non-finite inputs as float64
gives them); compiled for sm_90 / sm_80 the dot becomes bf16 tensor-core instructions (three or six
per K step); on a CUDA device the same checks run on the GPU."""
import re

import numpy as np
import pytest
import torch

import tritium
import tritium.language as tl


@tritium.jit
def _dot_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                PRECISION: tl.constexpr, ACC: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if ACC:
        c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
        d = tl.dot(a, b, c, input_precision=PRECISION)
    else:
        d = tl.dot(a, b, input_precision=PRECISION)
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], d)


def _device():
    return "cuda" if torch.cuda.is_available() else "cpu"


def _run(a, b, c, precision, device):
    m, k = a.shape
    n = b.shape[1]
    ta, tb = torch.from_numpy(a).to(device), torch.from_numpy(b).to(device)
    tc = torch.from_numpy(c if c is not None else np.zeros((m, n), np.float32)).to(device)
    out = torch.full((m, n), float("nan"), dtype=torch.float32, device=device)  # poison
    _dot_kernel[(1,)](ta, tb, tc, out, m, n, k, precision, c is not None)
    return out.cpu().numpy()


def _bound(a, b, c, bits):
    """|error| allowed: 2^-bits of the sum of |products| (plus fp32 rounding of |c|)."""
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    if c is not None:
        scale = scale + np.abs(c)
    return scale * 2.0 ** -bits + 1e-30


# bf16x6 keeps every operand bit (hi + mid + lo = 24 bits), so its error is fp32 summation's;
# bf16x3 keeps hi + mid (16 bits) and drops mid*mid, so about 2^-16 of each product
_BITS = {"bf16x6": 20, "bf16x3": 14}


@pytest.mark.parametrize("precision", ["bf16x3", "bf16x6"])
@pytest.mark.parametrize("shape", [(16, 16, 16), (32, 64, 64)])
@pytest.mark.parametrize("with_acc", [False, True])
def test_bf16_split_dot_matches_float64(precision, shape, with_acc):
    m, n, k = shape
    rng = np.random.default_rng()
    # values across several binades, so every bf16 piece matters
    a = (rng.standard_normal((m, k)) * 2.0 ** rng.integers(-6, 6, (m, k))).astype(np.float32)
    b = (rng.standard_normal((k, n)) * 2.0 ** rng.integers(-6, 6, (k, n))).astype(np.float32)
    c = rng.standard_normal((m, n)).astype(np.float32) if with_acc else None
    out = _run(a, b, c, precision, _device())
    ref = a.astype(np.float64) @ b.astype(np.float64) + (c if with_acc else 0)
    err = np.abs(out - ref)
    assert np.all(np.isfinite(out))
    assert np.all(err <= _bound(a, b, c, _BITS[precision])), (err / _bound(a, b, c, 0)).max()


def test_bf16x3_is_less_exact_than_bf16x6():
    """bf16x3 really drops bits (the operands are split, not used whole): its error is above what
    fp32 summation alone gives, and bf16x6's is not."""
    rng = np.random.default_rng()
    a = rng.uniform(0.5, 1.0, (32, 64)).astype(np.float32)
    b = rng.uniform(0.5, 1.0, (64, 32)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    rel = {p: (np.abs(_run(a, b, None, p, _device()) - ref) / ref).max() for p in ("bf16x3", "bf16x6")}
    assert rel["bf16x6"] < 2.0 ** -20
    assert 2.0 ** -22 < rel["bf16x3"] < 2.0 ** -13, rel


def test_bf16_split_dot_non_finite_operands():
    """An infinite operand has a NaN remainder (inf - inf); only hi*hi carries it, so a row with
    an inf gives +-inf (or NaN where +inf and -inf products meet), as float64 does."""
    rng = np.random.default_rng()
    m = n = k = 16
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(0.25, 1, (k, n)).astype(np.float32)
    a[3, 5] = np.inf
    a[7, 2] = -np.inf
    a[9, 1] = np.inf
    b[1, 4] = -0.5  # row 9, column 4: +inf * -0.5 -> -inf
    a[11, 0], a[11, 1] = np.inf, -np.inf  # +inf and -inf products: NaN
    ref = a.astype(np.float64) @ b.astype(np.float64)
    for precision in ("bf16x3", "bf16x6"):
        out = _run(a, b, None, precision, _device())
        np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
        np.testing.assert_array_equal(np.isposinf(out), np.isposinf(ref))
        np.testing.assert_array_equal(np.isneginf(out), np.isneginf(ref))
        fin = np.isfinite(ref)
        assert np.all(np.abs(out[fin] - ref[fin]) <= _bound(a, b, None, 14)[fin])


def test_input_precision_names():
    """Any case is accepted (as ``"BF16X3"``); an unknown name lists the allowed ones."""
    rng = np.random.default_rng()
    a = rng.uniform(-1, 1, (16, 16)).astype(np.float32)
    b = rng.uniform(-1, 1, (16, 16)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    out = _run(a, b, None, "BF16X6", _device())
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(tritium.CompilationError, match=r"input_precision must be one of .*bf16x3, bf16x6, got 'bf16x9'"):
        _run(a, b, None, "bf16x9", _device())


# -- the GPU lowering, compiled on the CPU ---------------------------------------------------------

_SIG = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "d_ptr": "*fp32"}
_ATTRS = {name: {"tt.divisibility": 16} for name in _SIG}


def _compile(target, m, n, k, precision, warps=4):
    return tritium.compile(_dot_kernel, target=target, signature=_SIG, attrs=_ATTRS, num_warps=warps,
                           constexprs={"M": m, "N": n, "K": k, "PRECISION": precision, "ACC": True}, stage="ptx")


@pytest.mark.parametrize("precision,dots", [("bf16x3", 3), ("bf16x6", 6)])
@pytest.mark.parametrize("target,shape,instruction", [
    ("cuda:90", (64, 64, 64), "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"),
    ("cuda:80", (64, 64, 64), "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
    ("cuda:90", (32, 32, 32), "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
])
def test_bf16_split_dot_takes_bf16_tensor_cores(precision, dots, target, shape, instruction, monkeypatch, tmp_path):
    pytest.importorskip("tritium_nvidia", reason="the nvidia plugin is not installed")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    m, n, k = shape
    kern = _compile(target, m, n, k, precision)
    ttir, ptx = kern.asm["ttir"], kern.asm["ptx"]
    assert f"inputPrecision = {precision}" in ttir  # decomposed later, in the ttgir stage
    ttgir = kern.asm["ttgir"]
    bf16_dots = re.findall(r"(?:tt\.dot|ttng\.warp_group_dot) [^\n]*bf16", ttgir)
    assert len(bf16_dots) == dots, bf16_dots
    assert "tf32" not in ptx and instruction in ptx
    per_dot = (m // 64 if instruction.startswith("wgmma") else (m // 16) * (n // 8) // 4) * (k // 16)
    assert ptx.count(instruction) >= dots * per_dot
    assert "cvt.rn.bf16.f32" in ptx or "cvt.rn.bf16x2.f32" in ptx
