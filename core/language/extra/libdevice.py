"""``triton.language.extra.libdevice``: the device math library, under libdevice's names.

Each function dispatches on its arguments' dtypes to a libdevice symbol (``tanh`` on fp32 calls
``__nv_tanhf``, on fp64 ``__nv_tanh``), emitted as ``tt.extern_elementwise``.  The symbols are
the portable spelling: every backend maps them to its own library when it lowers the call
(NVIDIA links libdevice itself, the interpreter computes with numpy, AMD maps to ocml, see
``tritium.conversion.extern_names``), and a symbol a backend cannot map is an error at the
kernel's line naming the function and the backend.

As in Triton, arguments must be fp32 or fp64 (integers for the integer functions): cast fp16 and
bf16 with ``.to(tl.float32)``.  ``isnan``/``isinf``/``signbit``/``finitef``/``isfinited`` return
int32 (nonzero for true), as libdevice does.
"""
from __future__ import annotations

from ..core import TRITON_BUILTIN, extern_elementwise, semantics as _semantics

F32, F64, I32, I64, U32, U64 = "fp32", "fp64", "int32", "int64", "uint32", "uint64"


def _make(name: str, table: dict):
    """A builtin ``name(arg0, ...)`` calling the symbol its arguments' dtypes select."""
    arity = len(next(iter(table)))

    def fn(*args, _builder=None, _semantic=None):
        builder = _builder if _builder is not None else _semantic
        if builder is None:
            raise ValueError(f"libdevice.{name}() can only be called inside a @jit function")
        impl = _semantics.semantic_extern.extern_elementwise
        return impl("libdevice", "", list(args), table, True, builder, fn_name=f"libdevice.{name}")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"libdevice ``{name}``: " + ", ".join(f"({', '.join(k)}) -> {v[1]} ``{v[0]}``"
                                                       for k, v in table.items())
    fn.arity = arity
    setattr(fn, TRITON_BUILTIN, True)
    return fn


TABLES: dict[str, dict] = {}


def _f_d(name: str, arity: int = 1, f_sym: str | None = None, d_sym: str | None = None):
    """fp32 -> ``__nv_<name>f``, fp64 -> ``__nv_<name>`` (libdevice's usual naming)."""
    TABLES[name] = {(F32,) * arity: (f_sym or f"__nv_{name}f", F32), (F64,) * arity: (d_sym or f"__nv_{name}", F64)}


for _n in ("floor ceil trunc rint nearbyint round sqrt rsqrt cbrt rcbrt exp exp2 exp10 expm1 log log2 log10 "
           "log1p logb sin cos tan sinpi cospi asin acos atan sinh cosh tanh asinh acosh atanh erf erfc erfinv "
           "erfcinv erfcx normcdf normcdfinv lgamma tgamma j0 j1 y0 y1 cyl_bessel_i0 cyl_bessel_i1").split():
    _f_d(_n)
for _n in "atan2 copysign fmod remainder hypot rhypot fdim nextafter fmax fmin".split():
    _f_d(_n, 2)
for _n in ("fma", "norm3d", "rnorm3d"):
    _f_d(_n, 3)
for _n in ("norm4d", "rnorm4d"):
    _f_d(_n, 4)
# correctly rounded arithmetic in a chosen rounding mode: fp32 __nv_f<op>_<rm>, fp64 __nv_d<op>_<rm>
for _rm in ("rn", "rz", "rd", "ru"):
    for _op in ("add", "sub", "mul", "div"):
        TABLES[f"{_op}_{_rm}"] = {(F32, F32): (f"__nv_f{_op}_{_rm}", F32), (F64, F64): (f"__nv_d{_op}_{_rm}", F64)}
    for _op in ("rcp", "sqrt"):
        TABLES[f"{_op}_{_rm}"] = {(F32,): (f"__nv_f{_op}_{_rm}", F32), (F64,): (f"__nv_d{_op}_{_rm}", F64)}
    TABLES[f"fma_{_rm}"] = {(F32,) * 3: (f"__nv_fmaf_{_rm}", F32), (F64,) * 3: (f"__nv_fma_{_rm}", F64)}
    # conversions
    for _src, _st in (("float", F32), ("double", F64)):
        TABLES[f"{_src}2int_{_rm}"] = {(_st,): (f"__nv_{_src}2int_{_rm}", I32)}
        TABLES[f"{_src}2uint_{_rm}"] = {(_st,): (f"__nv_{_src}2uint_{_rm}", U32)}
        TABLES[f"{_src}2ll_{_rm}"] = {(_st,): (f"__nv_{_src}2ll_{_rm}", I64)}
        TABLES[f"{_src}2ull_{_rm}"] = {(_st,): (f"__nv_{_src}2ull_{_rm}", U64)}
    TABLES[f"double2float_{_rm}"] = {(F64,): (f"__nv_double2float_{_rm}", F32)}
    for _src, _st in (("int", I32), ("uint", U32), ("ll", I64), ("ull", U64)):
        TABLES[f"{_src}2float_{_rm}"] = {(_st,): (f"__nv_{_src}2float_{_rm}", F32)}
    for _src, _st in (("ll", I64), ("ull", U64)):
        TABLES[f"{_src}2double_{_rm}"] = {(_st,): (f"__nv_{_src}2double_{_rm}", F64)}
TABLES["int2double_rn"] = {(I32,): ("__nv_int2double_rn", F64)}
TABLES["uint2double_rn"] = {(U32,): ("__nv_uint2double_rn", F64)}
TABLES["rsqrt_rn"] = {(F32,): ("__nv_frsqrt_rn", F32)}
TABLES["pow"] = {(F32, I32): ("__nv_powif", F32), (F64, I32): ("__nv_powi", F64),
                 (F32, F32): ("__nv_powf", F32), (F64, F64): ("__nv_pow", F64)}
TABLES["ldexp"] = {(F32, I32): ("__nv_ldexpf", F32), (F64, I32): ("__nv_ldexp", F64)}
TABLES["scalbn"] = {(F32, I32): ("__nv_scalbnf", F32), (F64, I32): ("__nv_scalbn", F64)}
TABLES["jn"] = {(I32, F32): ("__nv_jnf", F32), (I32, F64): ("__nv_jn", F64)}
TABLES["yn"] = {(I32, F32): ("__nv_ynf", F32), (I32, F64): ("__nv_yn", F64)}
TABLES["ilogb"] = {(F32,): ("__nv_ilogbf", I32), (F64,): ("__nv_ilogb", I32)}
TABLES["llrint"] = {(F32,): ("__nv_llrintf", I64), (F64,): ("__nv_llrint", I64)}
TABLES["llround"] = {(F32,): ("__nv_llroundf", I64), (F64,): ("__nv_llround", I64)}
for _n in ("isnan", "isinf", "signbit"):
    TABLES[_n] = {(F32,): (f"__nv_{_n}f", I32), (F64,): (f"__nv_{_n}d", I32)}
TABLES["finitef"] = {(F32,): ("__nv_finitef", I32)}
TABLES["isfinited"] = {(F64,): ("__nv_isfinited", I32)}
TABLES["abs"] = {(I32,): ("__nv_abs", I32), (I64,): ("__nv_llabs", I64), (F32,): ("__nv_fabsf", F32),
                 (F64,): ("__nv_fabs", F64)}
TABLES["saturatef"] = {(F32,): ("__nv_saturatef", F32)}
for _n in ("sin", "cos", "tan", "exp", "exp10", "log", "log2", "log10"):
    TABLES[f"fast_{_n}f"] = {(F32,): (f"__nv_fast_{_n}f", F32)}
TABLES["fast_powf"] = {(F32, F32): ("__nv_fast_powf", F32)}
TABLES["fast_dividef"] = {(F32, F32): ("__nv_fast_fdividef", F32)}
# bit manipulation and integer arithmetic
for _n in ("clz", "popc", "ffs"):
    TABLES[_n] = {(I32,): (f"__nv_{_n}", I32), (I64,): (f"__nv_{_n}ll", I32)}
TABLES["brev"] = {(I32,): ("__nv_brev", I32), (I64,): ("__nv_brevll", I64)}
TABLES["mulhi"] = {(I32, I32): ("__nv_mulhi", I32), (U32, U32): ("__nv_umulhi", U32),
                   (I64, I64): ("__nv_mul64hi", I64), (U64, U64): ("__nv_umul64hi", U64)}
for _n in ("mul24", "hadd", "rhadd"):
    TABLES[_n] = {(I32, I32): (f"__nv_{_n}", I32), (U32, U32): (f"__nv_u{_n}", U32)}
TABLES["sad"] = {(I32, I32, U32): ("__nv_sad", I32), (U32, U32, U32): ("__nv_usad", U32)}
TABLES["byte_perm"] = {(I32, I32, I32): ("__nv_byte_perm", I32)}
# bit reinterpretation
TABLES["float_as_int"] = {(F32,): ("__nv_float_as_int", I32)}
TABLES["float_as_uint"] = {(F32,): ("__nv_float_as_uint", U32)}
TABLES["int_as_float"] = {(I32,): ("__nv_int_as_float", F32)}
TABLES["uint_as_float"] = {(U32,): ("__nv_uint_as_float", F32)}
TABLES["double_as_longlong"] = {(F64,): ("__nv_double_as_longlong", I64)}
TABLES["longlong_as_double"] = {(I64,): ("__nv_longlong_as_double", F64)}
TABLES["double2loint"] = {(F64,): ("__nv_double2loint", I32)}
TABLES["double2hiint"] = {(F64,): ("__nv_double2hiint", I32)}
TABLES["hiloint2double"] = {(I32, I32): ("__nv_hiloint2double", F64)}

for _name, _table in TABLES.items():
    globals()[_name] = _make(_name, _table)

__all__ = sorted(TABLES) + ["extern_elementwise"]
del _n, _rm, _op, _src, _st, _name, _table
