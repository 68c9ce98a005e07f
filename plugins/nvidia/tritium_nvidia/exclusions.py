"""Conformance cases the NVIDIA backend knows it cannot pass yet, each with its reason."""
from __future__ import annotations

from tritium.hooks.types import ConformanceExclusion

_EXCLUDED: list[tuple[str, str]] = []


def exclusions(target) -> list[ConformanceExclusion]:
    return [ConformanceExclusion(pattern, reason) for pattern, reason in _EXCLUDED]
