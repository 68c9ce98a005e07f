"""The case registry: every module listed in :data:`MODULES` defines ``CASES``, a list of
:class:`conformance.case.Case`.  Several modules may feed one category (the id's prefix)."""
from __future__ import annotations

import fnmatch
import functools
import importlib

MODULES = (
    "elementwise_int", "elementwise_float", "casts", "math_ops", "compare", "bitwise",
    "shapes", "reductions", "scans", "dot", "dot3d", "dot_tiles", "dot_scaled", "atomics", "control_flow", "functions",
    "atomics_sem", "hints", "fp8_storage", "block_ptr", "masks", "grids", "errors", "tutorials_basic", "tutorials_matmul",
    "tutorials_attention", "libdevice", "inline_asm", "inline_asm_amdgcn", "compat_arith", "compat_random",
    "compat_standard", "compat_control", "compat_reduce", "compat_memory", "compat_methods", "tensor_descriptor",
    "tensor_map", "values", "semantics", "ir_files", "loops_options", "shapes_3d", "reduce_loop", "clusters", "printing",
    "tuples", "triton_api", "lang36", "gather",
)


@functools.lru_cache(maxsize=None)
def all_cases() -> tuple:
    cases, seen = [], set()
    for mod in MODULES:
        for case in importlib.import_module(f"{__name__}.{mod}").CASES:
            if case.id in seen:
                raise ValueError(f"duplicate conformance case id {case.id!r} (in {mod})")
            seen.add(case.id)
            cases.append(case)
    return tuple(cases)


def by_id() -> dict:
    return {c.id: c for c in all_cases()}


def select(patterns=(), categories=()) -> list:
    """Cases whose id matches any ``-k`` pattern (fnmatch, or a plain substring) and whose
    category is among ``categories`` (all when empty)."""
    out = []
    for c in all_cases():
        if categories and c.category not in categories:
            continue
        if patterns and not any(fnmatch.fnmatchcase(c.id, p) or p in c.id for p in patterns):
            continue
        out.append(c)
    return out
