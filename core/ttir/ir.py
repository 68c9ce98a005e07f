"""Printing and parsing TTIR/TTGIR modules as text."""
from __future__ import annotations

import io

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer

from .dialect import inline_location_aliases, make_context


def print_module(module: ModuleOp, *, locations: bool = True, generic: bool = False) -> str:
    out = io.StringIO()
    Printer(stream=out, print_debuginfo=locations, print_generic_format=generic).print_op(module)
    out.write("\n")
    return out.getvalue()


def parse_module(text: str, *, verify: bool = True) -> ModuleOp:
    module = Parser(make_context(), inline_location_aliases(text)).parse_module()
    if verify:
        module.verify()
    return module
