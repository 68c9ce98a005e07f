"""Triton's textual TTIR/TTGIR, old and new, read into Tritium's dialects.

Triton renamed its GPU dialect in late 2024 (``triton_gpu`` became ``ttg``, ``triton_nvidia_gpu``
became ``ttng``, ``!tt.memdesc`` became ``!ttg.memdesc``, ``#triton_gpu.shared`` became
``#ttg.swizzled_shared``); files written before and after the rename (Triton's own layout tests,
``TRITON_KERNEL_DUMP`` output, hand-written kernels) are read here by rewriting the old spellings
to the new ones before xDSL parses the text.  Also accepted: comparison predicates written as
strings (``arith.cmpi "sgt", ...``, MLIR's older syntax).  String literals are left alone, except
module attribute keys (``"triton_gpu.num-warps" = 4 : i32``), which are renamed like the rest.
"""
from __future__ import annotations

import re

#: old dialect namespace -> new, applied to op names, attributes, types and attribute keys
_NAMESPACES = (("triton_gpu.", "ttg."), ("triton_nvidia_gpu.", "ttng."), ("triton_amdgpu.", "amdg."))
#: whole-token renames done after the namespaces (old spelling -> new)
_RENAMES = ((re.compile(r"!tt\.memdesc<"), "!ttg.memdesc<"),
            (re.compile(r"#ttg\.shared<"), "#ttg.swizzled_shared<"),
            (re.compile(r"(arith\.cmp[if])\s+\"(\w+)\""), r"\1 \2"))

_STRING_OR_CODE = re.compile(r'("(?:[^"\\]|\\.)*")|([^"]+)', re.S)
_OLD_NAME = re.compile("(?:" + "|".join(re.escape(old) for old, _ in _NAMESPACES) + r")[\w.\-]+")


def _rename_namespaces(code: str) -> str:
    for old, new in _NAMESPACES:
        code = re.sub(r"(?<![\w.])" + re.escape(old), new, code)
    return code


def upgrade_triton_text(text: str) -> str:
    """``text`` with Triton's pre-rename spellings replaced by the current ones (see the module
    docstring); text already in the current spelling comes back unchanged."""
    out = []
    for m in _STRING_OR_CODE.finditer(text):
        literal, code = m.groups()
        if code is not None:
            out.append(_rename_namespaces(code))
        elif _OLD_NAME.fullmatch(literal[1:-1]):  # an attribute key or a generic op name
            out.append('"' + _rename_namespaces(literal[1:-1]) + '"')
        else:
            out.append(literal)
    text = "".join(out)
    for pattern, repl in _RENAMES:
        text = pattern.sub(repl, text)
    return text
