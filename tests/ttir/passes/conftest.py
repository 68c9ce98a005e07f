import textwrap

import pytest

from tritium.passes import PassManager
from tritium.ttir.ir import parse_module, print_module


def _wrap(src: str) -> str:
    src = textwrap.dedent(src)
    return src if src.lstrip().startswith(("module", "builtin.module")) else "module {\n" + src + "\n}"


@pytest.fixture
def apply():
    """``apply(src, *passes) -> str``: parse a TTIR snippet (a module, or functions to wrap in one),
    run the passes with verification after each, return the printed IR without locations."""

    def run(src: str, *passes) -> str:
        module = parse_module(_wrap(src))
        PassManager("test", passes, verify_each=True).run(module)
        return print_module(module, locations=False)

    return run


@pytest.fixture
def parse():
    return lambda src: parse_module(_wrap(src))
