"""Printing and parsing TTGIR text (TTIR's functions, with every plugin's encodings registered)."""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from ..ttir import ir as _ttir_ir
from .dialect import ensure_plugin_encodings
from .triton_syntax import upgrade_triton_text


def parse_module(text: str, *, verify: bool = True) -> ModuleOp:
    """Parse TTIR/TTGIR text in Tritium's or Triton's spelling (old and new: see
    :mod:`tritium.ttgir.triton_syntax`), with every installed plugin's encodings."""
    ensure_plugin_encodings()
    return _ttir_ir.parse_module(upgrade_triton_text(text), verify=verify)


def print_module(module: ModuleOp, *, locations: bool = True, generic: bool = False) -> str:
    return _ttir_ir.print_module(module, locations=locations, generic=generic)
