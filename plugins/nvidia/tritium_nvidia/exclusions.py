"""Conformance cases the NVIDIA backend knows it cannot pass, each with its reason.

Every entry concerns results computed on the device; compiling these cases works.  A compile-only
run counts a compiled excluded case as an unexpected pass, so the list is only returned when a CUDA
device is present (where the cases run)."""
from __future__ import annotations

from tritium.hooks.types import ConformanceExclusion

_RUNTIME: list[tuple[str, str]] = [
    ("shapes/outer-none-index-fp16",
     "enable_fp_fusion=True (Triton's default) lets the fp16 x*10 + y become one fma (ptxas contracts "
     "mul.f16/add.f16, as Triton's own fma.rn.f16 does); the reference rounds the product to fp16 first"),
]


def exclusions(target) -> list[ConformanceExclusion]:
    from .plugin import _get_driver
    try:
        present = _get_driver().is_active()
    except Exception:  # noqa: BLE001 - no driver means no device
        present = False
    return [ConformanceExclusion(p, r) for p, r in _RUNTIME] if present else []
