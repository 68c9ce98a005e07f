"""Conformance cases the AMD backend knows it cannot pass, each with its reason.

Both kinds are rejected at compile time, so they are excluded in compile-only runs too."""
from __future__ import annotations

from tritium.hooks.types import ConformanceExclusion

_OCML = ("fp64 {fn} needs ROCm's device math library (ocml), which the AMD backend does not link "
         "yet; LLVM's AMDGPU target has no fp64 {fn} of its own, so the kernel is rejected at compile time")

_CASES: list[tuple[str, str]] = [
    *((f"math/{fn}-fp64", _OCML.format(fn=fn)) for fn in ("exp", "exp2", "log", "log2", "sin", "cos", "erf")),
    ("math/sigmoid-fp64", _OCML.format(fn="exp")),
    ("compat/math-exp-fp64", _OCML.format(fn="exp")),
]


def exclusions(target) -> list[ConformanceExclusion]:
    return [ConformanceExclusion(case, reason) for case, reason in _CASES]
