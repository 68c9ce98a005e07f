"""Signed ranges of integer values (scalars, or every element of a tensor), where they can be
bounded from how the values are built: ``make_range``, constants, shape ops, and ``+ - *``,
``rem``, ``div``, ``and``, ``min``/``max`` of bounded operands.  Anything else (kernel arguments,
loaded data, ``program_id``-scaled offsets past the i32 range, loop-carried values) is unbounded.

A backend asks it whether an offset tensor stays within a range, e.g. AMD's buffer accesses:
their 32-bit byte offsets must be provably non-negative and below 2 GiB."""
from __future__ import annotations

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, IntegerType
from xdsl.ir import Block, BlockArgument, SSAValue

from ...ttir.types import element_type

Range = tuple[int, int]  # inclusive bounds

#: ops whose result takes exactly the values of their first operand
_SAME = {"tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.trans", "ttg.convert_layout",
         "arith.extsi"}


def _width(v: SSAValue) -> int | None:
    e = element_type(v.type)
    return e.width.data if isinstance(e, IntegerType) else None


def _fits(r: Range, width: int) -> Range | None:
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    return r if lo <= r[0] and r[1] <= hi else None


class ValueRanges:
    """``ValueRanges().of(v)``: ``(lo, hi)`` or ``None`` (unbounded); results are memoized."""

    def __init__(self):
        self._memo: dict[SSAValue, Range | None] = {}

    def of(self, v: SSAValue) -> Range | None:
        if v in self._memo:
            return self._memo[v]
        self._memo[v] = None  # a cycle (through a loop) stays unbounded
        width = _width(v)
        r = self._compute(v) if width else None
        r = _fits(r, width) if r is not None else None
        self._memo[v] = r
        return r

    def _compute(self, v: SSAValue) -> Range | None:
        if isinstance(v, BlockArgument):
            return self._block_arg(v)
        op = v.owner
        name = op.name
        if name == "tt.make_range":
            return op.start.value.data, op.end.value.data - 1
        if name == "arith.constant":
            value = op.properties.get("value")
            return _constant(value if value is not None else op.attributes.get("value"))
        if name in _SAME:
            return self.of(op.operands[0])
        if name == "arith.extui":
            r = self.of(op.operands[0])
            return r if r is not None and r[0] >= 0 else (0, (1 << _width(op.operands[0])) - 1)
        if name == "arith.trunci":
            return self.of(op.operands[0])  # checked against the narrower width by ``of``
        args = [self.of(x) for x in op.operands]
        if name == "arith.addi" and None not in args:
            (a, b), (c, d) = args
            return a + c, b + d
        if name == "arith.subi" and None not in args:
            (a, b), (c, d) = args
            return a - d, b - c
        if name == "arith.muli" and None not in args:
            (a, b), (c, d) = args
            p = (a * c, a * d, b * c, b * d)
            return min(p), max(p)
        if name in ("arith.minsi", "arith.maxsi") and None not in args:
            (a, b), (c, d) = args
            return (min(a, c), min(b, d)) if name == "arith.minsi" else (max(a, c), max(b, d))
        if name in ("arith.remsi", "arith.remui"):
            return _rem(args[0], args[1], unsigned=name == "arith.remui")
        if name in ("arith.divsi", "arith.divui") and None not in args:
            (a, b), (c, d) = args
            if c > 0 and (a >= 0 or name == "arith.divsi"):
                q = (int(a / c), int(a / d), int(b / c), int(b / d))  # C division: toward zero
                return min(q), max(q)
            return None
        if name == "arith.andi":
            # a mask with a non-negative bound: the result is in [0, that bound]
            bounds = [r[1] for r in args if r is not None and r[0] >= 0]
            return (0, min(bounds)) if bounds else None
        if name == "tt.get_program_id":
            return 0, (1 << 31) - 1
        if name == "tt.get_num_programs":
            return 1, (1 << 31) - 1
        return None

    def _block_arg(self, v: BlockArgument) -> Range | None:
        """The induction variable of an ``scf.for`` with bounded, increasing bounds."""
        block = v.owner
        loop = block.parent_op() if isinstance(block, Block) else None
        if loop is None or loop.name != "scf.for" or v.index != 0:
            return None
        lb, ub, step = (self.of(x) for x in loop.operands[:3])
        if lb is None or ub is None or step is None or step[0] <= 0:
            return None
        return lb[0], max(lb[0], ub[1] - 1)


def _constant(attr) -> Range | None:
    if isinstance(attr, IntegerAttr):
        return attr.value.data, attr.value.data
    if isinstance(attr, DenseIntOrFPElementsAttr):
        values = list(attr.iter_values())
        if values and all(isinstance(x, int) for x in values):
            return min(values), max(values)
    return None


def _rem(a: Range | None, b: Range | None, unsigned: bool) -> Range | None:
    """``a % b`` for a positive divisor: ``[0, b - 1]`` (C semantics: the sign of ``a``)."""
    if b is None or b[0] <= 0:
        return None
    top = b[1] - 1
    if a is not None and a[0] >= 0:
        return 0, min(a[1], top)
    if unsigned:
        return 0, top
    return -top, top
