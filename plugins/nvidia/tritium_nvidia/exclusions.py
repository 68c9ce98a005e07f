"""Conformance cases the NVIDIA backend knows it cannot pass yet, each with its reason."""
from __future__ import annotations

from tritium.hooks.types import ConformanceExclusion

_EXCLUDED: list[tuple[str, str]] = [
    ("shapes/outer-none-index-fp16",
     "enable_fp_fusion=True (Triton's default) lets the fp16 x*10 + y become one fma (ptxas contracts "
     "mul.f16/add.f16, as Triton's own fma.rn.f16 does); the reference rounds the product to fp16 first"),
]


def exclusions(target) -> list[ConformanceExclusion]:
    return [ConformanceExclusion(pattern, reason) for pattern, reason in _EXCLUDED]
