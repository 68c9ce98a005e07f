"""Exact decoding of the OCP microscaling (MX) element and scale formats into float64.

* e2m1 (fp4): sign, 2 exponent bits (bias 1), 1 mantissa bit; no inf or NaN.  The 16 codes are
  +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}.  Two codes share a byte, the first in the low nibble (bits
  0-3) and the second in the high nibble, as ``tl.dot_scaled`` documents it.
* e8m0 (a scale): an unsigned biased exponent, ``2 ** (code - 127)``; 0xFF is NaN.
* e4m3 (fn: no infinities, S.1111.111 is NaN) and e5m2 (IEEE-like) are fp8e4nv / fp8e5 of
  :mod:`tritium.ttir.float_formats`.
"""
from __future__ import annotations

import numpy as np

from ...ttir.float_formats import FP8_FORMATS, decode_table

_FP8_TABLE = {"e4m3": decode_table(FP8_FORMATS["fp8e4nv"]), "e5m2": decode_table(FP8_FORMATS["fp8e5"])}


def _e2m1_table() -> np.ndarray:
    code = np.arange(16)
    exp, man = (code >> 1) & 3, (code & 1).astype(np.float64)
    mag = np.where(exp == 0, man * 0.5, (1.0 + man / 2.0) * np.exp2(exp - 1.0))
    return np.where(code & 8, -mag, mag)


E2M1_TABLE = _e2m1_table()
E8M0_TABLE = np.where(np.arange(256) == 0xFF, np.nan, np.exp2(np.arange(256) - 127.0))


def decode_e8m0(codes) -> np.ndarray:
    return E8M0_TABLE[np.asarray(codes).view(np.uint8)]


def unpack_e2m1(packed, axis: int) -> np.ndarray:
    """Bytes of two e2m1 codes each -> their float64 values, twice as long along ``axis`` (the
    low nibble's value first)."""
    b = np.asarray(packed).view(np.uint8)
    pair = np.stack([E2M1_TABLE[b & 0xF], E2M1_TABLE[b >> 4]], axis=axis + 1)
    shape = list(b.shape)
    shape[axis] *= 2
    return pair.reshape(shape)


def decode(values, fmt: str, pack_axis: int) -> np.ndarray:
    """An operand of ``fmt`` as the interpreter holds it -> exact float64 values.  fp8 operands
    arrive decoded (held as float32) or as their ``i8`` bits; bf16/fp16 as floats."""
    v = np.asarray(values)
    if fmt == "e2m1":
        return unpack_e2m1(v, pack_axis)
    if fmt in _FP8_TABLE and v.dtype.kind in "iu":
        return _FP8_TABLE[fmt][v.view(np.uint8)]
    with np.errstate(invalid="ignore"):  # fp8 NaNs held in float32 widen as signalling NaNs
        return v.astype(np.float64)


def apply_scale(x: np.ndarray, scale, k_axis: int) -> np.ndarray:
    """``x * 2^(scale - 127)`` with one scale per 32 elements along ``k_axis``; ``scale`` has the
    operand's other dimension before its K blocks (``[.., rows, K // 32]``)."""
    s = np.repeat(decode_e8m0(scale), 32, axis=-1)
    if k_axis != x.ndim - 1:
        s = np.swapaxes(s, -1, -2)
    with np.errstate(invalid="ignore", over="ignore"):
        return x * s


__all__ = ["E2M1_TABLE", "E8M0_TABLE", "apply_scale", "decode", "decode_e8m0", "unpack_e2m1"]
