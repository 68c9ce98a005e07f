"""The ``ttg`` dialect object, vendor-encoding registration and TTGIR module attributes.

Importing :mod:`tritium.ttgir` registers ``ttg`` with :func:`tritium.ttir.dialect.register_dialect`,
so every context from ``tritium.ttir.dialect.make_context`` parses TTGIR.  Plugins' encodings (the
``tritium_layout_encodings`` hook) are fetched lazily, on the first :func:`ensure_plugin_encodings`
call (done by :func:`tritium.ttgir.ir.parse_module` and the pipeline), because a plugin module
imports ``tritium.ttgir.encodings`` to subclass it and must not be loaded while that import runs.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterable

from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i32
from xdsl.ir import Dialect

from ..ttir.dialect import register_dialect
from .encodings import GENERIC_ENCODINGS
from .linear_encoding import LinearEncodingAttr
from .mx_ops import MX_OPS
from .ops import TTG_OPS
from .types import AsyncTokenType, MemDescType

TritonGPU = Dialect("ttg", [*TTG_OPS, *MX_OPS], [*GENERIC_ENCODINGS, LinearEncodingAttr, MemDescType,
                                                 AsyncTokenType])

_plugins_loaded = False


def register_encodings(attr_classes: Iterable[type]) -> None:
    """Add attribute classes (``ttg.nvidia_mma``, ...) to the ``ttg`` dialect; contexts made from
    now on parse them.  Registering the same class twice is a no-op."""
    known = TritonGPU._attributes
    names = {a.name for a in known}
    for cls in attr_classes:
        if cls in known:
            continue
        if cls.name in names:
            raise ValueError(f"layout encoding {cls.name!r} is already registered by another class")
        known.append(cls)
        names.add(cls.name)


def ensure_plugin_encodings() -> None:
    """Register every installed plugin's encodings once (no-op without the plugin manager)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    try:
        from ..hooks import manager
    except ImportError:  # a stripped-down install without plugins
        return
    try:
        register_encodings(manager.layout_encodings())
    except Exception as exc:  # a broken plugin must not make TTGIR unusable
        warnings.warn(f"layout encodings from plugins not registered: {exc}", stacklevel=2)


register_dialect(TritonGPU)

# --- module attributes (Triton's names) ----------------------------------------------------------
NUM_WARPS = "ttg.num-warps"
THREADS_PER_WARP = "ttg.threads-per-warp"
NUM_CTAS = "ttg.num-ctas"
TARGET = "ttg.target"
SHARED = "ttg.shared"


def set_module_attrs(module: ModuleOp, num_warps: int, threads_per_warp: int, num_ctas: int = 1,
                     target: str | None = None) -> None:
    module.attributes[NUM_WARPS] = IntegerAttr(num_warps, i32)
    module.attributes[THREADS_PER_WARP] = IntegerAttr(threads_per_warp, i32)
    module.attributes[NUM_CTAS] = IntegerAttr(num_ctas, i32)
    if target is not None:
        module.attributes[TARGET] = StringAttr(str(target))


def module_int(module: ModuleOp, key: str, default: int | None = None) -> int:
    attr = module.attributes.get(key)
    if attr is None:
        if default is None:
            raise KeyError(f"module has no {key!r} attribute (run convert_to_ttgir first)")
        return default
    return attr.value.data


def num_warps_of(module: ModuleOp) -> int:
    return module_int(module, NUM_WARPS)


def threads_per_warp_of(module: ModuleOp) -> int:
    return module_int(module, THREADS_PER_WARP)
