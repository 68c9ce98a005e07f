"""The interpreter's libdevice functions: directed rounding is exact (checked against
``fractions.Fraction``), conversions round and saturate as libdevice does, and every symbol
``tritium.language.extra.libdevice`` emits has a numpy version or a clear refusal."""
from fractions import Fraction

import numpy as np
import pytest

from tritium.backends.interpreter.libdevice import _UNSUPPORTED, libdevice_function
from tritium.backends.interpreter.ops_math import _generic
from tritium.language.extra import libdevice

OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b}


def _neighbours_ok(r, exact, mode, dtype):
    r = dtype(r)
    below, above = np.nextafter(r, dtype(-np.inf)), np.nextafter(r, dtype(np.inf))
    fr = Fraction(float(r))
    if mode == "rd":
        return fr <= exact < Fraction(float(above))
    if mode == "ru":
        return Fraction(float(below)) < exact <= fr
    if mode == "rz":
        return abs(fr) <= abs(exact) and (fr == exact or abs(Fraction(float(above if r >= 0 else below))) > abs(exact))
    return abs(fr - exact) <= abs(Fraction(float(above)) - fr) / 2


@pytest.mark.parametrize("prefix,dtype", [("f", np.float32), ("d", np.float64)])
@pytest.mark.parametrize("mode", ["rn", "rz", "rd", "ru"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_directed_rounding_is_exact(op, mode, prefix, dtype):
    rng = np.random.default_rng(7)
    a = rng.uniform(-10, 10, 200).astype(dtype)
    b = rng.uniform(0.5, 10, 200).astype(dtype) * rng.choice([-1, 1], 200).astype(dtype)
    r = libdevice_function(f"__nv_{prefix}{op}_{mode}", _generic)(a, b)
    assert r.dtype == dtype
    for x, y, z in zip(a, b, r):
        exact = OPS[op](Fraction(float(x)), Fraction(float(y)))
        assert _neighbours_ok(z, exact, mode, dtype), (op, mode, x, y, z)


def test_sqrt_rounding_directions():
    x = np.random.default_rng(1).uniform(0.1, 100, 200).astype(np.float32)
    lo = libdevice_function("__nv_fsqrt_rd", _generic)(x).astype(np.float64)
    hi = libdevice_function("__nv_fsqrt_ru", _generic)(x).astype(np.float64)
    assert (lo * lo <= x.astype(np.float64)).all() and (hi * hi >= x.astype(np.float64)).all()
    assert (hi >= lo).all() and ((hi == lo) | (np.nextafter(lo.astype(np.float32), np.float32(np.inf)) == hi)).all()


def test_conversions_round_and_saturate():
    f = libdevice_function("__nv_float2int_rd", _generic)
    x = np.array([1.5, -1.5, 3e10, -3e10, np.nan], np.float32)
    assert f(x).tolist() == [1, -2, 2**31 - 1, -2**31, 0]
    g = libdevice_function("__nv_int2float_rz", _generic)
    v = np.array([2**24 + 1, -(2**24 + 1), 16777219], np.int32)
    assert g(v).tolist() == [16777216.0, -16777216.0, 16777218.0]


def test_every_emitted_symbol_has_an_implementation_or_is_refused():
    missing = []
    for name, table in libdevice.TABLES.items():
        for symbol, _ in table.values():
            base = symbol[len("__nv_"):].rstrip("f")
            if libdevice_function(symbol, _generic) is None and base not in _UNSUPPORTED:
                missing.append(symbol)
    assert not missing, missing
