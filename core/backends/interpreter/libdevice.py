"""numpy versions of the libdevice functions ``tritium.language.extra.libdevice`` calls
(``__nv_*`` symbols), for ``tt.extern_elementwise``.

Integers arrive held as signed numpy integers of their width (TTIR integers are signless); the
symbol says when to read them as unsigned.  Directed rounding (``_rz``/``_rd``/``_ru``) is exact:
the round-to-nearest result is stepped by one ulp when the exact value lies on the other side,
found with error-free transformations (TwoSum, Dekker's product) in float64.  The Bessel
functions (``j0 j1 y0 y1 jn yn cyl_bessel_i1``) have no numpy version: they are reported as
unsupported on the interpreter."""
from __future__ import annotations

import math
import re

import numpy as np

_F = {"f": np.float32, "d": np.float64}
_UINT = {32: np.uint32, 64: np.uint64}


def _s(r, x):
    return r[()] if np.ndim(x) == 0 and np.ndim(r) else r


# -- directed rounding ---------------------------------------------------------------------------
def _split(a):
    c = 134217729.0 * a  # 2^27 + 1: Veltkamp splitting of a float64
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a, b):
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _directed(r, below, above, mode):
    """Step ``r`` (round-to-nearest) one ulp where the exact value is below/above it."""
    if mode == "rd":
        r = np.where(below, np.nextafter(r, r.dtype.type(-np.inf)), r)
    elif mode == "ru":
        r = np.where(above, np.nextafter(r, r.dtype.type(np.inf)), r)
    elif mode == "rz":
        toward = (below & (r > 0)) | (above & (r < 0))
        r = np.where(toward, np.nextafter(r, r.dtype.type(0)), r)
    return r


def _round_to(hi, err_sign, dtype, mode):
    """``hi`` (float64) plus an error whose sign is ``err_sign``, rounded to ``dtype`` in ``mode``."""
    with np.errstate(all="ignore"):
        r = np.asarray(hi).astype(dtype)
        diff = np.asarray(hi, np.float64) - r.astype(np.float64)
        sign = np.where(diff != 0, np.sign(diff), err_sign)
        sign = np.where(np.isfinite(r), sign, 0)
    return _directed(r, sign < 0, sign > 0, mode)


def _arith(op, dtype, mode):
    def f(*xs):
        xs = [np.asarray(x, np.float64) for x in xs]
        with np.errstate(all="ignore"):
            if op in ("add", "sub"):
                a, b = xs[0], xs[1] if op == "add" else -xs[1]
                hi, lo = _two_sum(a, b)
                sign = np.sign(lo)
            elif op == "mul":
                hi, lo = _two_prod(xs[0], xs[1])
                sign = np.sign(lo)
            elif op in ("div", "rcp"):
                a, b = (xs[0], xs[1]) if op == "div" else (np.ones_like(xs[0]), xs[0])
                hi = a / b
                p, e = _two_prod(hi, b)
                sign = np.sign((a - p) - e) * np.sign(b)
            elif op == "sqrt":
                hi = np.sqrt(xs[0])
                p, e = _two_prod(hi, hi)
                sign = np.sign((xs[0] - p) - e)
            else:  # fma
                p, pe = _two_prod(xs[0], xs[1])
                hi, se = _two_sum(p, xs[2])
                sign = np.sign(se + pe)
        return _s(_round_to(hi, sign, dtype, mode), xs[0])
    return f


# -- conversions ---------------------------------------------------------------------------------
_TO_INT = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}


def _float_to_int(bits, unsigned, mode):
    lo, hi = (0, 2 ** bits - 1) if unsigned else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)

    def f(x):
        x = np.asarray(x, np.float64)
        with np.errstate(invalid="ignore"):
            v = np.clip(_TO_INT[mode](x), lo, hi)
            v = np.where(np.isnan(x), 0, v)
        out = np.array([int(e) for e in np.ravel(v)], dtype=object).reshape(v.shape)
        r = np.array([e & ((1 << bits) - 1) for e in np.ravel(out)], np.uint64).reshape(v.shape)
        return _s(r.astype(_UINT[bits]).view(np.int32 if bits == 32 else np.int64), x)
    return f


def _int_to_float(bits, unsigned, dtype, mode):
    def f(x):
        x = np.asarray(x)
        if unsigned:
            x = (x.astype(np.int64) & 0xFFFFFFFF) if bits == 32 else x.astype(np.int64).view(np.uint64)
        exact = np.array([int(e) for e in np.ravel(x)], dtype=object).reshape(x.shape)
        r = x.astype(dtype)
        robj = np.array([float(e) for e in np.ravel(r)], dtype=object).reshape(x.shape)
        below = np.asarray(exact < robj, bool)
        above = np.asarray(exact > robj, bool)
        return _s(_directed(r, below, above, mode), x)
    return f


def _double_to_float(mode):
    def f(x):
        x = np.asarray(x, np.float64)
        with np.errstate(all="ignore"):
            r = x.astype(np.float32)
            d = x - r.astype(np.float64)
        return _s(_directed(r, d < 0, d > 0, mode), x)
    return f


# -- integers and bits -----------------------------------------------------------------------------
def _u32(x):
    return np.asarray(x).astype(np.int64) & 0xFFFFFFFF


def _clz(bits):
    def f(x):
        v = np.asarray(x).astype(np.int64)
        u = (v & 0xFFFFFFFF) if bits == 32 else v.view(np.uint64)
        out = np.array([bits - int(e).bit_length() for e in np.ravel(u)], np.int32).reshape(np.shape(x))
        return _s(out, x)
    return f


def _popc(bits):
    def f(x):
        u = _u32(x) if bits == 32 else np.asarray(x).astype(np.int64).view(np.uint64)
        return _s(np.array([bin(int(e)).count("1") for e in np.ravel(u)], np.int32).reshape(np.shape(x)), x)
    return f


def _ffs(bits):
    def f(x):
        u = _u32(x) if bits == 32 else np.asarray(x).astype(np.int64).view(np.uint64)
        return _s(np.array([(int(e) & -int(e)).bit_length() for e in np.ravel(u)], np.int32).reshape(np.shape(x)), x)
    return f


def _brev(bits):
    def f(x):
        u = _u32(x) if bits == 32 else np.asarray(x).astype(np.int64).view(np.uint64)
        r = [int(format(int(e), f"0{bits}b")[::-1], 2) for e in np.ravel(u)]
        out = np.array(r, np.uint64).reshape(np.shape(x))
        return _s(out.astype(np.uint32).view(np.int32) if bits == 32 else out.view(np.int64), x)
    return f


def _mulhi(bits, unsigned):
    def f(a, b):
        a, b = np.asarray(a), np.asarray(b)
        a_, b_ = np.broadcast_arrays(a, b)
        mask = (1 << bits) - 1
        conv = (lambda e: int(e) & mask) if unsigned else int
        r = [((conv(x) * conv(y)) >> bits) & mask for x, y in zip(np.ravel(a_), np.ravel(b_))]
        out = np.array(r, np.uint64).reshape(a_.shape)
        return _s(out.astype(np.uint32).view(np.int32) if bits == 32 else out.view(np.int64), a)
    return f


def _mul24(unsigned):
    def f(a, b):
        def low24(v):
            v = np.asarray(v).astype(np.int64) & 0xFFFFFF
            return v if unsigned else np.where(v & 0x800000, v - 0x1000000, v)
        return _s((low24(a) * low24(b)).astype(np.int64).astype(np.int32), a)
    return f


def _hadd(unsigned, round_up):
    def f(a, b):
        conv = _u32 if unsigned else (lambda v: np.asarray(v).astype(np.int64))
        return _s(((conv(a) + conv(b) + (1 if round_up else 0)) >> 1).astype(np.int32), a)
    return f


def _sad(unsigned):
    def f(a, b, c):
        conv = _u32 if unsigned else (lambda v: np.asarray(v).astype(np.int64))
        return _s((np.abs(conv(a) - conv(b)) + _u32(c)).astype(np.int64).astype(np.int32), a)
    return f


def _byte_perm(x, y, s):
    x, y, s = _u32(x), _u32(y), _u32(s)
    src = x | (y << 32)
    out = np.zeros(np.broadcast(x, y, s).shape, np.int64)
    for i in range(4):
        sel = (s >> (4 * i)) & 7
        out |= ((src >> (8 * sel)) & 0xFF) << (8 * i)
    return _s(out.astype(np.uint32).view(np.int32), x)


# -- special functions -----------------------------------------------------------------------------
def _frompy(fn):
    u = np.frompyfunc(fn, 1, 1)
    return lambda x: _s(np.asarray(u(np.asarray(x, np.float64)), np.float64), x)


def _erfinv(y):
    if not -1 <= y <= 1 or y != y:
        return float("nan")
    if abs(y) == 1:
        return math.copysign(float("inf"), y)
    x = 0.0
    for _ in range(100):  # Newton on erf(x) = y from a good start
        step = (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
        x -= step
        if abs(step) <= 1e-17 * max(1.0, abs(x)):
            break
    return x


def _erfcx(x):
    if x < 25:
        return math.exp(x * x) * math.erfc(x)
    s, t = 1.0, 1.0  # asymptotic series, accurate for large x
    for k in range(1, 8):
        t *= -(2 * k - 1) / (2 * x * x)
        s += t
    return s / (x * math.sqrt(math.pi))


_SPECIAL = {
    "erfinv": _frompy(_erfinv),
    "erfcx": _frompy(_erfcx),
    "normcdf": _frompy(lambda x: 0.5 * math.erfc(-x / math.sqrt(2))),
    "normcdfinv": _frompy(lambda p: -math.sqrt(2) * _erfcinv_small(2 * p) if p < 0.5 else
                          math.sqrt(2) * _erfinv(2 * p - 1)),
    "cyl_bessel_i0": lambda x: np.i0(np.asarray(x, np.float64)),
    "sinpi": lambda x: np.sin(np.pi * np.asarray(x, np.float64)),
    "cospi": lambda x: np.cos(np.pi * np.asarray(x, np.float64)),
    "rcbrt": lambda x: 1 / np.cbrt(np.asarray(x, np.float64)),
    "logb": lambda x: np.floor(np.log2(np.abs(np.asarray(x, np.float64)))),
    "rhypot": lambda a, b: 1 / np.hypot(np.asarray(a, np.float64), b),
    "norm3d": lambda a, b, c: np.sqrt(np.asarray(a, np.float64) ** 2 + np.asarray(b, np.float64) ** 2 + np.asarray(c, np.float64) ** 2),
    "rnorm3d": lambda a, b, c: 1 / np.sqrt(np.asarray(a, np.float64) ** 2 + np.asarray(b, np.float64) ** 2 + np.asarray(c, np.float64) ** 2),
    "norm4d": lambda a, b, c, d: np.sqrt(sum(np.asarray(v, np.float64) ** 2 for v in (a, b, c, d))),
    "rnorm4d": lambda a, b, c, d: 1 / np.sqrt(sum(np.asarray(v, np.float64) ** 2 for v in (a, b, c, d))),
    "saturate": lambda x: np.where(np.isnan(x), 0, np.clip(x, 0, 1)),
    "powi": lambda a, n: np.power(np.asarray(a, np.float64), np.asarray(n, np.float64)),
    "scalbn": lambda a, n: np.ldexp(np.asarray(a, np.float64), np.asarray(n, np.int32)),
    "ilogb": lambda x: _s(np.frexp(np.asarray(x, np.float64))[1].astype(np.int32) - 1, x),
    "llround": lambda x: np.trunc(np.asarray(x, np.float64) + np.copysign(0.5, x)),
    "llrint": np.rint, "finite": np.isfinite, "isfinite": np.isfinite,
}


def _erfcinv_small(y):
    # erfc(x) = y for small y: Newton on erfc, where 1 - y would lose the digits
    if y <= 0:
        return float("inf") if y == 0 else float("nan")
    if y >= 2:
        return float("-inf") if y == 2 else float("nan")
    if y > 0.5:
        return _erfinv(1 - y)
    x = math.sqrt(-math.log(y))
    for _ in range(100):
        step = (math.erfc(x) - y) / (-2 / math.sqrt(math.pi) * math.exp(-x * x))
        x -= step
        if abs(step) <= 1e-17 * abs(x):
            break
    return x


_SPECIAL["erfcinv"] = _frompy(_erfcinv_small)
_UNSUPPORTED = {"j0", "j1", "y0", "y1", "jn", "yn", "cyl_bessel_i1"}


def libdevice_function(symbol: str, generic):
    """The numpy function for libdevice ``symbol``, ``generic(name)`` for plain math names (the
    interpreter's table of ``exp``, ``atan2``...), or None when the interpreter has none."""
    name = symbol[len("__nv_"):]
    m = re.fullmatch(r"([fd])(add|sub|mul|div|rcp|sqrt)_(rn|rz|rd|ru)", name)
    if m:
        return _arith(m[2], _F[m[1]], m[3])
    m = re.fullmatch(r"fma(f?)_(rn|rz|rd|ru)", name)
    if m:
        return _arith("fma", np.float32 if m[1] else np.float64, m[2])
    if name == "frsqrt_rn":
        return lambda x: 1 / np.sqrt(np.asarray(x, np.float64))
    m = re.fullmatch(r"(float|double)2(u?)(int|ll)_(rn|rz|rd|ru)", name)
    if m:
        return _float_to_int(32 if m[3] == "int" else 64, bool(m[2]), m[4])
    m = re.fullmatch(r"(u?)(int|ll)2(float|double)_(rn|rz|rd|ru)", name)
    if m:
        return _int_to_float(32 if m[2] == "int" else 64, bool(m[1]), np.float32 if m[3] == "float" else np.float64, m[4])
    m = re.fullmatch(r"double2float_(rn|rz|rd|ru)", name)
    if m:
        return _double_to_float(m[1])
    views = {"float_as_int": (np.float32, np.int32), "float_as_uint": (np.float32, np.int32),
             "int_as_float": (np.int32, np.float32), "uint_as_float": (np.int32, np.float32),
             "double_as_longlong": (np.float64, np.int64), "longlong_as_double": (np.int64, np.float64)}
    if name in views:
        src, dst = views[name]
        return lambda x: _s(np.asarray(x).astype(src).view(dst), x)
    if name in ("double2loint", "double2hiint"):
        half = 0 if name == "double2loint" else 1
        return lambda x: _s(np.asarray(x, np.float64).view(np.int32).reshape(np.shape(x) + (2,))[..., half], x)
    if name == "hiloint2double":
        return lambda hi, lo: _s((_u32(hi) << 32 | _u32(lo)).astype(np.int64).view(np.float64), hi)
    ints = {"clz": _clz(32), "clzll": _clz(64), "popc": _popc(32), "popcll": _popc(64), "ffs": _ffs(32),
            "ffsll": _ffs(64), "brev": _brev(32), "brevll": _brev(64), "mulhi": _mulhi(32, False),
            "umulhi": _mulhi(32, True), "mul64hi": _mulhi(64, False), "umul64hi": _mulhi(64, True),
            "mul24": _mul24(False), "umul24": _mul24(True), "hadd": _hadd(False, False),
            "uhadd": _hadd(True, False), "rhadd": _hadd(False, True), "urhadd": _hadd(True, True),
            "sad": _sad(False), "usad": _sad(True), "byte_perm": _byte_perm,
            "abs": lambda x: np.abs(x), "llabs": lambda x: np.abs(x)}
    if name in ints:
        return ints[name]
    if name == "fast_fdividef":
        return np.divide
    name = name.replace("fast_", "")
    for cand in (name, name[:-1] if name.endswith(("f", "d")) else None):
        if cand is None:
            continue
        if cand in _UNSUPPORTED:
            return None
        if cand in _SPECIAL:
            return _SPECIAL[cand]
        if cand in ("isnan", "isinf", "signbit", "isfinite"):
            return getattr(np, cand)
        fn = generic(cand)
        if fn is not None:
            return fn
    return None
