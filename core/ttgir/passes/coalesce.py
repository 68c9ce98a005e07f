"""``coalesce``: give each global load, store and atomic a blocked layout whose fastest dimension
is the pointer's most contiguous one and whose ``sizePerThread`` there makes each thread's access as
wide as contiguity and alignment allow (up to 128 bits), as Triton's Coalesce pass does (a load
as wide as the widest access of its shape and order it is connected with); operands
and results are wrapped in ``ttg.convert_layout`` (cleaned up by ``remove_layout_conversions``).
A tensor-map access (``tt.descriptor_load`` / ``tt.descriptor_store``) moves a whole row-major tile,
so its tile gets the layout of a fully contiguous access: 128 bits per thread along the last
dimension."""
from __future__ import annotations

from math import prod

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation

from ...ttir.types import PointerType, element_type
from ...ttir.memory_ops import LoadOp
from ..analysis.axis_info import AxisInfoAnalysis, contiguity_order
from ..dialect import NUM_WARPS, THREADS_PER_WARP, module_int
from ..layouts import bit_width, blocked_encoding
from ..ops import ConvertLayoutOp
from ._util import convert_before, encoding, set_type, with_encoding

MEMORY_OPS = ("tt.load", "tt.store", "tt.atomic_rmw", "tt.atomic_cas")
TILE_OPS = ("tt.descriptor_load", "tt.descriptor_store")


def access_width(analysis: AxisInfoAnalysis, ptr) -> int:
    """Elements one thread can move in one access through ``ptr`` along its most contiguous
    dimension: contiguity and alignment allow it, at most 128 bits."""
    info = analysis.get(ptr)
    elem_bits = bit_width(element_type(ptr.type).pointee_type)
    d = contiguity_order(analysis, ptr)[0]
    aligned = max(info.divisibility[d] * 8 // elem_bits, 1)
    return max(min(info.contiguity[d], aligned, max(128 // elem_bits, 1)), 1)


def coalesced_encoding(analysis: AxisInfoAnalysis, ptr, num_warps: int, threads_per_warp: int,
                       width: int | None = None):
    """The blocked layout of an access through ``ptr``, ``width`` elements a thread along its most
    contiguous dimension (default: :func:`access_width`; capped by the tensor's share a thread)."""
    t = ptr.type
    shape = t.get_shape()
    order = contiguity_order(analysis, ptr)
    d = order[0]
    per_thread = max(prod(shape) // (num_warps * threads_per_warp), 1)
    vec = min(width or access_width(analysis, ptr), per_thread, shape[d])
    spt = [1] * len(shape)
    spt[d] = 1 << (max(vec, 1).bit_length() - 1)
    return blocked_encoding(shape, spt, order, num_warps, threads_per_warp)


def _connected(ops: list) -> dict:
    """Each op's group: memory ops joined through def-use chains (block arguments count as their
    region's op), as Triton's multi-root slice joins them."""
    parent: dict = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] is not x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra is not rb:
            parent[ra] = rb

    for op in ops:
        for v in op.operands:
            owner = v.owner
            src = owner if isinstance(owner, Operation) else owner.parent_op()
            if src is not None and src.name != "tt.func":  # a kernel argument joins nothing
                union(op, src)
        region_op = op.parent_op()
        if region_op is not None and region_op.name not in ("tt.func", "builtin.module"):
            union(op, region_op)  # an op in a loop or branch joins it (its results, its block args)
    return {op: find(op) for op in ops}


def group_widths(analysis: AxisInfoAnalysis, module: ModuleOp, accesses: list) -> dict:
    """Per access, Triton's width rule: a load takes the widest :func:`access_width` among the
    connected accesses of the same shape and contiguity order (a tile read through an unaligned
    pointer takes the layout of the aligned tiles it is combined with, so no conversion joins
    them); a store or atomic keeps its own (a wider write would leave gaps)."""
    group = _connected(list(module.walk()))
    widths = {op: access_width(analysis, op.operands[0]) for op in accesses}
    key = {op: (group[op], tuple(op.operands[0].type.get_shape()),
                tuple(contiguity_order(analysis, op.operands[0]))) for op in accesses}
    best: dict = {}
    for op in accesses:
        best[key[op]] = max(best.get(key[op], 1), widths[op])
    return {op: best[key[op]] if isinstance(op, LoadOp) else widths[op] for op in accesses}


def tile_encoding(t, num_warps: int, threads_per_warp: int):
    """A row-major tile's layout: each thread 128 bits (or its share) of the last dimension."""
    shape = t.get_shape()
    per_thread = max(prod(shape) // (num_warps * threads_per_warp), 1)
    vec = min(max(128 // max(bit_width(t.element_type), 8), 1), per_thread, shape[-1])
    spt = [1] * len(shape)
    spt[-1] = 1 << (max(vec, 1).bit_length() - 1)
    return blocked_encoding(shape, spt, list(range(len(shape) - 1, -1, -1)), num_warps, threads_per_warp)


def _relayout(op, enc) -> None:
    """Give ``op``'s tensor operands and results ``enc``, converting at its edges."""
    for i, v in enumerate(op.operands):
        if isinstance(v.type, TensorType) and encoding(v.type) is not None:
            op.operands[i] = convert_before(op, v, with_encoding(v.type, enc))
    for res in op.results:
        if not isinstance(res.type, TensorType):
            continue
        old = res.type
        set_type(res, with_encoding(old, enc))
        back = ConvertLayoutOp(res, old)
        op.parent_block().insert_op_after(back, op)
        res.replace_uses_with_if(back.result, lambda use: use.operation is not back)


class Coalesce:
    name = "coalesce"

    def run(self, module: ModuleOp) -> None:
        num_warps, tpw = module_int(module, NUM_WARPS), module_int(module, THREADS_PER_WARP)
        analysis = AxisInfoAnalysis(module)
        accesses = [o for o in module.walk() if o.name in MEMORY_OPS and isinstance(o.operands[0].type, TensorType)
                    and isinstance(element_type(o.operands[0].type), PointerType)]  # not scalars, block pointers
        widths = group_widths(analysis, module, accesses)
        for op in accesses:
            ptr = op.operands[0]
            t = ptr.type
            enc = coalesced_encoding(analysis, ptr, num_warps, tpw, widths[op])
            if enc != encoding(t):
                _relayout(op, enc)
        for op in [o for o in module.walk() if o.name in TILE_OPS]:
            tile = op.results[0].type if op.results else op.operands[-1].type
            enc = tile_encoding(tile, num_warps, tpw)
            if enc != encoding(tile):
                _relayout(op, enc)


def coalesce(module: ModuleOp) -> ModuleOp:
    Coalesce().run(module)
    return module
