"""Helpers shared by the case modules: sizes, and numpy models of device integer semantics."""
from __future__ import annotations

import numpy as np

from .. import dtypes

#: elements per case for 1-D elementwise cases: two programs of BLOCK elements
BLOCK = 256
N = 2 * BLOCK
GRID = (2,)


def trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's integer division (rounds toward zero), in the operands' own fixed-width type."""
    q = a // b
    fix = (a % b != 0) & ((a < 0) != (b < 0))
    return np.where(fix, q + 1, q).astype(a.dtype)


def trunc_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's remainder: the sign of the dividend."""
    return (a - trunc_div(a, b) * b).astype(a.dtype)


def np_type(tag: str):
    return dtypes.STORAGE[tag]


def nonzero_small(tag: str, shape=(N,), limit: int = 100):
    """Divisors: small magnitudes (so quotients are interesting), both signs for signed types."""
    from ..case import Rand
    return Rand(tag, shape, -limit if dtypes.is_signed(tag) else 1, limit)


def no_min(tag: str, shape=(N,)):
    """Full-range signed values except the minimum (whose negation or division by -1 overflows)."""
    from ..case import Rand
    lo, hi = dtypes.int_range(tag)
    return Rand(tag, shape, lo + 1 if dtypes.is_signed(tag) else lo, hi)
