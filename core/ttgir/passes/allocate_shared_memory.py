"""``allocate-shared-memory``: give every shared-memory buffer an offset.

Buffers are *explicit* (``ttg.local_alloc``, live from the alloc to its last use, extended over a
loop that uses it from outside), *scratch* (an op's temporary: ``ttg.convert_layout``, cross-warp
``tt.reduce``/``tt.scan``, ``tt.gather``'s source; live only at that op, or over its outermost loop where the op carries
``SCRATCH_ACROSS_LOOPS``; sizes from :func:`tritium.ttgir.scratch.scratch_size`: the core rule of
each op, or the backend's ``rules``) and *virtual* (a ``tt.call`` reserves its callee's whole total; the
callee's buffers are placed relative to the base offset the call passes).  Offsets come from
first-fit over buffers sorted by size, between buffers whose live ranges overlap.

Results are attributes: ``allocation.offset = N : i32`` on each op that owns a buffer (the call:
the callee's base), ``ttg.shared = N : i32`` on each function (its total including callees) and on
the module (the largest kernel).  :class:`Allocation` holds the same for membar and the lowering.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32
from xdsl.ir import Operation

from ...ttir.ops import CallOp, FuncOp
from ..dialect import SHARED
from ..ops import LocalAllocOp
from ..scratch import ScratchRule, scratch_size
from ..types import MemDescType
from ._util import func_ops

LOOPS = (scf.ForOp, scf.WhileOp)

ALIGNMENT = 16
OFFSET_ATTR = "allocation.offset"
#: on an op whose scratch something asynchronous may still read after the op (a copy engine's
#: store of the tile): the scratch is the op's alone over the op's outermost enclosing loop, so a
#: later iteration's other buffers never take those bytes (the backend waits for the reader before
#: the op writes them again)
SCRATCH_ACROSS_LOOPS = "allocation.scratch_across_loops"
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


def _liveness(func: Operation, totals: dict[str, int], rules: Mapping[str, ScratchRule] | None) -> list[Buffer]:
    pos: dict[Operation, int] = {}
    last: dict[Operation, int] = {}
    for i, op in enumerate(func.walk()):
        pos[op] = i
    for op in func.walk():  # an op with regions ends after its last nested op
        last[op] = max((pos[o] for o in op.walk()), default=pos[op])
    bufs: list[Buffer] = []
    for op in func.walk():
        i = pos[op]
        if isinstance(op, LocalAllocOp):
            end = i
            for use in op.results[0].uses:
                user = use.operation
                # A use inside a loop that does not contain the alloc keeps it live the whole loop.
                anc, top = user, user
                while anc is not None and anc is not func:
                    if isinstance(anc, LOOPS) and not op.is_ancestor(anc) and anc.is_ancestor(user) \
                            and not anc.is_ancestor(op):
                        top = anc
                    anc = anc.parent_op()
                end = max(end, last[top] if top is not user else pos[user])
            # an encoding read by other hardware (a swizzled tensor-core layout) may ask for more
            align = max(ALIGNMENT, getattr(op.results[0].type.encoding, "alignment", ALIGNMENT))
            bufs.append(Buffer("explicit", op, op.results[0].type.size_in_bytes(), i, end, align=align))
        elif isinstance(op, CallOp):
            size = totals.get(op.callee.string_value(), 0)
            if size:
                bufs.append(Buffer("virtual", op, size, i, i))
        elif (size := scratch_size(op, rules)) > 0:
            top = outermost_loop(op) if SCRATCH_ACROSS_LOOPS in op.attributes else op
            bufs.append(Buffer("scratch", op, size, pos[top], last[top]))
    return bufs


def outermost_loop(op: Operation) -> Operation:
    """The outermost ``scf.for``/``scf.while`` around ``op`` in its function (``op`` where none)."""
    top, anc = op, op.parent_op()
    while anc is not None and not isinstance(anc, FuncOp):
        if isinstance(anc, LOOPS):
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
            if isinstance(op, CallOp):
                visit(op.callee.string_value())
        order.append(funcs[name])

    for name in funcs:
        visit(name)
    return order


class AllocateSharedMemory:
    """``rules``: the backend's scratch rules (op name -> bytes), over the core ones."""

    name = "allocate-shared-memory"

    def __init__(self, rules: Mapping[str, ScratchRule] | None = None):
        self.rules = dict(rules or {})
        self.allocation: Allocation | None = None

    def run(self, module: ModuleOp) -> None:
        totals: dict[str, int] = {}
        buffers: dict[str, list[Buffer]] = {}
        for f in _call_order(module):
            name = f.sym_name.data
            bufs = _liveness(f, totals, self.rules)
            totals[name] = _place(bufs)
            buffers[name] = bufs
            for b in bufs:
                b.op.attributes[OFFSET_ATTR] = IntegerAttr(b.offset, i32)
            f.attributes[SHARED] = IntegerAttr(totals[name], i32)
        module.attributes[SHARED] = IntegerAttr(max(totals.values(), default=0), i32)
        self.allocation = Allocation(buffers, totals)


def allocate_shared_memory(module: ModuleOp, rules: Mapping[str, ScratchRule] | None = None) -> Allocation:
    p = AllocateSharedMemory(rules)
    p.run(module)
    return p.allocation


__all__ = ["AllocateSharedMemory", "Allocation", "Buffer", "SCRATCH_ACROSS_LOOPS", "allocate_shared_memory",
           "outermost_loop", "scratch_size", "MemDescType"]
