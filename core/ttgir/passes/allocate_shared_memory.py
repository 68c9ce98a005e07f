"""``allocate-shared-memory``: give every shared-memory buffer an offset.

Buffers are *explicit* (``ttg.local_alloc``, live from the alloc to its last use, extended over a
loop that uses it from outside), *scratch* (an op's temporary: ``ttg.convert_layout``, cross-warp
``tt.reduce``/``tt.scan``, ``tt.gather``'s source; live only at that op, or over its outermost loop where the op carries
``SCRATCH_ACROSS_LOOPS``; sizes from :func:`scratch_size`, extensible with
:func:`register_scratch_size`) and *virtual* (a ``tt.call`` reserves its callee's whole total; the
callee's buffers are placed relative to the base offset the call passes).  Offsets come from
first-fit over buffers sorted by size, between buffers whose live ranges overlap.

Results are attributes: ``allocation.offset = N : i32`` on each op that owns a buffer (the call:
the callee's base), ``ttg.shared = N : i32`` on each function (its total including callees) and on
the module (the largest kernel).  :class:`Allocation` holds the same for membar and the lowering.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod

from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i32
from xdsl.ir import Operation

from ..dialect import SHARED
from ..encodings import DistributedEncoding
from ..layouts import bit_width, convert_scratch_bytes, linear_layout, scratch_limit
from ..types import MemDescType
from ._util import encoding, func_ops

ALIGNMENT = 16
OFFSET_ATTR = "allocation.offset"
#: on an op whose scratch something asynchronous may still read after the op (a copy engine's
#: store of the tile): the scratch is the op's alone over the op's outermost enclosing loop, so a
#: later iteration's other buffers never take those bytes (the backend waits for the reader before
#: the op writes them again)
SCRATCH_ACROSS_LOOPS = "allocation.scratch_across_loops"
_SCRATCH: dict[str, Callable[[Operation], int]] = {}


def register_scratch_size(op_name: str, fn: Callable[[Operation], int]) -> None:
    """Let a lowering declare the scratch bytes an op needs (replaces the default rule)."""
    _SCRATCH[op_name] = fn


def _bytes(t) -> int:
    return prod(t.get_shape()) * max(bit_width(t.element_type) // 8, 1)


def _convert_scratch(op: Operation) -> int:
    src, dst = op.operands[0].type, op.results[0].type
    a, b = encoding(src), encoding(dst)
    try:
        la, lb = linear_layout(a, src.get_shape()), linear_layout(b, dst.get_shape())
    except (NotImplementedError, TypeError, ValueError):
        return _bytes(src)
    if la == lb or (la.warp == lb.warp and la.lane == lb.lane and
                    {tuple(o) for o in lb.reg_offsets().tolist()} <= {tuple(o) for o in la.reg_offsets().tolist()}):
        return 0  # same thread owns the same elements: registers are only renamed
    return convert_scratch_bytes(src, dst, scratch_limit(op))  # a round trip through shared memory, rows padded


def _reduce_scratch(op: Operation) -> int:
    axis = op.axis.value.data
    total = 0
    for v in op.operands:
        t = v.type
        enc = encoding(t) if isinstance(t, TensorType) else None
        if not isinstance(enc, DistributedEncoding):
            continue
        warps_along = enc.warps_per_cta[axis] if axis < len(enc.warps_per_cta) else 1
        if warps_along > 1 or op.name == "tt.scan":
            # one partial result per (output element, warp along the axis)
            out_elems = prod(t.get_shape()) // t.get_shape()[axis]
            total += out_elems * warps_along * max(bit_width(t.element_type) // 8, 1)
    return total


def scratch_size(op: Operation) -> int:
    """Bytes of temporary shared memory ``op`` needs while it executes (0 for most ops)."""
    if op.name in _SCRATCH:
        return _SCRATCH[op.name](op)
    if op.name == "ttg.convert_layout":
        return _convert_scratch(op)
    if op.name in ("tt.reduce", "tt.scan"):
        return _reduce_scratch(op)
    if op.name == "tt.gather":
        return _bytes(op.operands[0].type)  # the source, row-major, for every thread to index
    if op.name in ("tt.atomic_rmw", "tt.atomic_cas") and not isinstance(op.results[0].type, TensorType) \
            and op.results[0].uses:
        return max(bit_width(op.results[0].type) // 8, 1)  # a scalar result is broadcast to all threads
    if op.name in ("tt.atomic_rmw", "tt.atomic_cas") and op.results[0].uses:
        return _atomic_share_scratch(op.results[0].type)
    return 0


def _atomic_share_scratch(t) -> int:
    """A used tensor atomic whose layout gives some elements to several threads: the owners'
    results go through shared memory to the other holders (one slot per element)."""
    if not isinstance(t, TensorType) or not isinstance(t.encoding, DistributedEncoding):
        return 0
    shape = tuple(t.get_shape())
    free = linear_layout(t.encoding, shape).free_masks()
    if not (free.get("lane") or free.get("warp")):
        return 0
    return prod(shape) * max(bit_width(t.element_type) // 8, 1)


@dataclass
class Buffer:
    kind: str          # "explicit" | "scratch" | "virtual"
    op: Operation
    size: int
    start: int
    end: int
    offset: int = 0
    align: int = ALIGNMENT

    def overlaps_in_time(self, o: "Buffer") -> bool:
        return self.start <= o.end and o.start <= self.end


@dataclass
class Allocation:
    """Per function: its buffers and total bytes (with callees)."""

    buffers: dict[str, list[Buffer]]
    totals: dict[str, int]

    def buffer_of(self, op: Operation) -> Buffer | None:
        for bufs in self.buffers.values():
            for b in bufs:
                if b.op is op:
                    return b
        return None


def _align(n: int, to: int = ALIGNMENT) -> int:
    return (n + to - 1) // to * to


def _liveness(func: Operation, totals: dict[str, int]) -> list[Buffer]:
    pos: dict[Operation, int] = {}
    last: dict[Operation, int] = {}
    for i, op in enumerate(func.walk()):
        pos[op] = i
    for op in func.walk():  # an op with regions ends after its last nested op
        last[op] = max((pos[o] for o in op.walk()), default=pos[op])
    bufs: list[Buffer] = []
    for op in func.walk():
        i = pos[op]
        if op.name == "ttg.local_alloc":
            end = i
            for use in op.results[0].uses:
                user = use.operation
                # A use inside a loop that does not contain the alloc keeps it live the whole loop.
                anc, top = user, user
                while anc is not None and anc is not func:
                    if anc.name in ("scf.for", "scf.while") and not op.is_ancestor(anc) and anc.is_ancestor(user) \
                            and not anc.is_ancestor(op):
                        top = anc
                    anc = anc.parent_op()
                end = max(end, last[top] if top is not user else pos[user])
            # an encoding read by other hardware (a swizzled tensor-core layout) may ask for more
            align = max(ALIGNMENT, getattr(op.results[0].type.encoding, "alignment", ALIGNMENT))
            bufs.append(Buffer("explicit", op, op.results[0].type.size_in_bytes(), i, end, align=align))
        elif op.name == "tt.call":
            size = totals.get(op.callee.string_value(), 0)
            if size:
                bufs.append(Buffer("virtual", op, size, i, i))
        elif (size := scratch_size(op)) > 0:
            top = outermost_loop(op) if SCRATCH_ACROSS_LOOPS in op.attributes else op
            bufs.append(Buffer("scratch", op, size, pos[top], last[top]))
    return bufs


def outermost_loop(op: Operation) -> Operation:
    """The outermost ``scf.for``/``scf.while`` around ``op`` in its function (``op`` where none)."""
    top, anc = op, op.parent_op()
    while anc is not None and anc.name != "tt.func":
        if anc.name in ("scf.for", "scf.while"):
            top = anc
        anc = anc.parent_op()
    return top


def _place(bufs: list[Buffer]) -> int:
    placed: list[Buffer] = []
    for b in sorted(bufs, key=lambda b: (-b.size, b.start)):
        offset = 0
        for o in sorted((o for o in placed if o.overlaps_in_time(b)), key=lambda o: o.offset):
            if offset + b.size <= o.offset:
                break
            offset = max(offset, _align(o.offset + o.size, b.align))
        b.offset = offset
        placed.append(b)
    return max((b.offset + b.size for b in placed), default=0)


def _call_order(module: ModuleOp) -> list[Operation]:
    """Functions with callees before callers (the call graph is acyclic in Triton)."""
    funcs = {f.sym_name.data: f for f in func_ops(module)}
    order: list[Operation] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name not in funcs:
            return
        seen.add(name)
        for op in funcs[name].walk():
            if op.name == "tt.call":
                visit(op.callee.string_value())
        order.append(funcs[name])

    for name in funcs:
        visit(name)
    return order


class AllocateSharedMemory:
    name = "allocate-shared-memory"

    def __init__(self):
        self.allocation: Allocation | None = None

    def run(self, module: ModuleOp) -> None:
        totals: dict[str, int] = {}
        buffers: dict[str, list[Buffer]] = {}
        for f in _call_order(module):
            name = f.sym_name.data
            bufs = _liveness(f, totals)
            totals[name] = _place(bufs)
            buffers[name] = bufs
            for b in bufs:
                b.op.attributes[OFFSET_ATTR] = IntegerAttr(b.offset, i32)
            f.attributes[SHARED] = IntegerAttr(totals[name], i32)
        module.attributes[SHARED] = IntegerAttr(max(totals.values(), default=0), i32)
        self.allocation = Allocation(buffers, totals)


def allocate_shared_memory(module: ModuleOp) -> Allocation:
    p = AllocateSharedMemory()
    p.run(module)
    return p.allocation


__all__ = ["AllocateSharedMemory", "Allocation", "Buffer", "SCRATCH_ACROSS_LOOPS", "allocate_shared_memory",
           "outermost_loop", "scratch_size", "register_scratch_size", "MemDescType"]
