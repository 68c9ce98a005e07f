"""Translation of ``arith`` ops.  TTIR integers are signless and held in signed numpy types; the
unsigned ops reinterpret their operands.  Results of float ops on bf16/fp8 are rounded to the type
after every op (``TypeInfo.fix``)."""
from __future__ import annotations

import numpy as np

from .numerics import rounder, type_info
from .registry import emit, translates


def wrap_int(v: int, bits: int) -> int:
    half = 1 << (bits - 1)
    return ((int(v) + half) % (1 << bits)) - half


@translates("ub.poison")
def _poison(tr, op):
    """A value no path defines: any value is allowed; the interpreter gives zeros."""
    info = type_info(op.result.type)
    t = op.result.type
    shape = tuple(t.get_shape()) if hasattr(t, "get_shape") else ()
    tr.const(op.result, np.zeros(shape, info.hold) if shape else info.zero)
    return None


@translates("arith.constant")
def _constant(tr, op):
    info = type_info(op.result.type)
    attr = op.value
    if hasattr(attr, "get_values"):
        vals = attr.get_values()
        shape = tuple(op.result.type.get_shape())
        if info.kind == "float" and any(isinstance(v, int) for v in vals):
            vals = list(_float_from_bits(vals, info))
        if info.kind == "bool":
            vals = [bool(v) for v in vals]
        elif info.kind == "int":
            vals = [wrap_int(v, info.bits) for v in vals]
        arr = np.array(vals, np.float64 if info.kind == "float" else info.hold)
        arr = np.full(shape, arr.flat[0], arr.dtype) if attr.is_splat() else arr.reshape(shape)
        data = rounder(info)(arr) if info.kind == "float" else np.ascontiguousarray(arr)
    else:
        v = attr.value.data
        if info.kind == "float" and isinstance(v, int):
            v = float(_float_from_bits([v], info)[0])
        if info.kind == "bool":
            data = np.bool_(v)
        elif info.kind == "int":
            data = info.hold(wrap_int(v, info.bits))
        else:
            data = rounder(info)(np.float64(v))
    tr.const(op.result, data)
    return None


def _float_from_bits(vals, info):
    """Hex float literals (``dense<0xFF800000>``) may arrive as their bit patterns."""
    bits = np.array([int(v) % (1 << (8 * info.itemsize)) for v in vals]).astype(np.dtype(info.store).str.replace("f", "u").replace("i", "u"))
    raw = bits.view(info.store)
    return np.asarray(info.load(raw) if info.load is not None else raw, np.float64)


# -- integers ------------------------------------------------------------------------------------
def _divsi(a, b):
    zero = b == 0
    bs = np.where(zero, 1, b).astype(b.dtype)
    r = np.fmod(a, bs)
    q = (a - r) // bs  # exact; INT_MIN / -1 wraps to INT_MIN
    return _scalar(np.where(zero, -1, q).astype(a.dtype), a)


def _remsi(a, b):
    zero = b == 0
    r = np.fmod(a, np.where(zero, 1, b).astype(b.dtype))
    return _scalar(np.where(zero, a, r).astype(a.dtype), a)


def _scalar(r, like):
    return r[()] if np.ndim(like) == 0 and np.ndim(r) == 0 else r


def _unsigned(fn, info):
    u, s = info.unsigned, info.hold
    return lambda a, b: fn(np.asarray(a).astype(u), np.asarray(b).astype(u)).astype(s)


def _divui(a, b):
    zero = b == 0
    q = a // np.where(zero, 1, b).astype(b.dtype)
    return np.where(zero, np.array(-1).astype(a.dtype), q)


def _remui(a, b):
    zero = b == 0
    return np.where(zero, a, a % np.where(zero, 1, b).astype(b.dtype))


def _shifts(info):
    bits, u, s = info.bits, info.unsigned, info.hold

    def shl(a, b):
        n = np.asarray(b).astype(u)
        big = n >= bits
        return _scalar(np.where(big, 0, np.left_shift(a, np.where(big, 0, n).astype(s))).astype(s), a)

    def shrsi(a, b):
        n = np.asarray(b).astype(u)
        big = n >= bits
        return _scalar(np.right_shift(a, np.where(big, bits - 1, n).astype(s)).astype(s), a)

    def shrui(a, b):
        n = np.asarray(b).astype(u)
        big = n >= bits
        r = np.right_shift(np.asarray(a).astype(u), np.where(big, 0, n).astype(u))
        return _scalar(np.where(big, 0, r).astype(s), a)

    return shl, shrsi, shrui


_INT_BINARY = {"arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
               "arith.andi": np.bitwise_and, "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor,
               "arith.maxsi": np.maximum, "arith.minsi": np.minimum,
               "arith.divsi": _divsi, "arith.remsi": _remsi}
_BOOL_BINARY = {"arith.addi": np.logical_xor, "arith.subi": np.logical_xor, "arith.muli": np.logical_and,
                "arith.maxui": np.logical_or, "arith.minui": np.logical_and,
                "arith.maxsi": np.logical_and, "arith.minsi": np.logical_or}


@translates(*_INT_BINARY, "arith.divui", "arith.remui", "arith.maxui", "arith.minui",
            "arith.shli", "arith.shrsi", "arith.shrui")
def _int_binary(tr, op):
    info = type_info(op.result.type)
    name = op.name
    if info.kind == "bool" and name in _BOOL_BINARY:
        return emit(tr, op, _BOOL_BINARY[name])
    if name in ("arith.shli", "arith.shrsi", "arith.shrui"):
        shl, shrsi, shrui = _shifts(info)
        return emit(tr, op, {"arith.shli": shl, "arith.shrsi": shrsi, "arith.shrui": shrui}[name])
    if name in _INT_BINARY:
        return emit(tr, op, _INT_BINARY[name])
    fn = {"arith.divui": _divui, "arith.remui": _remui, "arith.maxui": np.maximum,
          "arith.minui": np.minimum}[name]
    un = _unsigned(fn, info)
    return emit(tr, op, lambda a, b: _scalar(un(a, b), a))


# -- floats --------------------------------------------------------------------------------------
_FLOAT_BINARY = {"arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply,
                 "arith.divf": np.divide, "arith.remf": np.fmod,
                 "arith.maximumf": np.maximum, "arith.minimumf": np.minimum,  # NaN propagates
                 "arith.maxnumf": np.fmax, "arith.minnumf": np.fmin}         # NaN is ignored


@translates(*_FLOAT_BINARY, "arith.negf")
def _float_op(tr, op):
    fix = type_info(op.result.type).fix
    fn = np.negative if op.name == "arith.negf" else _FLOAT_BINARY[op.name]
    if fix is None:
        return emit(tr, op, fn)
    if op.name == "arith.negf":
        return emit(tr, op, fn)  # exact
    return emit(tr, op, lambda a, b: fix(fn(a, b)))


# -- comparisons and select ----------------------------------------------------------------------
_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal}


@translates("arith.cmpi")
def _cmpi(tr, op):
    info = type_info(op.lhs.type)
    pred = op.predicate_name
    fn = _CMP[pred[-2:]]
    if pred in ("eq", "ne"):
        return emit(tr, op, fn)
    if info.kind == "bool":  # i1 true is -1 signed, 1 unsigned
        conv = (lambda x: -np.asarray(x, np.int8)) if pred[0] == "s" else (lambda x: np.asarray(x, np.int8))
    elif pred[0] == "u":
        u = info.unsigned
        conv = lambda x: np.asarray(x).astype(u)  # noqa: E731
    else:
        return emit(tr, op, fn)
    return emit(tr, op, lambda a, b: fn(conv(a), conv(b)))


def _unordered(fn):
    return lambda a, b: ~fn(a, b)


_CMPF = {"oeq": np.equal, "ogt": np.greater, "oge": np.greater_equal, "olt": np.less, "ole": np.less_equal,
         "one": lambda a, b: np.less(a, b) | np.greater(a, b),
         "ord": lambda a, b: ~(np.isnan(a) | np.isnan(b)),
         "ueq": _unordered(lambda a, b: np.less(a, b) | np.greater(a, b)),
         "ugt": _unordered(np.less_equal), "uge": _unordered(np.less), "ult": _unordered(np.greater_equal),
         "ule": _unordered(np.greater), "une": np.not_equal,
         "uno": lambda a, b: np.isnan(a) | np.isnan(b),
         "false": lambda a, b: np.zeros(np.broadcast(a, b).shape, bool)[()],
         "true": lambda a, b: np.ones(np.broadcast(a, b).shape, bool)[()]}


@translates("arith.cmpf")
def _cmpf(tr, op):
    return emit(tr, op, _CMPF[op.predicate_name])


@translates("arith.select")
def _select(tr, op):
    if not op.result.type.__class__.__name__ == "TensorType":
        # scalar-typed ops also run on whole slices inside reduce/scan combine regions
        return emit(tr, op, lambda c, a, b: np.where(c, a, b) if type(c) is np.ndarray else a if c else b)
    return emit(tr, op, np.where)


# -- casts ---------------------------------------------------------------------------------------
@translates("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.extf", "arith.truncf",
            "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui", "arith.bitcast")
def _cast(tr, op):
    src, dst = type_info(op.input.type), type_info(op.result.type)
    return emit(tr, op, cast_fn(op.name.split(".")[1], src, dst))


def cast_fn(kind, src, dst):
    """``x -> x'`` converting held values of ``src`` to ``dst`` as ``arith.<kind>`` does."""
    s_bool, d_bool = src.kind == "bool", dst.kind == "bool"
    if kind in ("extsi", "index_cast") or (kind == "trunci" and not d_bool):
        if s_bool:
            return lambda x: (-np.asarray(x, dst.hold)).astype(dst.hold)[()] if np.ndim(x) == 0 else \
                -np.asarray(x, dst.hold)
        if d_bool:
            return lambda x: (np.asarray(x) & 1) != 0
        return lambda x: x.astype(dst.hold)
    if kind == "trunci":
        return lambda x: (x & 1) != 0
    if kind == "extui":
        if s_bool:
            return lambda x: np.asarray(x).astype(dst.hold)[()] if np.ndim(x) == 0 else x.astype(dst.hold)
        u = src.unsigned
        return lambda x: x.astype(u).astype(dst.hold)
    if kind in ("extf", "truncf"):
        return rounder(dst)
    if kind in ("sitofp", "uitofp"):
        rnd = rounder(dst)
        pre = (lambda x: -np.asarray(x, np.float64)) if s_bool and kind == "sitofp" else \
            (lambda x: np.asarray(x).astype(src.unsigned)) if kind == "uitofp" and not s_bool else (lambda x: x)
        wide = np.float64 if dst.fix is not None else dst.hold
        return lambda x: _scalar(rnd(np.asarray(pre(x)).astype(wide)), x)
    if kind in ("fptosi", "fptoui"):
        return _fp_to_int(dst, kind == "fptoui")
    if kind == "bitcast":
        return bitcast_fn(src, dst)
    raise NotImplementedError(kind)


def _fp_to_int(dst, unsigned):
    """Truncation toward zero, saturating at the type's range and NaN -> 0, as NVIDIA's ``cvt.rzi``."""
    if dst.kind == "bool":
        return lambda x: np.asarray(np.trunc(x) != 0)[()] if np.ndim(x) == 0 else np.trunc(x) != 0
    bits = dst.bits
    lo, hi = (0.0, 2.0 ** bits) if unsigned else (-(2.0 ** (bits - 1)), 2.0 ** (bits - 1))
    target = np.uint64 if unsigned else np.int64

    def f(x):
        t = np.trunc(np.asarray(x, np.float64))
        over = t >= hi
        safe = np.where(np.isnan(t) | over, 0.0, np.maximum(t, lo))
        r = safe.astype(target)
        r = np.where(over, target(int(hi) - 1), r).astype(dst.unsigned if unsigned else dst.hold)
        r = r.astype(dst.hold)
        return r[()] if np.ndim(x) == 0 else r
    return f


def bitcast_fn(src, dst):
    if src.kind in ("ptr", "block") or dst.kind in ("ptr", "block") or src == dst:
        return lambda x: x

    def f(x):
        bits = src.save(x) if src.save is not None else np.asarray(x, src.hold)
        raw = np.asarray(bits).view(dst.store)
        r = dst.load(raw) if dst.load is not None else raw
        return r[()] if np.ndim(x) == 0 else r
    return f
