"""The fp8 formats as storage types: every code decoded, conversions from fp32 and fp16 (round to
nearest even, or toward zero; saturating at the largest finite value; NaN to the format's NaN),
round trips, copies through memory, ``abs``, and ``dot`` (formats without matrix instructions
are upcast).  Codes are compared bit for bit: the kernels hand them out as ``uint8``.

The references are :mod:`conformance.dtypes`'s exact decoding and encoding, written from the
formats' definitions (bias, subnormals, NaN codes, no infinities but in e5m2, no negative zero in
the FNUZ formats)."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Gen, Out, tol

FORMATS = dtypes.FP8_DTYPES
N = 1024


def _lang(tag):
    return getattr(tl, dtypes.LANG_NAME[tag])


@triton.jit
def decode_kernel(bits_ptr, z_ptr, FP8: tl.constexpr, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(bits_ptr + offs).to(FP8, bitcast=True)
    tl.store(z_ptr + offs, x.to(DST))


@triton.jit
def encode_kernel(x_ptr, bits_ptr, FP8: tl.constexpr, RND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    y = tl.load(x_ptr + offs).to(FP8, fp_downcast_rounding=RND)
    tl.store(bits_ptr + offs, y.to(tl.uint8, bitcast=True))


@triton.jit
def roundtrip_kernel(bits_ptr, out_ptr, FP8: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    wide = tl.load(bits_ptr + offs).to(FP8, bitcast=True).to(tl.float32)
    tl.store(out_ptr + offs, wide.to(FP8).to(tl.uint8, bitcast=True))


@triton.jit
def abs_kernel(bits_ptr, out_ptr, FP8: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(bits_ptr + offs).to(FP8, bitcast=True)
    tl.store(out_ptr + offs, tl.abs(x).to(tl.uint8, bitcast=True))


@triton.jit
def transpose_kernel(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(z_ptr + rn[None, :] * M + rm[:, None], x)


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


# --- references --------------------------------------------------------------------------------

def _magnitudes(tag):
    """Non-negative finite values of the format, ascending, and their codes."""
    codes = np.arange(128, dtype=np.uint8)
    vals = dtypes.decode(codes, tag)
    keep = np.isfinite(vals)
    return vals[keep], codes[keep]


def _saturated(x, tag):
    top = _magnitudes(tag)[0][-1]
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(x), x, np.clip(x, -top, top))


def _encode_rtz(x, tag):
    """Round toward zero: the largest magnitude not above |x| (saturating), the sign kept."""
    vals, codes = _magnitudes(tag)
    x = _saturated(np.asarray(x, np.float64), tag)
    idx = np.searchsorted(vals, np.abs(np.nan_to_num(x)), side="right") - 1
    mag = codes[idx].astype(np.int64)
    # a value that truncates to zero takes its sign along unless zero has no sign in the format
    neg = np.signbit(x) & ((mag != 0) | (tag not in ("fp8e4b8", "fp8e5b16")))
    out = np.where(neg, mag | 0x80, mag)
    nan = dtypes.encode(np.where(np.isnan(x), x, np.nan), tag).astype(np.int64)
    return np.where(np.isnan(x), nan, out).astype(np.uint8)


def _encode(x, tag, rnd):
    with np.errstate(invalid="ignore"):  # NaN inputs are mapped after the rounding
        if rnd == "rtz":
            return _encode_rtz(x, tag)
        return dtypes.encode(_saturated(np.asarray(x, np.float64), tag), tag)


def _conversion_inputs(tag, src):
    """Exact values, ties between neighbours, a log-uniform spread from below the smallest
    subnormal to beyond the largest value, and the special values; both signs."""
    vals, _ = _magnitudes(tag)
    top, tiny = vals[-1], vals[1]

    def make(rng, shape):
        n = int(np.prod(shape))
        k = n // 4
        exact = rng.choice(vals, k)
        i = rng.integers(0, len(vals) - 1, k)
        ties = (vals[i] + vals[i + 1]) / 2
        spread = np.exp2(rng.uniform(np.log2(tiny) - 3, np.log2(top) + 2, n - 2 * k))
        x = np.concatenate([exact, ties, spread]) * rng.choice([-1.0, 1.0], n)
        step = top - vals[-2]
        special = [np.nan, -np.nan, 0.0, -0.0, top, -top, top + step / 2, -(top + step / 2), top + step,
                   tiny / 2, -tiny / 2, tiny * 0.75, -tiny * 0.25]
        if src == "fp32":
            special += [np.inf, -np.inf, 3e38, -1e-30]
        x[:len(special)] = special
        return x.reshape(shape)
    return Gen(src, (N,), make)


def _all_codes():
    return Gen("uint8", (256,), lambda rng, shape: np.arange(256).reshape(shape))


def _representable(tag, shape, limit):
    """Random finite values of the format within ±limit."""
    vals, _ = _magnitudes(tag)
    pool = vals[vals <= limit]
    return Gen(tag, shape, lambda rng, s: rng.choice(pool, s) * rng.choice([-1.0, 1.0], s))


def _abs_check(tag):
    """Finite and infinite values lose their sign, bit for bit; a NaN stays a NaN (the FNUZ
    formats' only NaN is 0x80; elsewhere any positive NaN code: a NaN's payload need not survive)."""
    def check(out, inp):
        b = inp["bits_ptr"].astype(np.int64)
        got = out["out_ptr"].astype(np.int64)
        nan_in = np.isnan(dtypes.decode(inp["bits_ptr"], tag))
        want = np.where(b == 0x80, 0x80, b & 0x7F) if tag in ("fp8e4b8", "fp8e5b16") else b & 0x7F
        bad = ~nan_in & (got != want)
        if bad.any():
            i = int(np.argmax(bad))
            return f"abs of code {b[i]:#04x}: got {got[i]:#04x}, expected {want[i]:#04x}"
        nan_out = np.isnan(dtypes.decode(out["out_ptr"], tag))
        bad = nan_in & (~nan_out | ((got & 0x80) != 0 if tag not in ("fp8e4b8", "fp8e5b16") else False))
        if bad.any():
            i = int(np.argmax(bad))
            return f"abs of the NaN {b[i]:#04x}: got {got[i]:#04x}, not a positive NaN"
    return check


def _cases():
    cases = []
    for tag in FORMATS:
        f8 = _lang(tag)
        for dst in ("fp32", "fp16"):
            cases.append(Case(
                id=f"fp8_storage/decode-{tag}-to-{dst}", kernel=decode_kernel,
                constexprs={"FP8": f8, "DST": _lang(dst), "BLOCK": 256}, inputs={"bits_ptr": _all_codes()},
                outputs={"z_ptr": Out(dst, (256,), poison="sentinel")},
                reference=lambda bits_ptr, tag=tag: dtypes.decode(bits_ptr, tag), rtol=0.0, atol=0.0))
            for rnd in ("rtne", "rtz"):
                cases.append(Case(
                    id=f"fp8_storage/encode-{dst}-to-{tag}-{rnd}", kernel=encode_kernel, grid=(N // 256,),
                    constexprs={"FP8": f8, "RND": rnd, "BLOCK": 256}, inputs={"x_ptr": _conversion_inputs(tag, dst)},
                    outputs={"bits_ptr": Out("uint8", (N,), poison="sentinel")},
                    reference=lambda x_ptr, tag=tag, rnd=rnd: _encode(x_ptr, tag, rnd)))
        cases.append(Case(
            id=f"fp8_storage/roundtrip-fp32-{tag}", kernel=roundtrip_kernel, constexprs={"FP8": f8, "BLOCK": 256},
            inputs={"bits_ptr": _all_codes()}, outputs={"out_ptr": Out("uint8", (256,), poison="sentinel")},
            reference=lambda bits_ptr, tag=tag: _encode(dtypes.decode(bits_ptr, tag), tag, "rtne")))
        cases.append(Case(
            id=f"fp8_storage/abs-{tag}", kernel=abs_kernel, constexprs={"FP8": f8, "BLOCK": 256},
            inputs={"bits_ptr": _all_codes()}, outputs={"out_ptr": Out("uint8", (256,), poison="sentinel")},
            check=_abs_check(tag)))
        cases.append(Case(
            id=f"fp8_storage/transpose-{tag}", kernel=transpose_kernel, constexprs={"M": 64, "N": 32},
            inputs={"x_ptr": _representable(tag, (64 * 32,), np.inf)},
            outputs={"z_ptr": Out(tag, (32 * 64,), poison="sentinel")},
            reference=lambda x_ptr: x_ptr.reshape(64, 32).T.reshape(-1), rtol=0.0, atol=0.0))
    for ta, tb in [(t, t) for t in FORMATS] + [("fp8e4b15", "fp8e5"), ("fp8e4b8", "fp8e5b16")]:
        lim_a, lim_b = (min(8.0, _magnitudes(t)[0][-1]) for t in (ta, tb))
        cases.append(Case(
            id=f"fp8_storage/dot-{ta}-x-{tb}", kernel=dot_kernel, constexprs={"M": 32, "N": 32, "K": 64},
            inputs={"a_ptr": _representable(ta, (32 * 64,), lim_a), "b_ptr": _representable(tb, (64 * 32,), lim_b)},
            outputs={"c_ptr": Out("fp32", (32 * 32,))},
            reference=lambda a_ptr, b_ptr: (a_ptr.reshape(32, 64) @ b_ptr.reshape(64, 32)).reshape(-1),
            **tol(dtypes.ACCUM_TOLERANCE, "fp32")))
    return cases


CASES = _cases()
