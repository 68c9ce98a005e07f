"""The device library in plain LLVM IR, for machines without ROCm's bitcode: definitions of the
``__ocml_*`` functions that kernels call (``tl.extra.libdevice``, fp64 ``tl.math``), and of the
libdevice functions ocml lacks (conversions, bit operations, arithmetic in a chosen rounding mode, the
``fast_*`` approximations).

Each definition is written for the function type the call declared.  Where LLVM's AMDGPU target
selects an operation (``floor``, ``sqrt``, ``fma``, fp32 ``exp``/``log``/``sin``...) the body is
that intrinsic; fp64 transcendental functions come from :mod:`math_f64`, fp32 ones from
:mod:`math_lib` or, where that has none, from the fp64 function on the widened argument (exact
enough for fp32 and slower than ocml; fp64 runs at half or full rate on CDNA, 1/32 on RDNA3).
:func:`define` returns False for a symbol it cannot provide; :func:`provides` says so up front."""
from __future__ import annotations

import re

import llvmlite.ir as ir

from tritium.conversion.target_info import intrinsic

from . import math_f64, math_lib

F32, F64 = ir.FloatType(), ir.DoubleType()
# llvm.<name> selected for both widths on AMDGPU
_INTRINSIC = {"floor": "floor", "ceil": "ceil", "trunc": "trunc", "rint": "rint", "nearbyint": "nearbyint",
              "round": "round", "fabs": "fabs", "sqrt": "sqrt", "fma": "fma", "copysign": "copysign",
              "fmax": "maxnum", "fmin": "minnum"}
# ... and for fp32 only (fp64 ones are math_f64's)
_INTRINSIC_F32 = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "log10": "log10", "sin": "sin",
                  "cos": "cos"}
_MATH_LIB_F32 = {"tan": "math.tan", "tanh": "math.tanh", "erf": "math.erf", "atan": "math.atan",
                 "atan2": "math.atan2", "log1p": "math.log1p", "expm1": "math.expm1", "pow": "math.powf"}
_CLASSIFY = {"isnan", "isinf", "isfinite", "signbit"}
_EXTRA = {"fdim", "ldexp", "pown"}

_OCML = re.compile(r"^__ocml_([a-z0-9]+)_f(32|64)$")
# libdevice names ocml has no function for (extern_names.ocml_name maps them to None)
_NV_ARITH = re.compile(r"^__nv_([fd])(add|sub|mul|div|sqrt|rcp)_r([nzdu])$")
_NV_FAST = {"__nv_fast_expf": "exp", "__nv_fast_exp10f": "exp10", "__nv_fast_logf": "log", "__nv_fast_log2f": "log2",
            "__nv_fast_log10f": "log10", "__nv_fast_sinf": "sin", "__nv_fast_cosf": "cos", "__nv_fast_tanf": "tan",
            "__nv_fast_powf": "pow"}
_NV_TO_INT = re.compile(r"^__nv_(float|double)2(int|uint|ll|ull)_r([nzdu])$")
_ROUND = {"n": "rint", "z": "trunc", "d": "floor", "u": "ceil"}
_NV_OTHER = {"__nv_fast_fdividef", "__nv_frsqrt_rn", "__nv_fmaf_rn", "__nv_fma_rn", "__nv_saturatef",
             "__nv_int2float_rn", "__nv_uint2float_rn", "__nv_int2double_rn", "__nv_uint2double_rn",
             "__nv_ll2double_rn", "__nv_ull2double_rn", "__nv_ll2float_rn", "__nv_ull2float_rn", "__nv_double2float_rn",
             "__nv_float_as_int", "__nv_float_as_uint", "__nv_int_as_float", "__nv_uint_as_float",
             "__nv_double_as_longlong", "__nv_longlong_as_double", "__nv_llrintf", "__nv_llrint",
             "__nv_clz", "__nv_clzll", "__nv_popc", "__nv_popcll", "__nv_ffs", "__nv_ffsll", "__nv_brev", "__nv_brevll",
             "__nv_mulhi", "__nv_umulhi", "__nv_mul64hi", "__nv_umul64hi", "__nv_abs", "__nv_llabs"}


def _ocml_parts(symbol: str):
    m = _OCML.match(symbol)
    return (m.group(1), int(m.group(2))) if m else (None, 0)


def provides(symbol: str) -> bool:
    base, bits = _ocml_parts(symbol)
    if base is not None:
        return (base in _INTRINSIC or base in _CLASSIFY or base in _EXTRA or base in math_f64.UNARY
                or base in math_f64.BINARY)
    return bool(_NV_ARITH.match(symbol) or _NV_TO_INT.match(symbol)) or symbol in _NV_FAST or symbol in _NV_OTHER


def _fp_name(ty) -> str:
    return "f64" if isinstance(ty, ir.DoubleType) else "f32"


def _llvm(b, name, ty, *args):
    return intrinsic(b, f"llvm.{name}.{_fp_name(ty)}", ty, list(args))


def _widened(b, fn, ty, args):
    """``fn`` (an fp64 builder) on fp32 arguments: widen, compute, round once."""
    if isinstance(ty, ir.DoubleType):
        return fn(b, *args)
    return b.fptrunc(fn(b, *(b.fpext(a, F64) for a in args)), F32)


def _ocml_body(b, base, ret, args):
    ty = args[0].type
    if base in _INTRINSIC:
        return _llvm(b, _INTRINSIC[base], ty, *args)
    if base in _CLASSIFY:
        ity = ir.IntType(64 if isinstance(ty, ir.DoubleType) else 32)
        x = args[0]
        if base == "isnan":
            t = b.fcmp_unordered("uno", x, x)
        elif base == "signbit":
            t = b.icmp_signed("<", b.bitcast(x, ity), ir.Constant(ity, 0))
        else:
            ax = _llvm(b, "fabs", ty, x)
            t = b.fcmp_ordered("==" if base == "isinf" else "<", ax, ir.Constant(ty, float("inf")))
        return b.zext(t, ret)
    if base == "ldexp":
        return intrinsic(b, f"llvm.ldexp.{_fp_name(ty)}.i32", ty, list(args))
    if base == "pown":
        args = [args[0], b.sitofp(args[1], ty)]
        base = "pow"
    if base == "fdim":
        x, y = args
        d = b.select(b.fcmp_ordered(">", x, y), b.fsub(x, y), ir.Constant(ty, 0.0))
        return b.select(b.fcmp_unordered("uno", x, y), b.fadd(x, y), d)
    if isinstance(ty, ir.FloatType):
        if base in _INTRINSIC_F32:
            return _llvm(b, _INTRINSIC_F32[base], ty, *args)
        if base in _MATH_LIB_F32:
            return math_lib.FP32[_MATH_LIB_F32[base]](b, *args)
    fn = math_f64.UNARY.get(base) or math_f64.BINARY[base]
    return _widened(b, fn, ty, args)


def _next_up(b, r):
    """The next float above ``r`` (finite or -inf): one step of its bits away from or toward 0."""
    ity = ir.IntType(64 if isinstance(r.type, ir.DoubleType) else 32)
    bits = b.bitcast(r, ity)
    zero = b.fcmp_ordered("==", r, ir.Constant(r.type, 0.0))
    step = b.select(b.icmp_signed("<", bits, ir.Constant(ity, 0)), b.sub(bits, ir.Constant(ity, 1)),
                    b.add(bits, ir.Constant(ity, 1)))
    return b.bitcast(b.select(zero, ir.Constant(ity, 1), step), r.type)


def _directed(b, op, mode, args):
    """``op`` rounded toward zero (``z``), down (``d``) or up (``u``): the nearest result moved one
    ulp where the exact result lies on the other side of it, as the error-free transforms show
    (TwoSum for add/sub, ``fma`` residuals for mul/div/sqrt)."""
    ty = args[0].type
    zero = ir.Constant(ty, 0.0)
    if op in ("add", "sub"):
        x, y = args[0], (args[1] if op == "add" else b.fneg(args[1]))
        r = b.fadd(x, y)
        yy = b.fsub(r, x)
        err = b.fadd(b.fsub(x, b.fsub(r, yy)), b.fsub(y, yy))             # exact - r
    elif op == "mul":
        r = b.fmul(*args)
        err = _llvm(b, "fma", ty, args[0], args[1], b.fneg(r))
    elif op in ("div", "rcp"):
        x, y = (args if op == "div" else (ir.Constant(ty, 1.0), args[0]))
        r = b.fdiv(x, y)
        rem = _llvm(b, "fma", ty, b.fneg(r), y, x)                          # x - r y, exact
        err = b.select(b.fcmp_ordered("<", y, zero), b.fneg(rem), rem)     # sign of (x/y - r)
    else:   # sqrt
        r = _llvm(b, "sqrt", ty, args[0])
        err = _llvm(b, "fma", ty, b.fneg(r), r, args[0])
    above, below = b.fcmp_ordered(">", err, zero), b.fcmp_ordered("<", err, zero)
    up, down = _next_up(b, r), b.fneg(_next_up(b, b.fneg(r)))
    if mode == "u":
        return b.select(above, up, r)
    if mode == "d":
        return b.select(below, down, r)
    pos = b.fcmp_ordered(">", r, zero)
    return b.select(b.and_(pos, below), down, b.select(b.and_(b.not_(pos), above), up, r))


def _nv_body(b, symbol, ret, args):
    m = _NV_ARITH.match(symbol)
    if m:
        x = args[0]
        op, mode = m.group(2), m.group(3)
        if mode != "n":
            return _directed(b, op, mode, args)
        if op == "sqrt":
            return _llvm(b, "sqrt", x.type, x)
        if op == "rcp":
            return b.fdiv(ir.Constant(x.type, 1.0), x)
        return {"add": b.fadd, "sub": b.fsub, "mul": b.fmul, "div": b.fdiv}[op](*args)
    m = _NV_TO_INT.match(symbol)
    if m:
        r = _llvm(b, _ROUND[m.group(3)], args[0].type, args[0])
        return (b.fptoui if m.group(2).startswith("u") else b.fptosi)(r, ret)
    if symbol in _NV_FAST:
        return _ocml_body(b, _NV_FAST[symbol], ret, args)
    x = args[0]
    if symbol == "__nv_fast_fdividef":
        return b.fdiv(*args)
    if symbol == "__nv_frsqrt_rn":
        return b.fdiv(ir.Constant(x.type, 1.0), _llvm(b, "sqrt", x.type, x))
    if symbol in ("__nv_fmaf_rn", "__nv_fma_rn"):
        return _llvm(b, "fma", x.type, *args)
    if symbol == "__nv_saturatef":   # NaN -> 0
        return _llvm(b, "minnum", x.type, _llvm(b, "maxnum", x.type, x, ir.Constant(x.type, 0.0)),
                     ir.Constant(x.type, 1.0))
    if symbol in ("__nv_int2float_rn", "__nv_int2double_rn", "__nv_ll2double_rn", "__nv_ll2float_rn"):
        return b.sitofp(x, ret)
    if symbol in ("__nv_uint2float_rn", "__nv_uint2double_rn", "__nv_ull2double_rn", "__nv_ull2float_rn"):
        return b.uitofp(x, ret)
    if symbol == "__nv_double2float_rn":
        return b.fptrunc(x, ret)
    if symbol in ("__nv_llrintf", "__nv_llrint"):
        return b.fptosi(_llvm(b, "rint", x.type, x), ret)
    if symbol.endswith(("_as_int", "_as_uint", "_as_float", "_as_longlong", "_as_double")):
        return b.bitcast(x, ret)
    ity = x.type
    if symbol in ("__nv_clz", "__nv_clzll"):
        r = b.ctlz(x, ir.Constant(ir.IntType(1), 0))
        return r if ity == ret else b.trunc(r, ret)
    if symbol in ("__nv_popc", "__nv_popcll"):
        r = intrinsic(b, f"llvm.ctpop.i{ity.width}", ity, [x])
        return r if ity == ret else b.trunc(r, ret)
    if symbol in ("__nv_ffs", "__nv_ffsll"):
        tz = b.cttz(x, ir.Constant(ir.IntType(1), 0))
        r = b.select(b.icmp_unsigned("==", x, ir.Constant(ity, 0)), ir.Constant(ity, 0), b.add(tz, ir.Constant(ity, 1)))
        return r if ity == ret else b.trunc(r, ret)
    if symbol in ("__nv_brev", "__nv_brevll"):
        return intrinsic(b, f"llvm.bitreverse.i{ity.width}", ity, [x])
    if symbol in ("__nv_abs", "__nv_llabs"):
        return intrinsic(b, f"llvm.abs.i{ity.width}", ity, [x, ir.Constant(ir.IntType(1), 0)])
    # mulhi family: the high half of the double-width product
    wide = ir.IntType(2 * ity.width)
    ext = b.zext if symbol.startswith("__nv_u") else b.sext
    p = b.mul(ext(args[0], wide), ext(args[1], wide))
    return b.trunc(b.lshr(p, ir.Constant(wide, ity.width)), ity)


def define(module: ir.Module, symbol: str, ftype: ir.FunctionType) -> bool:
    """Add ``symbol`` with type ``ftype`` to ``module``; False when this library has no such function."""
    if not provides(symbol):
        return False
    fn = ir.Function(module, ftype, symbol)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    base, _ = _ocml_parts(symbol)
    b.ret(_ocml_body(b, base, ftype.return_type, list(fn.args)) if base is not None
          else _nv_body(b, symbol, ftype.return_type, list(fn.args)))
    return True
