"""Dtypes of the suite: storage in numpy, exact decoding, round-to-nearest-even encoding, tolerances.

numpy has no bf16 or fp8, so values of those types are carried as their raw bits (``uint16`` /
``uint8`` arrays) plus a dtype tag; :func:`encode` and :func:`decode` convert between the bits and
exact float64 values.  Every float dtype decodes exactly into float64, so references are computed
in float64 and compared against the decoded outputs with the tolerances of :data:`TOLERANCE`.
"""
from __future__ import annotations

import functools

import numpy as np

INT_DTYPES = ("int8", "int16", "int32", "int64")
UINT_DTYPES = ("uint8", "uint16", "uint32", "uint64")
INTEGER_DTYPES = INT_DTYPES + UINT_DTYPES
FLOAT_DTYPES = ("fp16", "bf16", "fp32", "fp64")
FP8_DTYPES = ("fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16")
ALL_DTYPES = INTEGER_DTYPES + FLOAT_DTYPES

#: tag -> numpy storage dtype (raw bits for the types numpy lacks)
STORAGE = {
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "fp16": np.float16, "bf16": np.uint16, "fp32": np.float32, "fp64": np.float64,
    "fp8e4nv": np.uint8, "fp8e5": np.uint8, "fp8e4b15": np.uint8, "fp8e4b8": np.uint8, "fp8e5b16": np.uint8,
}

#: tag -> name of the ``tritium.language`` dtype
LANG_NAME = {
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
    "fp8e4nv": "float8e4nv", "fp8e5": "float8e5", "fp8e4b15": "float8e4b15", "fp8e4b8": "float8e4b8",
    "fp8e5b16": "float8e5b16",
}

#: dtypes whose storage is raw bits: they reach a kernel through ``tritium.reinterpret``
RAW_BITS = ("bf16",) + FP8_DTYPES

#: (rtol, atol) when comparing a float output with a float64 reference.  The reference is exact,
#: the output is rounded once to its dtype (about half an ulp: 2^-11 fp16, 2^-8 bf16, 2^-24 fp32),
#: plus slack for the few-ulp error GPU math libraries document.  Integers compare exactly.
#: Cases may loosen these (reductions, dot, transcendental functions) with ``rtol=``/``atol=``;
#: every such override is a named constant below.
TOLERANCE = {
    "fp64": (1e-12, 1e-12),
    "fp32": (1e-5, 1e-6),
    "fp16": (2e-3, 1e-3),
    "bf16": (1.6e-2, 1e-2),
    "fp8e4nv": (1.3e-1, 2e-3),
    "fp8e5": (2.6e-1, 2e-5),
    "fp8e4b15": (1.3e-1, 2e-6),
    "fp8e4b8": (1.3e-1, 1e-3),
    "fp8e5b16": (2.6e-1, 1e-5),
}
#: transcendental functions (exp, log, sin, erf...): a few ulp in fp32
MATH_TOLERANCE = {"fp64": (1e-9, 1e-12), "fp32": (4e-6, 1e-6), "fp16": (2e-3, 1e-3), "bf16": (1.6e-2, 1e-2)}
#: accumulating ops (sum, cumsum, dot): error grows with the number of terms
ACCUM_TOLERANCE = {"fp64": (1e-10, 1e-10), "fp32": (1e-4, 1e-4), "fp16": (1e-2, 1e-1), "bf16": (5e-2, 5e-1)}
#: libdevice's fast_* approximations, the gamma and inverse-erf functions, sinpi/cospi
FAST_MATH_TOLERANCE = (2e-5, 1e-5)
#: tf32 dot: inputs rounded to 10 mantissa bits
TF32_TOLERANCE = (1e-2, 1e-2)


def is_float(tag: str) -> bool:
    return tag in FLOAT_DTYPES or tag in FP8_DTYPES


def is_int(tag: str) -> bool:
    return tag in INTEGER_DTYPES


def is_signed(tag: str) -> bool:
    return tag in INT_DTYPES


def bits_of(tag: str) -> int:
    return 8 if tag in FP8_DTYPES else 16 if tag == "bf16" else np.dtype(STORAGE[tag]).itemsize * 8


def int_range(tag: str) -> tuple[int, int]:
    info = np.iinfo(STORAGE[tag])
    return int(info.min), int(info.max)


# ---- exact decoding ---------------------------------------------------------------------------

#: the fp8 formats beside e5m2 (decoded through fp16): (exponent bits, bias, NaN codes).  All have a
#: sign bit, 3 mantissa bits for 4 exponent bits (2 for 5), subnormals and no infinities.
#: fp8e4nv: NaN at S.1111.111 (max 448); fp8e4b15 (Triton's bias-15 format): no NaN, 0x7F is 1.875;
#: fp8e4b8 / fp8e5b16 (the FNUZ formats): the code 0x80 (negative zero elsewhere) is the only NaN.
_SMALL_FP8 = {"fp8e4nv": (4, 7, (0x7F, 0xFF)), "fp8e4b15": (4, 15, ()), "fp8e4b8": (4, 8, (0x80,)),
              "fp8e5b16": (5, 16, (0x80,))}
#: the code a NaN is encoded as (fp8e4b15 has none: NaN becomes the largest magnitude, 0x7F, signed)
_NAN_CODE = {"fp8e4nv": 0x7F, "fp8e5": 0x7E, "fp8e4b8": 0x80, "fp8e5b16": 0x80, "bf16": 0x7FC0}
_NO_NEG_ZERO = ("fp8e4b8", "fp8e5b16")


def _decode_small(bits: np.ndarray, tag: str) -> np.ndarray:
    e_bits, bias, nans = _SMALL_FP8[tag]
    m_bits = 7 - e_bits
    b = bits.astype(np.int64)
    sign = np.where(b & 0x80, -1.0, 1.0)
    exp = (b >> m_bits) & ((1 << e_bits) - 1)
    frac = (b & ((1 << m_bits) - 1)).astype(np.float64) / (1 << m_bits)
    val = np.where(exp == 0, frac * 2.0 ** (1 - bias), (1.0 + frac) * np.exp2(exp - float(bias)))
    val = sign * val
    return np.where(np.isin(b, nans), np.nan, val)


def decode(bits: np.ndarray, tag: str) -> np.ndarray:
    """Storage array -> exact values (float64 for floats, the integer dtype itself for ints)."""
    bits = np.asarray(bits)
    if tag == "bf16":
        with np.errstate(invalid="ignore"):
            return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if tag == "fp8e5":
        return (bits.astype(np.uint16) << 8).view(np.float16).astype(np.float64)
    if tag in _SMALL_FP8:
        return _decode_small(bits, tag)
    if is_float(tag):
        with np.errstate(invalid="ignore"):  # signalling NaNs from bitcasts
            return bits.astype(np.float64)
    return bits.astype(STORAGE[tag])


# ---- round-to-nearest-even encoding -----------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _finite_table(tag: str):
    """All non-negative finite values of a small format, ascending, with their codes."""
    n = 1 << bits_of(tag)
    codes = np.arange(n // 2, dtype=np.uint32).astype(STORAGE[tag])
    vals = decode(codes, tag)
    keep = np.isfinite(vals)
    return vals[keep], codes[keep]


def _encode_table(x: np.ndarray, tag: str, saturate: bool) -> np.ndarray:
    vals, codes = _finite_table(tag)
    mag = np.abs(x)
    hi = np.clip(np.searchsorted(vals, mag), 1, len(vals) - 1)
    lo = hi - 1
    d_lo, d_hi = mag - vals[lo], vals[hi] - mag
    even_lo = (codes[lo].astype(np.int64) & 1) == 0
    pick = np.where((d_lo < d_hi) | ((d_lo == d_hi) & even_lo), lo, hi)
    out = codes[pick].astype(np.int64)
    top = vals[-1]
    half_ulp = (vals[-1] - vals[-2]) / 2
    over = mag >= top + half_ulp
    if saturate:
        out = np.where(mag > top, codes[-1], out)
    else:  # the next code after the largest finite one is +inf
        out = np.where(over, int(codes[-1]) + 1, out)
    sign = 1 << (bits_of(tag) - 1)
    neg = np.signbit(x)
    if tag in _NO_NEG_ZERO:  # a negative value that rounds to zero is +0 (0x80 is the NaN)
        neg = neg & (out != 0)
    out = np.where(neg, out | sign, out)
    if tag in _NAN_CODE:
        out = np.where(np.isnan(x), _NAN_CODE[tag], out)
    else:  # no NaN in the format: the largest magnitude, with the NaN's sign
        out = np.where(np.isnan(x), codes[-1] | np.where(np.signbit(x), sign, 0), out)
    return out.astype(STORAGE[tag])


def encode(values, tag: str) -> np.ndarray:
    """Exact values -> storage array of ``tag``, rounding floats to nearest-even; integers wrap."""
    values = np.asarray(values)
    if tag in ("bf16", "fp8e5"):
        return _encode_table(values.astype(np.float64), tag, saturate=False)
    if tag in _SMALL_FP8:  # no infinity: out-of-range values saturate to the largest finite value
        return _encode_table(values.astype(np.float64), tag, saturate=True)
    if is_float(tag):
        with np.errstate(over="ignore"):
            return values.astype(STORAGE[tag])
    if values.dtype.kind == "f":
        raise TypeError(f"refusing to encode floats as {tag}: round them in the reference")
    return values.astype(STORAGE[tag])


def round_to(values, tag: str) -> np.ndarray:
    """Round float64 values to ``tag`` and back: what storing them in that dtype keeps."""
    return decode(encode(values, tag), tag)


def poison(tag: str, shape, kind: str) -> np.ndarray:
    """An output buffer whose unwritten elements show: NaN for floats, the byte 0x5A repeated
    otherwise (``kind="sentinel"`` forces the sentinel for floats too, for outputs that may
    legitimately hold NaN)."""
    if is_float(tag) and kind == "nan":
        return encode(np.full(shape, np.nan), tag)
    return np.frombuffer(b"\x5a" * (int(np.prod(shape)) * np.dtype(STORAGE[tag]).itemsize),
                         dtype=STORAGE[tag]).reshape(shape).copy()
