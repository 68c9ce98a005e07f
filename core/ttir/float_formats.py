"""The small floating-point formats TTIR names (the fp8 variants): their encodings, and exact
numpy decoding / rounding, for every part of the compiler that converts them.

A format has a sign bit, ``exp_bits`` exponent bits with ``bias``, ``man_bits`` mantissa bits and
subnormals (exponent field 0).  They differ in their special values:

===========  ===============  ====  ==========  ==============================  =========
language     TTIR type        bias  infinities  NaN                             max
===========  ===============  ====  ==========  ==============================  =========
fp8e4nv      f8E4M3FN            7  no          S.1111.111                      448
fp8e5        f8E5M2             15  S.11111.00  S.11111.xx (xx != 0)            57344
fp8e4b15     f8E4M3B11FNUZ      15  no          none (0x7F is 1.875)            1.875
fp8e4b8      f8E4M3FNUZ          8  no          0x80 only (no negative zero)    240
fp8e5b16     f8E5M2FNUZ         16  no          0x80 only (no negative zero)    57344
===========  ===============  ====  ==========  ==============================  =========

``fp8e4b15`` is Triton's own format (bias 15, so every value is exact in fp16 and converts with
bit shifts); Triton's IR carries it as ``f8E4M3B11FNUZ``, a type tag only: its values follow the
table above, not that MLIR type's bias of 11.

Conversions *to* these formats round to nearest even (or toward zero when asked), saturate at the
largest finite value (inputs beyond it, infinities included, become ±max: the ``satfinite``
behaviour of the hardware conversions), and turn NaN into the format's NaN — or, in a format
without one (``fp8e4b15``), into ±max as Triton's conversion does.  A result that rounds to zero
in a format without negative zero is +0.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FloatFormat:
    name: str       # the language's name (``fp8e4b15``)
    ir_name: str    # the MLIR type's name (``f8E4M3B11FNUZ``)
    exp_bits: int
    man_bits: int
    bias: int
    nan: str        # "ieee": all-ones exponent with a non-zero mantissa (and infinities);
    #                 "max": S.1..1.1..1; "neg_zero": the sign bit alone; "none"

    @property
    def bits(self) -> int:
        return 1 + self.exp_bits + self.man_bits

    @property
    def sign_bit(self) -> int:
        return 1 << (self.bits - 1)

    @property
    def has_inf(self) -> bool:
        return self.nan == "ieee"

    @property
    def has_neg_zero(self) -> bool:
        return self.nan != "neg_zero"

    @property
    def max_code(self) -> int:
        """The largest finite magnitude's code."""
        top = self.sign_bit - 1
        if self.nan == "ieee":
            return top - (1 << self.man_bits)  # the exponent field below all-ones, mantissa all-ones
        return top - 1 if self.nan == "max" else top

    @property
    def nan_code(self) -> int | None:
        """The code a NaN converts to (None: the format has no NaN)."""
        if self.nan == "ieee":  # the quiet NaN: all-ones exponent, mantissa's top bit
            return (((1 << self.exp_bits) - 1) << self.man_bits) | (1 << (self.man_bits - 1))
        return {"max": self.sign_bit - 1, "neg_zero": self.sign_bit, "none": None}[self.nan]

    @property
    def min_normal_exp(self) -> int:
        return 1 - self.bias

    @property
    def max_value(self) -> float:
        return float(decode_table(self)[self.max_code])


FP8_FORMATS = {f.name: f for f in (
    FloatFormat("fp8e4nv", "f8E4M3FN", 4, 3, 7, "max"),
    FloatFormat("fp8e5", "f8E5M2", 5, 2, 15, "ieee"),
    FloatFormat("fp8e4b15", "f8E4M3B11FNUZ", 4, 3, 15, "none"),
    FloatFormat("fp8e4b8", "f8E4M3FNUZ", 4, 3, 8, "neg_zero"),
    FloatFormat("fp8e5b16", "f8E5M2FNUZ", 5, 2, 16, "neg_zero"),
)}
_BY_IR_NAME = {f.ir_name: f for f in FP8_FORMATS.values()}


def format_of(t) -> FloatFormat | None:
    """The format of a TTIR float type (an xDSL ``Float8*Type``, or its MLIR name); None for the
    types numpy and LLVM know (f16, bf16, f32, f64)."""
    name = t if isinstance(t, str) else getattr(t, "name", "")
    return _BY_IR_NAME.get(name)


# --- exact numpy decoding and rounding --------------------------------------------------------

@functools.lru_cache(maxsize=None)
def decode_table(fmt: FloatFormat) -> np.ndarray:
    """float64 value of every code (NaN where the code is a NaN, ±inf where it is infinite)."""
    codes = np.arange(1 << fmt.bits, dtype=np.int64)
    sign = np.where(codes & fmt.sign_bit, -1.0, 1.0)
    mag = codes & (fmt.sign_bit - 1)
    exp = mag >> fmt.man_bits
    man = (mag & ((1 << fmt.man_bits) - 1)).astype(np.float64)
    frac = man / (1 << fmt.man_bits)
    val = np.where(exp == 0, frac * 2.0 ** fmt.min_normal_exp, (1.0 + frac) * np.exp2(exp - float(fmt.bias)))
    val = sign * val
    emax = (1 << fmt.exp_bits) - 1
    if fmt.nan == "ieee":
        val = np.where(exp == emax, np.where(man == 0, sign * np.inf, np.nan), val)
    elif fmt.nan == "max":
        val = np.where(mag == fmt.sign_bit - 1, np.nan, val)
    elif fmt.nan == "neg_zero":
        val = np.where(codes == fmt.sign_bit, np.nan, val)
    val.setflags(write=False)
    return val


def round_to_format(x, fmt: FloatFormat, rtz: bool = False, saturate: bool = True) -> np.ndarray:
    """``x`` rounded to ``fmt``'s values (nearest even, or toward zero), saturating; returned as
    float64 (NaN stays NaN even in a format without one: :func:`encode` maps it).  With
    ``saturate=False`` a format with infinities keeps them and overflows to them (IEEE rules)."""
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        _, e = np.frexp(x)
        e = np.maximum(e - 1, fmt.min_normal_exp)
        q = np.ldexp(1.0, e - fmt.man_bits)
        r = (np.trunc if rtz else np.rint)(x / q) * q
        top = fmt.max_value
        over = np.copysign(np.inf if fmt.has_inf and not saturate and not rtz else top, x)
        r = np.where(np.abs(r) > top, over, r)
        r = np.where(np.isinf(x), x if fmt.has_inf and not saturate else np.copysign(top, x), r)
    return np.where(np.isnan(x), x, r)


@functools.lru_cache(maxsize=None)
def _magnitudes(fmt: FloatFormat) -> np.ndarray:
    return decode_table(fmt)[:fmt.max_code + 1]  # 0 .. max, ascending


def encode(x, fmt: FloatFormat, rtz: bool = False, saturate: bool = True) -> np.ndarray:
    """The codes (``uint8``) of ``x`` converted to ``fmt`` as the module docstring says
    (``saturate=False``: infinities stay infinite where the format has them)."""
    r = round_to_format(x, fmt, rtz, saturate)
    inf = np.isinf(r)
    mag = np.searchsorted(_magnitudes(fmt), np.abs(np.where(inf | np.isnan(r), 0.0, r)))
    if fmt.has_inf:
        mag = np.where(inf, fmt.max_code + 1, mag)  # the all-ones exponent, mantissa 0
    neg = np.signbit(r) & ((mag != 0) | fmt.has_neg_zero)
    code = np.where(neg, mag | fmt.sign_bit, mag)
    nan = np.isnan(r)
    if fmt.nan_code is not None:
        code = np.where(nan, fmt.nan_code, code)
    else:
        code = np.where(nan, np.where(np.signbit(r), fmt.sign_bit, 0) | fmt.max_code, code)
    return code.astype(np.uint8)


__all__ = ["FloatFormat", "FP8_FORMATS", "format_of", "decode_table", "round_to_format", "encode"]
