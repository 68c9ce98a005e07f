"""Numerics of the types TTIR names: how each is held while computing, how it is stored, and
round-to-nearest-even emulation of the small floats numpy lacks (bf16, fp8, tf32).

bf16 and fp8 values are *held* as float32 numbers that lie exactly on the small type's grid: every
op computes in float32 and rounds its result back, as hardware rounds each op's result.  They are
*stored* as their bit patterns (uint16 / uint8).  f16 is numpy's float16, whose ufuncs already
round each result once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from xdsl.dialects import builtin as b

from ...ttir.types import PointerType, element_type


def _round_bits(x: np.ndarray, drop: int, away: bool = False) -> np.ndarray:
    """Round float32 ``x`` to ``23 - drop`` mantissa bits (nearest even, or nearest with ties away
    from zero when ``away``) by integer arithmetic on its bits; NaN and inf pass through."""
    x = np.asarray(x, np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    half = np.uint64(1 << (drop - 1))
    if away:
        r = u + half
    else:
        r = u + (half - np.uint64(1)) + ((u >> np.uint64(drop)) & np.uint64(1))
    r = (r >> np.uint64(drop)) << np.uint64(drop)
    out = r.astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(x), out, x)


def round_bf16(x, rtz: bool = False):
    if rtz:
        x = np.asarray(x, np.float32)
        r = (x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
        return _scalar_like(np.where(np.isnan(x), x, r), x)
    return _scalar_like(_round_bits(x, 16), x)


def round_tf32(x):
    """TF32 conversion as the tensor cores' ``cvt.rna.tf32.f32``: 10 mantissa bits, ties away."""
    return _round_bits(x, 13, away=True)


def _scalar_like(r, x):
    return r[()] if np.ndim(x) == 0 else r


@dataclass(frozen=True)
class SmallFloat:
    """A binary format with ``man`` mantissa bits, smallest normal exponent ``emin`` and largest
    finite value ``maxv``; ``saturate``: overflow clamps to ``maxv`` (fp8, as the ``satfinite``
    conversions do) instead of becoming inf."""

    man: int
    emin: int
    maxv: float
    saturate: bool

    def round(self, x, rtz: bool = False):
        x64 = np.asarray(x, np.float64)
        _, e = np.frexp(x64)
        e = np.maximum(e - 1, self.emin)
        q = np.ldexp(1.0, e - self.man)
        r = (np.trunc if rtz else np.rint)(x64 / q) * q
        big = np.abs(r) > self.maxv
        if self.saturate or rtz:
            r = np.where(big, np.copysign(self.maxv, x64), r)
        else:
            r = np.where(big, np.copysign(np.inf, x64), r)
        r = np.where(np.isnan(x64), np.nan, np.where(np.isinf(x64), x64 if not self.saturate else
                                                     np.copysign(self.maxv, x64), r))
        return _scalar_like(r.astype(np.float32), x)


E4M3 = SmallFloat(3, -6, 448.0, True)
E5M2 = SmallFloat(2, -14, 57344.0, True)


def _decode_table(fmt: str) -> np.ndarray:
    bits = np.arange(256, dtype=np.uint32)
    sign = np.where(bits & 0x80, -1.0, 1.0)
    if fmt == "e5m2":
        return (bits.astype(np.uint16) << np.uint16(8)).view(np.float16).astype(np.float32)
    exp, man = (bits >> 3) & 0xF, (bits & 7).astype(np.float64)
    val = np.where(exp == 0, man / 8 * 2.0 ** -6, (1 + man / 8) * 2.0 ** (exp.astype(np.float64) - 7))
    val = np.where((exp == 15) & (man == 7), np.nan, val)
    return (sign * val).astype(np.float32)


E4M3_TABLE = _decode_table("e4m3")
E5M2_TABLE = _decode_table("e5m2")
_E4M3_POS = E4M3_TABLE[:127]  # 0x00..0x7E ascending, 0x7F is NaN


def encode_fp8(x, fmt: str):
    """Bits of values already on the fp8 grid (``uint8``)."""
    x = np.asarray(x, np.float32)
    if fmt == "e5m2":
        return (x.astype(np.float16).view(np.uint16) >> np.uint16(8)).astype(np.uint8)
    mag = np.searchsorted(_E4M3_POS, np.abs(x)).astype(np.uint8)
    sign = np.where(np.signbit(x), np.uint8(0x80), np.uint8(0))
    return np.where(np.isnan(x), np.uint8(0x7F), mag | sign).astype(np.uint8)


@dataclass(frozen=True)
class TypeInfo:
    """How values of one TTIR scalar type live in the interpreter.

    ``hold``: numpy dtype values are computed in; ``store``: dtype of their bytes in memory;
    ``fix``: rounding applied to every computed result (None when numpy already rounds);
    ``load``/``save``: storage <-> held conversions (None: identity)."""

    name: str
    kind: str  # "int", "bool", "float", "ptr", "block"
    bits: int
    hold: type
    store: type
    fix: Callable | None = None
    load: Callable | None = None
    save: Callable | None = None
    rtz: Callable | None = None

    def __post_init__(self):
        object.__setattr__(self, "itemsize", np.dtype(self.store).itemsize)
        object.__setattr__(self, "zero", np.zeros((), self.hold))

    @property
    def unsigned(self) -> type:
        return {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64, 1: np.bool_}[self.bits]


def _bf16_load(bits):
    return (np.asarray(bits).astype(np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def _bf16_save(x):
    return (np.asarray(x, np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)


_INTS = {w: TypeInfo(f"i{w}", "int", w, dt, dt) for w, dt in
         ((8, np.int8), (16, np.int16), (32, np.int32), (64, np.int64))}
BOOL = TypeInfo("i1", "bool", 1, np.bool_, np.int8, load=lambda v: v != 0, save=lambda v: np.asarray(v, np.int8))
F16 = TypeInfo("f16", "float", 16, np.float16, np.float16)
F32 = TypeInfo("f32", "float", 32, np.float32, np.float32)
F64 = TypeInfo("f64", "float", 64, np.float64, np.float64)
BF16 = TypeInfo("bf16", "float", 16, np.float32, np.uint16, fix=round_bf16, load=_bf16_load, save=_bf16_save,
                rtz=lambda x: round_bf16(x, rtz=True))
FP8E4 = TypeInfo("fp8e4nv", "float", 8, np.float32, np.uint8, fix=E4M3.round, load=lambda v: E4M3_TABLE[v],
                 save=lambda v: encode_fp8(v, "e4m3"), rtz=lambda x: E4M3.round(x, rtz=True))
FP8E5 = TypeInfo("fp8e5", "float", 8, np.float32, np.uint8, fix=E5M2.round, load=lambda v: E5M2_TABLE[v],
                 save=lambda v: encode_fp8(v, "e5m2"), rtz=lambda x: E5M2.round(x, rtz=True))
PTR = TypeInfo("ptr", "ptr", 64, np.int64, np.int64)
BLOCK = TypeInfo("block_ptr", "block", 64, object, object)

_FLOATS = {b.Float16Type: F16, b.Float32Type: F32, b.Float64Type: F64, b.BFloat16Type: BF16,
           b.Float8E4M3FNType: FP8E4, b.Float8E5M2Type: FP8E5}


def type_info(t) -> TypeInfo:
    """The :class:`TypeInfo` of a scalar type or of a tensor type's elements."""
    t = element_type(t)
    if isinstance(t, b.IntegerType):
        w = t.width.data
        return BOOL if w == 1 else _INTS[w]
    if isinstance(t, b.IndexType):
        return _INTS[64]
    if isinstance(t, PointerType):
        return BLOCK if t.is_block_pointer else PTR
    for cls, info in _FLOATS.items():
        if isinstance(t, cls):
            return info
    raise NotImplementedError(f"the interpreter has no numpy representation for type {t}")


def rounder(info: TypeInfo) -> Callable:
    """``x -> x`` held as ``info``: casts to the hold dtype and applies the type's rounding."""
    hold, fix = info.hold, info.fix
    if fix is None:
        return lambda x: hold(x) if np.ndim(x) == 0 else np.asarray(x).astype(hold, copy=False)
    return lambda x: fix(_to_f32(x))


def _to_f32(x):
    """float32 from any input without spoiling a later rounding: wider inputs (float64 from
    integer conversions or fp64) go through round-to-odd, so rounding the result to bf16/fp8 gives
    the same answer as rounding the exact value once (the hardware's single conversion)."""
    a = np.asarray(x)
    if a.dtype != np.float64:
        return np.asarray(x, np.float32) if np.ndim(x) else np.float32(x)
    with np.errstate(over="ignore", invalid="ignore"):
        f = a.astype(np.float32)
        back = f.astype(np.float64)
        # truncate toward zero: step back one ulp where round-to-nearest went away from zero
        over = np.isfinite(a) & (np.abs(back) > np.abs(a))
        f = np.where(over, np.nextafter(f, np.float32(0)), f)
        inexact = np.isfinite(a) & (f.astype(np.float64) != a)
        bits = f.view(np.uint32) | inexact.astype(np.uint32)  # the sticky bit
    out = bits.view(np.float32)
    return out if np.ndim(x) else np.float32(out[()])
