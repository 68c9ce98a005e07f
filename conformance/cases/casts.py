"""``.to()`` between every pair of dtypes, fp8 conversions, and ``bitcast=True``.

Conversions are checked exactly: integer narrowing keeps the low bits, float to integer truncates
toward zero (sources stay within the destination's range, where the result is defined), and
every rounding conversion rounds to nearest-even."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Gen, Out, Rand
from ._common import BLOCK, GRID, N


@triton.jit
def cast_kernel(x_ptr, z_ptr, DST: tl.constexpr, BITCAST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    z = tl.load(x_ptr + offs).to(DST, bitcast=BITCAST)
    tl.static_assert(z.dtype == DST)
    tl.store(z_ptr + offs, z)


_FLOAT_MAX = {"fp16": 60000.0, "bf16": 1e30, "fp32": 1e30, "fp64": 1e30, "fp8e4nv": 440.0, "fp8e5": 50000.0,
              "fp8e4b15": 1.8, "fp8e4b8": 230.0, "fp8e5b16": 50000.0}


def _source(src: str, dst: str) -> Rand:
    """Source values for which the conversion is defined (and, to half precision, finite)."""
    if dtypes.is_float(dst):
        hi = min(_FLOAT_MAX[src], _FLOAT_MAX[dst]) if dtypes.is_float(src) else _FLOAT_MAX[dst]
        if dtypes.is_float(src):
            small = 2.0 ** -10 if dst in dtypes.FP8_DTYPES or src in dtypes.FP8_DTYPES else 1.0 / 64
            if src == "fp64" and dst == "bf16":
                # fp32-representable sources: rounding once or through fp32 then agree
                return Gen(src, (N,), lambda rng, shape: Rand("fp32", shape, -400, 400).values(rng))
            return Rand(src, (N,), -min(hi, 400.0), min(hi, 400.0), min_abs=small)
        lo_i, hi_i = dtypes.int_range(src)
        return Rand(src, (N,), max(lo_i, -hi), min(hi_i, hi))
    if dtypes.is_float(src):  # float -> int: within the destination's range
        lo_i, hi_i = dtypes.int_range(dst)
        hi = min(float(hi_i) * 0.99, _FLOAT_MAX[src], 1e6)
        lo = 1.0 if not dtypes.is_signed(dst) else -hi
        return Rand(src, (N,), lo, hi, min_abs=0.5)
    return Rand(src, (N,))  # int -> int: everything, wrapping


def _convert(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    if dtypes.is_int(dst):
        if dtypes.is_float(src):
            return np.trunc(x).astype(np.int64).astype(dtypes.STORAGE[dst])
        return x.astype(dtypes.STORAGE[dst])
    if dtypes.is_int(src) and dst in ("fp32", "fp64"):
        return x.astype(dtypes.STORAGE[dst]).astype(np.float64)  # one correctly rounded conversion
    return dtypes.round_to(x.astype(np.float64), dst)


def _cast_case(src, dst, prefix="cast"):
    return Case(
        id=f"casts/{prefix}-{src}-to-{dst}", kernel=cast_kernel, grid=GRID,
        constexprs={"DST": getattr(tl, dtypes.LANG_NAME[dst]), "BITCAST": False, "BLOCK": BLOCK},
        inputs={"x_ptr": _source(src, dst)}, outputs={"z_ptr": Out(dst, (N,))},
        reference=lambda x_ptr: _convert(x_ptr, src, dst), rtol=0.0, atol=0.0)


def _bitcast_case(src, dst):
    def ref(x_ptr):
        return dtypes.decode(dtypes.encode(x_ptr, src).view(dtypes.STORAGE[dst]), dst)
    return Case(
        id=f"casts/bitcast-{src}-to-{dst}", kernel=cast_kernel, grid=GRID,
        constexprs={"DST": getattr(tl, dtypes.LANG_NAME[dst]), "BITCAST": True, "BLOCK": BLOCK},
        inputs={"x_ptr": Rand(src, (N,), -1000, 1000) if dtypes.is_float(src) else Rand(src, (N,))},
        outputs={"z_ptr": Out(dst, (N,), poison="sentinel")}, reference=ref, rtol=0.0, atol=0.0)


CASES = [_cast_case(s, d) for s in dtypes.ALL_DTYPES for d in dtypes.ALL_DTYPES if s != d]
for _f8 in dtypes.FP8_DTYPES:
    for _wide in ("fp16", "bf16", "fp32"):
        CASES.append(_cast_case(_wide, _f8, "fp8"))
        CASES.append(_cast_case(_f8, _wide, "fp8"))
BITCASTS = [
    ("fp32", "int32"), ("int32", "fp32"), ("fp32", "uint32"), ("uint32", "fp32"), ("fp16", "int16"),
    ("int16", "fp16"), ("bf16", "uint16"), ("uint16", "bf16"), ("bf16", "fp16"), ("fp64", "int64"),
    ("int64", "fp64"), ("uint64", "fp64"), ("int8", "uint8"), ("uint32", "int32"),
    ("fp8e4nv", "uint8"), ("int8", "fp8e5"),
]
CASES += [_bitcast_case(s, d) for s, d in BITCASTS]
