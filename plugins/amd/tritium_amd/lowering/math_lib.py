"""fp32 math that LLVM's AMDGPU backend has no lowering for (it would call a library function
that does not exist without ROCm's device libraries), written in plain LLVM IR from the
operations it does select (``v_exp_f32``, ``v_log_f32``, ``v_sin/cos_f32``, ``v_rcp_f32``...).

Accuracy targets fp32 use, not correct rounding: ``erf`` uses its Taylor series below 0.5 and
Abramowitz & Stegun 7.1.26 above (absolute error < 2e-7); ``atan`` Cephes' range reduction to
``|x| <= tan(pi/8)`` and its degree-9 odd polynomial; ``log1p``/``expm1`` Kahan's corrections of
``log(1+x)``/``exp(x)-1``; ``pow`` ``exp2(y*log2|x|)`` with the sign rules of C's ``powf``.

fp64 transcendental functions are calls of ocml's (``FP64_OCML``): ROCm's bitcode where it is
installed, else the plain-IR functions of ``math_f64`` (see ``device_libs``)."""
from __future__ import annotations

import math

import llvmlite.ir as ir

from tritium.conversion.target_info import intrinsic

F32 = ir.FloatType()
#: tl.math op -> ocml function, for fp64
FP64_OCML = {"math.exp": "exp", "math.exp2": "exp2", "math.log": "log", "math.log2": "log2", "math.log10": "log10",
             "math.sin": "sin", "math.cos": "cos", "math.tan": "tan", "math.erf": "erf", "math.tanh": "tanh",
             "math.log1p": "log1p", "math.expm1": "expm1", "math.powf": "pow", "math.atan": "atan",
             "math.atan2": "atan2"}


def _c(v: float) -> ir.Constant:
    return ir.Constant(F32, v)


def _call(b, name, *args):
    return intrinsic(b, f"llvm.{name}.f32", F32, list(args))


def _poly(b, x, coeffs):
    """Horner: ``coeffs[0] * x^(n-1) + ... + coeffs[-1]``."""
    acc = _c(coeffs[0])
    for c in coeffs[1:]:
        acc = _call(b, "fma", acc, x, _c(c))
    return acc


def _select(b, cond, a, c):
    return b.select(cond, a, c)


def tan(b, x):
    return b.fdiv(_call(b, "sin", x), _call(b, "cos", x))


def tanh(b, x):
    ax = _call(b, "fabs", x)
    e = _call(b, "exp", b.fmul(ax, _c(2.0)))                   # exp(2|x|), inf for large |x|
    big = b.fsub(_c(1.0), b.fdiv(_c(2.0), b.fadd(e, _c(1.0))))
    x2 = b.fmul(x, x)
    # near 0: x - x^3/3 + 2x^5/15 - 17x^7/315 (the closed form cancels there)
    small = b.fmul(x, _poly(b, x2, [-17 / 315, 2 / 15, -1 / 3, 1.0]))
    return _select(b, b.fcmp_ordered("<", ax, _c(0.125)), small, _call(b, "copysign", big, x))


def log1p(b, x):
    u = b.fadd(x, _c(1.0))
    d = b.fsub(u, _c(1.0))
    corrected = b.fdiv(b.fmul(_call(b, "log", u), x), d)
    return _select(b, b.fcmp_ordered("==", d, _c(0.0)), x, _select(
        b, b.fcmp_ordered("==", u, _c(math.inf)), u, corrected))


def expm1(b, x):
    u = _call(b, "exp", x)
    um1 = b.fsub(u, _c(1.0))
    corrected = b.fdiv(b.fmul(um1, x), _call(b, "log", u))
    out = _select(b, b.fcmp_ordered("==", um1, _c(-1.0)), _c(-1.0), corrected)
    out = _select(b, b.fcmp_ordered("==", u, _c(math.inf)), u, out)
    return _select(b, b.fcmp_ordered("==", u, _c(1.0)), x, out)


def powf(b, x, y):
    ax = _call(b, "fabs", x)
    r = _call(b, "exp2", b.fmul(y, _call(b, "log2", ax)))
    is_int = b.fcmp_ordered("==", _call(b, "trunc", y), y)
    half = b.fmul(y, _c(0.5))
    odd = b.and_(is_int, b.fcmp_ordered("!=", _call(b, "trunc", half), half))
    neg = b.fcmp_ordered("<", x, _c(0.0))
    signed = _select(b, odd, b.fneg(r), r)
    r = _select(b, neg, _select(b, is_int, signed, _c(math.nan)), r)
    return _select(b, b.fcmp_ordered("==", y, _c(0.0)), _c(1.0), r)   # pow(x, 0) = 1, even NaN


def atan(b, x):
    ax = _call(b, "fabs", x)
    hi = b.fcmp_ordered(">", ax, _c(2.414213562373095))        # tan(3pi/8)
    mid = b.fcmp_ordered(">", ax, _c(0.4142135623730950))      # tan(pi/8)
    t = _select(b, hi, b.fdiv(_c(-1.0), ax), _select(b, mid, b.fdiv(b.fsub(ax, _c(1.0)), b.fadd(ax, _c(1.0))), ax))
    base = _select(b, hi, _c(math.pi / 2), _select(b, mid, _c(math.pi / 4), _c(0.0)))
    z = b.fmul(t, t)
    p = _poly(b, z, [8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1])
    r = b.fadd(base, _call(b, "fma", b.fmul(p, z), t, t))
    return _call(b, "copysign", r, x)


def atan2(b, y, x):
    r = atan(b, b.fdiv(y, x))
    pi = _call(b, "copysign", _c(math.pi), y)
    r = _select(b, b.fcmp_ordered("<", x, _c(0.0)), b.fadd(r, pi), r)
    at_zero = _select(b, b.fcmp_ordered("==", y, _c(0.0)), _select(
        b, b.fcmp_ordered("<", _call(b, "copysign", _c(1.0), x), _c(0.0)), pi, _call(b, "copysign", _c(0.0), y)),
        _call(b, "copysign", _c(math.pi / 2), y))
    return _select(b, b.fcmp_ordered("==", x, _c(0.0)), at_zero, r)


def erf(b, x):
    ax = _call(b, "fabs", x)
    z = b.fmul(x, x)
    k = 2 / math.sqrt(math.pi)
    # Taylor: 2/sqrt(pi) * (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320)
    small = b.fmul(x, _poly(b, z, [-k / 1320, k / 216, -k / 42, k / 10, -k / 3, k]))
    t = b.fdiv(_c(1.0), _call(b, "fma", _c(0.3275911), ax, _c(1.0)))
    p = b.fmul(t, _poly(b, t, [1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592]))
    large = b.fsub(_c(1.0), b.fmul(p, _call(b, "exp", b.fneg(z))))
    return _select(b, b.fcmp_ordered("<", ax, _c(0.5)), small, _call(b, "copysign", large, x))


def exp(b, x):
    """``exp2(x * log2(e))``: ``v_exp_f32`` and its denormal scaling, as Triton lowers ``tl.exp`` on
    AMD (LLVM's ``llvm.exp.f32`` adds a two-part range reduction for the last ulp: 8 instructions
    more an element)."""
    return _call(b, "exp2", b.fmul(x, _c(math.log2(math.e))))


def exp2(b, x):
    """``v_exp_f32`` alone (``llvm.amdgcn.exp2.f32``): the instruction flushes denormal inputs and
    results, which Triton 3.6 accepts for ``tl.exp2`` on AMD whatever ``allow_flush_denorm`` says.
    ``llvm.exp2.f32`` would add a range check and two scalings around it (6 instructions an element)
    unless the kernel flushes fp32 denormals."""
    return intrinsic(b, "llvm.amdgcn.exp2.f32", F32, [x])


FP32 = {"math.exp": exp, "math.exp2": exp2, "math.tan": tan, "math.tanh": tanh, "math.log1p": log1p, "math.expm1": expm1, "math.powf": powf,
        "math.atan": atan, "math.atan2": atan2, "math.erf": erf,
        "math.log10": lambda b, x: _call(b, "log10", x)}
