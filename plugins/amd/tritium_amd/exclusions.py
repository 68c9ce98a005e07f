"""Conformance cases the AMD backend knows it cannot pass, each with its reason."""
from __future__ import annotations

from tritium.hooks.types import ConformanceExclusion


def exclusions(target) -> list[ConformanceExclusion]:
    return []
