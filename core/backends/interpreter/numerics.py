"""Numerics of the types TTIR names: how each is held while computing, how it is stored, and
round-to-nearest-even emulation of the small floats numpy lacks (bf16, fp8, tf32; the fp8
formats' encodings are :mod:`tritium.ttir.float_formats`).

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

from ...ttir.float_formats import FP8_FORMATS, FloatFormat, decode_table, encode, format_of, round_to_format
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


def _fp8_info(fmt: FloatFormat) -> "TypeInfo":
    """An fp8 format held as float32 values on its grid (NaN kept as NaN; it is encoded as the
    format says when stored)."""
    table = decode_table(fmt).astype(np.float32)

    def fix(x, rtz=False):
        return _scalar_like(round_to_format(x, fmt, rtz).astype(np.float32), x)
    return TypeInfo(fmt.name, "float", 8, np.float32, np.uint8, fix=fix, load=lambda v: table[v],
                    save=lambda v: encode(v, fmt, saturate=False), rtz=lambda x: fix(x, rtz=True))


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
PTR = TypeInfo("ptr", "ptr", 64, np.int64, np.int64)
BLOCK = TypeInfo("block_ptr", "block", 64, object, object)

_FLOATS = {b.Float16Type: F16, b.Float32Type: F32, b.Float64Type: F64, b.BFloat16Type: BF16}
_FP8 = {fmt.ir_name: _fp8_info(fmt) for fmt in FP8_FORMATS.values()}


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
    fmt = format_of(t)
    if fmt is not None:
        return _FP8[fmt.ir_name]
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
