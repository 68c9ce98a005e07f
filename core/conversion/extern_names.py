"""Device-library names across vendors, for :meth:`TargetInfo.map_extern`.

Kernels spell device-library calls with libdevice's ``__nv_*`` symbols (what
``tritium.language.extra.libdevice`` emits, and what Triton's CUDA kernels write).  A backend
whose math library is AMD's ocml maps them with :func:`ocml_name`: ``__nv_tanhf`` becomes
``__ocml_tanh_f32``, ``__nv_tanh`` ``__ocml_tanh_f64``.  Functions ocml lacks (directed-rounding
arithmetic, libdevice's conversions and bit tricks) map to None, which the lowering reports as
"the <backend> backend has no implementation of the extern function ..." at the kernel's line;
such a backend may instead lower them itself (``TargetInfo.op_lowering``)."""
from __future__ import annotations

import re

# libdevice name (without __nv_ and the f/d suffix) -> ocml name, where they differ
_RENAMED = {"cyl_bessel_i0": "i0", "cyl_bessel_i1": "i1", "powi": "pown", "fabs": "fabs", "saturate": None}
# the functions ocml provides under the libdevice name (f32 and f64)
_OCML = set(("acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh cospi erf erfc erfcinv erfcx "
             "erfinv exp exp10 exp2 expm1 fabs fdim floor fma fmax fmin fmod hypot i0 i1 ilogb isinf isnan "
             "j0 j1 ldexp lgamma log log10 log1p log2 logb nearbyint nextafter pow pown rcbrt remainder rhypot "
             "rint round rsqrt scalbn signbit sin sinh sinpi sqrt tan tanh tgamma trunc y0 y1 isfinite "
             "normcdf normcdfinv").split())
# symbols whose f32 form does not end in "f" (or whose f64 form ends in "d")
_EXPLICIT = {"__nv_isnand": ("isnan", 64), "__nv_isinfd": ("isinf", 64), "__nv_signbitd": ("signbit", 64),
             "__nv_isfinited": ("isfinite", 64), "__nv_finitef": ("isfinite", 32),
             "__nv_fabsf": ("fabs", 32), "__nv_fabs": ("fabs", 64), "__nv_powif": ("pown", 32),
             "__nv_powi": ("pown", 64)}


def ocml_name(symbol: str) -> str | None:
    """ocml's symbol for libdevice ``symbol`` (``__nv_expf`` -> ``__ocml_exp_f32``), the symbol
    itself when it is not a libdevice name, or None when ocml has no such function."""
    if not symbol.startswith("__nv_"):
        return symbol
    if symbol in _EXPLICIT:
        base, bits = _EXPLICIT[symbol]
    else:
        name = symbol[len("__nv_"):]
        # conversions (float2int_rn, ...; not exp2/log2/atan2), bit reinterpretation, directed
        # rounding, the fast_* approximations and integer tricks: no ocml function
        if re.search(r"_r[nzdu]$|2(u?int|u?ll|float|double|loint|hiint)|_as_|^fast_|^[u]?(mul|hadd|rhadd|sad|byte_perm|clz|popc|ffs|brev)", name):
            return None
        if name.endswith("f") and name[:-1] in _OCML | set(_RENAMED):
            base, bits = name[:-1], 32
        else:
            base, bits = name, 64
        base = _RENAMED.get(base, base)
    if base is None or base not in _OCML:
        return None
    return f"__ocml_{base}_f{bits}"
