"""The ``tt`` dialect object and the xDSL context that knows every dialect TTIR uses."""
from __future__ import annotations

import re

from xdsl.context import Context
from xdsl.dialects import builtin, cf, scf, ub
from xdsl.ir import Dialect

from . import descriptor_ops as desc_ops
from . import memory_ops as mem
from . import xdsl_compat  # noqa: F401  (parser fixes the TTIR text needs)
from . import ops, region_ops as rops
from .mlir_ops import GPU, LLVM
from .arith import Arith, Math
from .dot_scaled import DotScaledOp
from .types import PointerType

TT_OPS = [
    ops.FuncOp, ops.ReturnOp, ops.CallOp, ops.GetProgramIdOp, ops.GetNumProgramsOp, ops.MakeRangeOp,
    ops.SplatOp, ops.BroadcastOp, ops.ExpandDimsOp, ops.ReshapeOp, ops.TransOp, ops.BitcastOp,
    ops.IntToPtrOp, ops.PtrToIntOp, ops.SplitOp, ops.JoinOp, ops.CatOp, ops.GatherOp, ops.AddPtrOp, ops.MulhiUIOp,
    ops.PreciseSqrtOp, ops.PreciseDivFOp, ops.ClampFOp, ops.FpToFpOp, ops.DotOp, ops.ExternElementwiseOp, ops.ElementwiseInlineAsmOp,
    ops.PrintOp, ops.AssertOp, DotScaledOp,
    mem.LoadOp, mem.StoreOp, mem.AtomicRMWOp, mem.AtomicCASOp, mem.MakeTensorPtrOp, mem.AdvanceOp,
    desc_ops.DescriptorLoadOp, desc_ops.DescriptorStoreOp, desc_ops.MakeTensorDescriptorOp,
    rops.ReduceOp, rops.ReduceReturnOp, rops.ScanOp, rops.ScanReturnOp,
    rops.MapElementwiseOp, rops.MapElementwiseReturnOp,
]

Triton = Dialect("tt", TT_OPS, [PointerType])

_extra_dialects: list[Dialect] = []


def register_dialect(d: Dialect) -> None:
    """Make a dialect (e.g. ``ttg``) known to every context made from now on."""
    if d not in _extra_dialects:
        _extra_dialects.append(d)


def make_context() -> Context:
    ctx = Context(allow_unregistered=False)
    for d in (builtin.Builtin, Arith, Math, scf.Scf, cf.Cf, ub.UB, Triton, GPU, LLVM, *_extra_dialects):
        ctx.load_dialect(d)
    return ctx


# MLIR prints locations either inline or as trailing ``#locN = loc(...)`` aliases; xDSL only reads
# the inline form, so aliases are substituted before parsing.  An alias used as a whole location is
# written ``loc(#locN)``; inside another location (``loc("name"(#loc1))``) it stands bare.
_LOC_ALIAS_DEF = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$", re.M)
_LOC_REF = re.compile(r"loc\((#loc\d*)\)|(#loc\d*)(?![\w])")


def inline_location_aliases(text: str) -> str:
    aliases = dict(_LOC_ALIAS_DEF.findall(text))  # name -> the location's inner text
    if not aliases:
        return text
    text = _LOC_ALIAS_DEF.sub("", text)

    def inner(name: str, depth: int = 0) -> str:
        body = aliases.get(name, "unknown")
        if depth > 16:
            return "unknown"
        return _LOC_REF.sub(lambda m: f"loc({inner(m.group(1), depth + 1)})" if m.group(1)
                            else inner(m.group(2), depth + 1), body)

    return _LOC_REF.sub(lambda m: f"loc({inner(m.group(1))})" if m.group(1) else inner(m.group(2)), text)
