"""Scratch: the temporary shared memory an op needs while it executes.

Every core op that needs scratch has its rule here, in one table (:data:`CORE_SCRATCH`), whatever
modules a process happens to have imported: the allocation pass, membar and the software
pipeliner all ask :func:`scratch_size`, and the shared lowering reads the offset the allocation
gave.  A backend whose lowering of an op needs different room (NVIDIA's TMA copies: the tile and an
mbarrier) declares its rules through the ``tritium_scratch_sizes`` hook; core passes them to those
passes as ``rules``, which take precedence over the table.

The rules (bytes):

- ``ttg.convert_layout``: 0 when the same thread already owns the same elements (registers are
  renamed), or, on a target that exchanges lanes, when every element stays in its warp and one
  exchange per register moves it (:func:`convert_scratch_in_warp`), or, on a target that fetches
  words across lanes, for a conversion into a matrix operand it lowers so
  (:func:`convert_scratch_gathering`); else a round trip through shared memory with padded rows,
  at most the module's conversion limit per slice
  (:func:`tritium.ttgir.layouts.convert_scratch_bytes`).
- ``tt.reduce``: 0 when one warp holds each output element's whole run along the axis, else one
  partial per (output element, warp along the axis) for every operand (the layout of a conversion
  the lowering elides upstream counts too).
- ``tt.scan``: every operand row-major.
- ``tt.gather``: the source row-major, for every thread to index.
- the shape ops: 0 when :mod:`.register_plans` finds a register renaming, else the result
  row-major (``tt.split``: both halves).
- a used atomic: a scalar result broadcast to all threads, or a tensor result whose layout gives
  elements to several threads (one slot per element).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from math import prod

from xdsl.dialects.builtin import NoneAttr, TensorType
from xdsl.ir import Operation

from ..ttir.ops import SplitOp
from ..ttir.types import PointerType
from .encodings import BlockedEncodingAttr, DistributedEncoding, DotOperandEncodingAttr
from .layouts import bit_width, convert_scratch_bytes, linear_layout, scratch_limit
from .register_plans import GatherPlan, register_plan, split_plans, warp_exchange_plan, warp_gather_plan

ScratchRule = Callable[[Operation], int]


def tensor_bytes(t) -> int:
    return prod(t.get_shape()) * max(bit_width(t.element_type) // 8, 1)


def round8(n: int) -> int:
    """Each operand's part of a multi-operand scratch starts 8-byte aligned (the lowering lays
    the parts out the same way)."""
    return (n + 7) // 8 * 8


def convert_scratch(op: Operation, exchange_in_warp: bool = False, gather: bool = False) -> int:
    """The core rule; ``exchange_in_warp`` for a target whose lowering moves elements that stay in
    their warp by lane exchanges (``TargetInfo.warp_exchange``), ``gather`` for one that fetches
    words across lanes for a conversion into a matrix operand (``TargetInfo.warp_gather``): those
    conversions need none."""
    src, dst = op.operands[0].type, op.results[0].type
    a, b = (None if isinstance(t.encoding, NoneAttr) else t.encoding for t in (src, dst))
    try:
        la, lb = linear_layout(a, src.get_shape()), linear_layout(b, dst.get_shape())
    except (NotImplementedError, TypeError, ValueError):
        return tensor_bytes(src)
    if la == lb or (la.warp == lb.warp and la.lane == lb.lane and
                    {tuple(o) for o in lb.reg_offsets().tolist()} <= {tuple(o) for o in la.reg_offsets().tolist()}):
        return 0  # same thread owns the same elements: registers are only renamed
    if exchange_in_warp and exchangeable(src.element_type) and warp_exchange_plan(la, lb) is not None:
        return 0  # lane exchanges inside each warp
    if gather and gather_plan(src, dst, la, lb) is not None:
        return 0  # word fetches inside each warp
    return convert_scratch_bytes(src, dst, scratch_limit(op))  # a round trip through shared memory, rows padded


def convert_scratch_in_warp(op: Operation) -> int:
    """:func:`convert_scratch` for a target with ``TargetInfo.warp_exchange`` (its plugin gives
    this rule for ``ttg.convert_layout`` through ``tritium_scratch_sizes``)."""
    return convert_scratch(op, exchange_in_warp=True)


def convert_scratch_gathering(op: Operation) -> int:
    """:func:`convert_scratch` for a target with ``TargetInfo.warp_gather``."""
    return convert_scratch(op, gather=True)


def gather_plan(src_t, dst_t, la=None, lb=None) -> GatherPlan | None:
    """The word fetches ``TargetInfo.warp_gather`` lowers a conversion by (:func:`warp_gather_plan`),
    where it is one of those: 8- or 16-bit elements into a matrix unit's operand (a ``dot_op`` of a
    non-blocked parent) that stay in their warp, on warps of at most 32 lanes; else None."""
    enc = dst_t.encoding
    if not isinstance(enc, DotOperandEncodingAttr) or isinstance(enc.parent, BlockedEncodingAttr):
        return None
    if not exchangeable(src_t.element_type) or bit_width(src_t.element_type) not in (8, 16):
        return None
    la = la or linear_layout(src_t.encoding, src_t.get_shape())
    lb = lb or linear_layout(dst_t.encoding, dst_t.get_shape())
    return warp_gather_plan(la, lb, bit_width(src_t.element_type)) if la.threads_per_warp <= 32 else None


def exchangeable(element_type) -> bool:
    """Elements a lane exchange moves: integers and floats of at most 32 bits (not pointers)."""
    return not isinstance(element_type, PointerType) and bit_width(element_type) <= 32


def axis_bits(bases, axis: int) -> list[int]:
    """Which of a layout's bases (lane or warp bits) move along ``axis``."""
    return [i for i, v in enumerate(bases) if v[axis]]


def reduce_scratch(op: Operation) -> int:
    t = op.operands[0].type
    if not isinstance(t, TensorType):
        return 0
    axis = op.axis.value.data
    # the operand's layout, or the layout of a conversion the lowering may elide upstream
    types = [t]
    x = op.operands[0]
    while hasattr(x.owner, "name") and x.owner.name != "ttg.convert_layout" and x.owner.name.startswith(("arith.", "math.")):
        x = next((o for o in x.owner.operands if isinstance(o.type, TensorType)), None)
        if x is None:
            break
    if x is not None and getattr(x.owner, "name", None) == "ttg.convert_layout":
        types.append(x.owner.operands[0].type)
    w = max(1 << len(axis_bits(linear_layout(y.encoding, y.get_shape()).warp, axis)) for y in types)
    if w == 1:
        return 0
    n_out = prod(s for d, s in enumerate(t.get_shape()) if d != axis)
    return sum(round8(n_out * w * max(bit_width(v.type) // 8, 1)) for v in op.operands)


def scan_scratch(op: Operation) -> int:
    return sum(round8(tensor_bytes(v.type)) for v in op.operands if isinstance(v.type, TensorType))


def gather_scratch(op: Operation) -> int:
    return tensor_bytes(op.operands[0].type)


def shape_op_scratch(op: Operation) -> int:
    try:
        ok = (split_plans(op) if isinstance(op, SplitOp) else register_plan(op)) is not None
    except (NotImplementedError, ValueError, TypeError, AttributeError):
        ok = False
    return 0 if ok else tensor_bytes(op.results[0].type) * (2 if isinstance(op, SplitOp) else 1)


def atomic_scratch(op: Operation) -> int:
    if not op.results[0].uses:
        return 0
    t = op.results[0].type
    if not isinstance(t, TensorType):
        return max(bit_width(t) // 8, 1)  # a scalar result is broadcast to all threads
    if not isinstance(t.encoding, DistributedEncoding):
        return 0
    # the owners' results go through shared memory to the other holders of the same element
    shape = tuple(t.get_shape())
    free = linear_layout(t.encoding, shape).free_masks()
    if not (free.get("lane") or free.get("warp")):
        return 0
    return tensor_bytes(t)


#: the rule of every core op that needs scratch
CORE_SCRATCH: Mapping[str, ScratchRule] = {
    "ttg.convert_layout": convert_scratch,
    "tt.reduce": reduce_scratch,
    "tt.scan": scan_scratch,
    "tt.gather": gather_scratch,
    "tt.atomic_rmw": atomic_scratch,
    "tt.atomic_cas": atomic_scratch,
    **{name: shape_op_scratch for name in ("tt.broadcast", "tt.expand_dims", "tt.trans", "tt.reshape", "tt.join",
                                           "tt.cat", "tt.split")},
}


def scratch_size(op: Operation, rules: Mapping[str, ScratchRule] | None = None) -> int:
    """Bytes of temporary shared memory ``op`` needs while it executes (0 for most ops): the
    backend's rule from ``rules`` where it has one, else the core rule."""
    rule = (rules.get(op.name) if rules else None) or CORE_SCRATCH.get(op.name)
    return rule(op) if rule is not None else 0
