"""Translation of ``math`` ops, ``tt.extern_elementwise`` (libdevice / ocml names) and the
elementwise ``tt`` extras (``clampf``, ``precise_*``, ``mulhiui``, ``fp_to_fp``).  Float functions
compute in the held dtype (float32 for bf16/fp8) and round the result to the type."""
from __future__ import annotations

import math
import re

import numpy as np
from ...frontend.errors import error_at_op


def ieee_remainder(x, y):
    """C / IEEE 754 ``remainder``: ``x - n*y`` with ``n`` the nearest integer to ``x/y`` (ties to even),
    what libdevice's ``remainderf`` computes (numpy's ``remainder`` is the floored modulo)."""
    x, y = np.asarray(x), np.asarray(y)
    out = np.vectorize(math.remainder, otypes=[np.float64])(x.astype(np.float64), y.astype(np.float64))
    return out.astype(np.result_type(x, y))

from .libdevice import libdevice_function
from .numerics import rounder, type_info
from .registry import emit, translates

_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)
_lgamma = np.frompyfunc(math.lgamma, 1, 1)
_tgamma = np.frompyfunc(lambda v: math.gamma(v) if v > 0 or v != int(v) else float("nan"), 1, 1)


def _via_f64(fn):
    def g(x):
        r = fn(np.asarray(x, np.float64)).astype(np.float64)
        return r.astype(np.asarray(x).dtype)
    return g


def _round_half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(np.asarray(x).dtype)


def _clz(info):
    bits, u = info.bits, info.unsigned

    def f(x):
        v = np.asarray(x).astype(u)
        n = np.zeros(v.shape, np.int64)
        for sh in (32, 16, 8, 4, 2, 1):
            if sh >= bits:
                continue
            top = (v >> u(bits - sh)) == 0  # the top `sh` bits are zero
            n += np.where(top, sh, 0)
            v = np.where(top, v << u(sh), v)
        n += np.where((v >> u(bits - 1)) == 0, 1, 0)
        r = n.astype(info.hold)
        return r[()] if np.ndim(x) == 0 else r
    return f


def _popc(info):
    u = info.unsigned

    def f(x):
        v = np.asarray(x).astype(u)
        if hasattr(np, "bitwise_count"):
            r = np.bitwise_count(v).astype(info.hold)
        else:  # numpy < 2
            r = np.unpackbits(v.reshape(-1, 1).view(np.uint8), axis=1).sum(1).reshape(v.shape).astype(info.hold)
        return r[()] if np.ndim(x) == 0 else r
    return f


UNARY = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "log10": np.log10,
         "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos, "tan": np.tan,
         "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
         "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
         "absf": np.abs, "fabs": np.abs, "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
         "roundeven": np.rint, "rint": np.rint, "nearbyint": np.rint, "round": _round_half_away,
         "erf": _via_f64(_erf), "erfc": _via_f64(_erfc), "lgamma": _via_f64(_lgamma),
         "tgamma": _via_f64(_tgamma), "log1p": np.log1p, "expm1": np.expm1, "cbrt": np.cbrt,
         "exp10": lambda x: np.power(np.asarray(10, np.asarray(x).dtype), x), "sqrt_rn": np.sqrt,
         "rcp": lambda x: 1 / x, "frcp_rn": lambda x: 1 / x,
         "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit}
BINARY = {"powf": np.power, "pow": np.power, "atan2": np.arctan2, "fmax": np.fmax, "fmin": np.fmin,
          "fmod": np.fmod, "hypot": np.hypot, "copysign": np.copysign, "fdim": lambda a, b: np.maximum(a - b, 0),
          "div_rn": np.divide, "fdiv_rn": np.divide, "nextafter": np.nextafter, "remainder": ieee_remainder,
          "ldexp": lambda a, b: np.ldexp(a, b).astype(np.asarray(a).dtype)}
TERNARY = {"fma": lambda a, b, c: (np.asarray(a, np.float64) * b + c).astype(np.asarray(a).dtype),
           "fma_rn": lambda a, b, c: (np.asarray(a, np.float64) * b + c).astype(np.asarray(a).dtype)}


@translates(*("math." + n for n in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "absf",
                                    "floor", "ceil", "erf", "fma", "tanh", "log1p", "expm1", "powf",
                                    "roundeven", "round", "tan", "atan", "atan2")))
def _math_float(tr, op):
    name = op.name.split(".")[1]
    fn = UNARY.get(name) or BINARY.get(name) or TERNARY[name]
    return _float_emit(tr, op, fn)


def _float_emit(tr, op, fn):
    info = type_info(op.results[0].type)
    if info.kind != "float":
        return emit(tr, op, fn)
    fix = rounder(info)
    return emit(tr, op, lambda *xs: fix(fn(*xs)))


@translates("math.absi")
def _absi(tr, op):
    return emit(tr, op, np.abs)


@translates("math.ctlz", "math.ctpop")
def _bits(tr, op):
    info = type_info(op.results[0].type)
    return emit(tr, op, (_clz if op.name == "math.ctlz" else _popc)(info))


# -- tt elementwise extras -----------------------------------------------------------------------
@translates("tt.precise_sqrt", "tt.precise_divf")
def _precise(tr, op):
    return _float_emit(tr, op, np.sqrt if op.name == "tt.precise_sqrt" else np.divide)


@translates("tt.clampf")
def _clampf(tr, op):
    if op.propagateNan.value.data:
        return emit(tr, op, lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi))
    return emit(tr, op, lambda x, lo, hi: np.fmin(np.fmax(x, lo), hi))


@translates("tt.mulhiui")
def _mulhiui(tr, op):
    info = type_info(op.result.type)
    if info.bits <= 32:
        u, sh = info.unsigned, np.uint64(info.bits)

        def hi(a, b):
            p = np.asarray(a).astype(u).astype(np.uint64) * np.asarray(b).astype(u).astype(np.uint64)
            r = (p >> sh).astype(u).astype(info.hold)
            return r[()] if np.ndim(a) == 0 and np.ndim(b) == 0 else r
        return emit(tr, op, hi)

    def hi64(a, b):
        a, b = np.asarray(a).astype(np.uint64), np.asarray(b).astype(np.uint64)
        m32, s32 = np.uint64(0xFFFFFFFF), np.uint64(32)
        al, ah, bl, bh = a & m32, a >> s32, b & m32, b >> s32
        ll, lh, hl, hh = al * bl, al * bh, ah * bl, ah * bh
        mid = (ll >> s32) + (lh & m32) + (hl & m32)
        r = (hh + (lh >> s32) + (hl >> s32) + (mid >> s32)).astype(np.int64)
        return r[()] if r.ndim == 0 else r
    return emit(tr, op, hi64)


@translates("tt.fp_to_fp")
def _fp_to_fp(tr, op):
    dst = type_info(op.result.type)
    rtz = op.rounding is not None and op.rounding.value.data == 0
    if rtz and dst.rtz is not None:
        return emit(tr, op, lambda x: dst.rtz(np.asarray(x, np.float32)))
    if rtz and dst.name == "f16":
        def to_f16_rtz(x):
            x32 = np.asarray(x, np.float32)
            r = x32.astype(np.float16)
            toward = np.abs(r.astype(np.float32)) > np.abs(x32)  # rounded away from zero: step back
            r = np.where(toward & np.isfinite(x32), np.nextafter(r, np.float16(0)), r)
            return r[()] if r.ndim == 0 else r
        return emit(tr, op, to_f16_rtz)
    return emit(tr, op, rounder(dst))


# -- libdevice / ocml ----------------------------------------------------------------------------
_INT_FUNCS = {"popc": _popc, "popcll": _popc, "clz": _clz, "clzll": _clz}


def extern_function(symbol: str, info):
    """numpy implementation of a libdevice (``__nv_expf``) or ocml (``__ocml_exp_f32``) function."""
    name = re.sub(r"^(__nv_|__ocml_|__imf_)", "", symbol)
    name = re.sub(r"(_f16|_f32|_f64)$", "", name)
    name = name.replace("fast_", "")
    if name in _INT_FUNCS:
        return _INT_FUNCS[name](info)
    if name in ("umulhi", "mulhi", "umul64hi", "mul64hi"):
        return None
    for cand in (name, name[:-1] if name.endswith("f") else None):
        if cand is None:
            continue
        for table in (UNARY, BINARY, TERNARY):
            if cand in table:
                return table[cand]
    if name in ("llrint", "lrint", "llrintf"):
        return np.rint
    return None


def _generic(name: str):
    return UNARY.get(name) or BINARY.get(name) or TERNARY.get(name)


@translates("tt.extern_elementwise")
def _extern(tr, op):
    info = type_info(op.srcs[0].type) if op.srcs else type_info(op.result.type)
    symbol = op.symbol.data
    fn = libdevice_function(symbol, _generic) if symbol.startswith("__nv_") else extern_function(symbol, info)
    if fn is None:
        raise error_at_op(op, f"the interpreter backend has no implementation of the extern function {symbol}")
    out = type_info(op.result.type)
    if out.kind == "float":
        return _float_emit(tr, op, fn)
    cast = out.hold
    return emit(tr, op, lambda *xs: np.asarray(fn(*xs)).astype(cast)[()] if all(np.ndim(x) == 0 for x in xs)
                else np.asarray(fn(*xs)).astype(cast))


@translates("tt.elementwise_inline_asm")
def _inline_asm(tr, op):
    raise error_at_op(op, "inline_asm_elementwise is not supported by the interpreter backend: the assembly is "
                          "for a GPU target; run the kernel on its GPU backend (backend='nvidia')")
