"""``axis_info``: per-dimension contiguity, divisibility and constancy of integer and pointer values.

For a value of shape ``S`` and a dimension ``d``:

* ``contiguity[d] = c``: along ``d`` the value splits into runs of ``c`` elements increasing by 1;
* ``divisibility[d] = k``: the first element of every such run is divisible by ``k`` (for pointers,
  in bytes); with ``c == 1`` that is every element;
* ``constancy[d] = c``: along ``d`` the value splits into runs of ``c`` equal elements.

Scalars are treated as rank-1 values of one element.  Sources of facts: ``tt.make_range``,
constants, ``tt.divisibility``/``tt.contiguity``/``tt.constancy`` on function arguments and as op
hints (``tt.multiple_of`` / ``tt.max_contiguous`` in the frontend).  Works on TTIR and TTGIR;
``scf.for`` loop-carried values are solved to a fixed point; calls to noinline functions return
nothing known, and a callee's arguments take the meet over its call sites.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from xdsl.dialects.builtin import (DenseArrayBase, DenseIntOrFPElementsAttr, IntegerAttr, IntegerType, ModuleOp,
                                   TensorType)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from ...ttir.types import PointerType, element_type, shape_of
from ..layouts import bit_width, contig_per_thread

MAX_DIV = 1 << 30  # the divisibility of 0


def pow2_divisor(n: int) -> int:
    return MAX_DIV if n == 0 else min(n & -n, MAX_DIV)


@dataclass(frozen=True)
class AxisInfo:
    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    constant: int | None = None

    @property
    def rank(self) -> int:
        return len(self.contiguity)

    @staticmethod
    def unknown(rank: int) -> "AxisInfo":
        return AxisInfo((1,) * rank, (1,) * rank, (1,) * rank)

    @staticmethod
    def of_constant(value: int, shape: tuple[int, ...]) -> "AxisInfo":
        shape = shape or (1,)
        return AxisInfo((1,) * len(shape), (pow2_divisor(value),) * len(shape), tuple(shape), value)

    def elem_div(self, d: int) -> int:
        """Divisibility of every element along ``d`` (a contiguous run's later elements are odd)."""
        return self.divisibility[d] if self.contiguity[d] == 1 else 1

    def meet(self, other: "AxisInfo") -> "AxisInfo":
        """What holds for both (control-flow merge)."""
        z = lambda a, b: tuple(gcd(x, y) for x, y in zip(a, b))  # noqa: E731
        return AxisInfo(z(self.contiguity, other.contiguity), z(self.divisibility, other.divisibility),
                        z(self.constancy, other.constancy), self.constant if self.constant == other.constant else None)


def _rank(v: SSAValue) -> int:
    return max(len(shape_of(v.type)), 1)


def _shape(v: SSAValue) -> tuple[int, ...]:
    return shape_of(v.type) or (1,)


def _elem_bytes(t: Attribute) -> int:
    elt = element_type(t)
    if isinstance(elt, PointerType):
        elt = elt.pointee_type
    try:
        return max(bit_width(elt) // 8, 1)
    except TypeError:
        return 1


def _hint(op_or_attrs, key: str, rank: int) -> tuple[int, ...] | None:
    attr = op_or_attrs.get(key) if isinstance(op_or_attrs, dict) else op_or_attrs.attributes.get(key)
    if attr is None:
        return None
    if isinstance(attr, IntegerAttr):
        vals = [attr.value.data]
    elif isinstance(attr, DenseArrayBase):
        vals = list(attr.get_values())
    elif isinstance(attr, DenseIntOrFPElementsAttr):
        vals = [int(v) for v in attr.get_values()]
    else:
        return None
    return tuple(vals) * rank if len(vals) == 1 else tuple(vals)


def _apply_hints(info: AxisInfo, source) -> AxisInfo:
    r = info.rank
    div, con, cst = (_hint(source, k, r) for k in ("tt.divisibility", "tt.contiguity", "tt.constancy"))
    if not (div or con or cst):
        return info
    mx = lambda a, b: tuple(max(x, y) for x, y in zip(a, b)) if b else a  # noqa: E731
    return AxisInfo(mx(info.contiguity, con), mx(info.divisibility, div), mx(info.constancy, cst), info.constant)


class AxisInfoAnalysis:
    """Run once per module; ``get(value)`` answers for any value of it."""

    def __init__(self, module: ModuleOp):
        self.info: dict[SSAValue, AxisInfo] = {}
        funcs = {f.sym_name.data: f for f in module.body.block.ops if f.name == "tt.func"}
        callers: dict[str, list[Operation]] = {n: [] for n in funcs}
        for f in funcs.values():
            for op in f.walk():
                if op.name == "tt.call" and op.callee.string_value() in callers:
                    callers[op.callee.string_value()].append(op)
        # Callers first, so a noinline callee sees the meet of what its call sites pass.
        done: set[str] = set()
        for _ in range(len(funcs) + 1):
            for name, f in funcs.items():
                if name in done or any(c.parent_op() is not None and self._func_of(c) not in done
                                       and self._func_of(c) != name for c in callers[name]):
                    continue
                self._function(f, callers[name])
                done.add(name)
        for name, f in funcs.items():
            if name not in done:  # recursion: fall back on the argument attributes alone
                self._function(f, [])

    @staticmethod
    def _func_of(op: Operation) -> str | None:
        while op is not None and op.name != "tt.func":
            op = op.parent_op()
        return op.sym_name.data if op is not None else None

    def get(self, v: SSAValue) -> AxisInfo:
        return self.info.get(v) or AxisInfo.unknown(_rank(v))

    # -- functions and blocks --------------------------------------------------------------------
    def _function(self, f: Operation, calls: list[Operation]) -> None:
        if not f.body.blocks:
            return
        attrs = f.arg_attrs.data if f.arg_attrs else [None] * len(f.entry.args)
        for i, arg in enumerate(f.entry.args):
            info = AxisInfo.unknown(_rank(arg))
            if attrs[i] is not None:
                info = _apply_hints(info, dict(attrs[i].data))
            sites = [self.get(c.operands[i]) for c in calls if c.operands[i] in self.info]
            if sites and len(sites) == len(calls):
                merged = sites[0]
                for s in sites[1:]:
                    merged = merged.meet(s)
                info = AxisInfo(*(tuple(max(a, b) for a, b in zip(x, y)) for x, y in
                                  ((info.contiguity, merged.contiguity), (info.divisibility, merged.divisibility),
                                   (info.constancy, merged.constancy))), merged.constant)
            self.info[arg] = info
        self._block(f.entry)

    def _block(self, block: Block) -> None:
        for op in block.ops:
            self._op(op)

    def _op(self, op: Operation) -> None:
        if op.name == "scf.for":
            self._for(op)
            return
        if op.name == "scf.if":
            for region in op.regions:
                for b in region.blocks:
                    self._block(b)
            yields = [r.blocks[0].last_op for r in op.regions if r.blocks]
            for i, res in enumerate(op.results):
                infos = [self.get(y.operands[i]) for y in yields]
                out = infos[0]
                for x in infos[1:]:
                    out = out.meet(x)
                self.info[res] = out if len(yields) == 2 else AxisInfo.unknown(_rank(res))
            return
        for region in op.regions:  # reduce/scan/while bodies: analysed, results left unknown
            for b in region.blocks:
                for arg in b.args:
                    self.info.setdefault(arg, AxisInfo.unknown(_rank(arg)))
                self._block(b)
        if len(op.results) == 1:
            self.info[op.results[0]] = _apply_hints(self._transfer(op), op)

    def _for(self, op: Operation) -> None:
        lb, step = self.get(op.operands[0]), self.get(op.operands[2])
        body = op.body.block
        self.info[body.args[0]] = AxisInfo((1,), (gcd(lb.divisibility[0], step.divisibility[0]),), (1,))
        carried = [self.get(v) for v in op.operands[3:]]
        for _ in range(8):  # the meet only goes down a finite lattice of powers of two
            for arg, info in zip(body.args[1:], carried):
                self.info[arg] = info
            self._block(body)
            new = [c.meet(self.get(y)) for c, y in zip(carried, body.last_op.operands)]
            if new == carried:
                break
            carried = new
        for res, info in zip(op.results, carried):
            self.info[res] = info

    # -- transfer functions ----------------------------------------------------------------------
    def _transfer(self, op: Operation) -> AxisInfo:
        name, res = op.name, op.results[0]
        shape, rank = _shape(res), _rank(res)
        ops = [self.get(v) for v in op.operands]
        if name == "arith.constant":
            v = op.value
            if isinstance(v, IntegerAttr):
                return AxisInfo.of_constant(v.value.data, shape)
            if isinstance(v, DenseIntOrFPElementsAttr) and isinstance(element_type(v.type), IntegerType):
                vals = list(v.get_values())
                if len(set(vals)) == 1:
                    return AxisInfo.of_constant(int(vals[0]), shape)
            return AxisInfo.unknown(rank)
        if name == "tt.make_range":
            start = op.start.value.data
            return AxisInfo((shape[0],), (pow2_divisor(start),), (1,))
        if name == "tt.splat":
            s = ops[0]
            return AxisInfo((1,) * rank, (s.divisibility[0],) * rank, shape, s.constant)
        if name == "tt.broadcast":
            src_shape = _shape(op.operands[0])
            s = ops[0]
            return AxisInfo(*(tuple(f[d] if src_shape[d] == shape[d] else (shape[d] if f is s.constancy else
                                                                             (1 if f is s.contiguity else f[d]))
                                    for d in range(rank)) for f in (s.contiguity, s.divisibility, s.constancy)),
                            s.constant)
        if name == "tt.expand_dims":
            s, ax = ops[0], op.axis.value.data
            new_div = min(s.elem_div(d) for d in range(s.rank))
            ins = lambda t, v: t[:ax] + (v,) + t[ax:]  # noqa: E731
            return AxisInfo(ins(s.contiguity, 1), ins(s.divisibility, new_div), ins(s.constancy, 1), s.constant)
        if name == "tt.trans":
            s, perm = ops[0], list(op.order.get_values())
            return AxisInfo(*(tuple(f[p] for p in perm) for f in (s.contiguity, s.divisibility, s.constancy)),
                            s.constant)
        if name in ("ttg.convert_layout", "arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast",
                    "tt.int_to_ptr", "tt.ptr_to_int", "tt.bitcast") and ops:
            return ops[0]
        if name in ("arith.addi", "arith.subi", "tt.addptr"):
            return self._add(name, ops, op, rank)
        if name == "arith.muli":
            a, b = ops
            return _zip(rank, lambda d: (
                a.contiguity[d] if b.constant == 1 else (b.contiguity[d] if a.constant == 1 else 1),
                min(a.elem_div(d) * b.elem_div(d), MAX_DIV),
                gcd(a.constancy[d], b.constancy[d])), _fold(a, b, lambda x, y: x * y))
        if name in ("arith.divsi", "arith.divui", "arith.shrsi", "arith.shrui"):
            a, b = ops
            c = b.constant if name.startswith("arith.div") else (1 << b.constant if b.constant is not None else None)
            return _zip(rank, lambda d: (
                1,
                max(a.elem_div(d) // c, 1) if c and a.elem_div(d) % c == 0 else 1,
                max(gcd(a.constancy[d], b.constancy[d]),
                    gcd(a.contiguity[d], c) if c and c & (c - 1) == 0 and a.divisibility[d] % c == 0 else 1)),
                _fold(a, b, lambda x, y: x // y if name.startswith("arith.div") else x >> y))
        if name in ("arith.remsi", "arith.remui"):
            a, b = ops
            c = b.constant
            # x % n keeps runs of x that never cross a multiple of n: n's divisibility bounds them
            return _zip(rank, lambda d: (
                gcd(a.contiguity[d], c if c else b.divisibility[d]),
                gcd(a.divisibility[d], b.divisibility[d]),
                gcd(a.constancy[d], b.constancy[d])), _fold(a, b, lambda x, y: x % y if y else None))
        if name == "arith.shli":
            a, b = ops
            k = b.constant
            return _zip(rank, lambda d: (1, min(a.elem_div(d) << k, MAX_DIV) if k is not None else a.elem_div(d),
                                         gcd(a.constancy[d], b.constancy[d])), _fold(a, b, lambda x, y: x << y))
        if name in ("arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui"):
            a, b = ops
            pick = max if "max" in name else min
            if a.constant is not None and b.constant is not None and (
                    name.endswith("si") or min(a.constant, b.constant) >= 0):  # unsigned: no sign to read
                return AxisInfo.of_constant(pick(a.constant, b.constant), shape)

            def dim(d):
                # each element is one side's: runs both sides share, multiples both sides have
                # (bounded by the runs where the runs differ: a run may start mid-way through one)
                div = gcd(a.divisibility[d], b.divisibility[d])
                if a.contiguity[d] != b.contiguity[d]:
                    div = gcd(div, gcd(a.contiguity[d], b.contiguity[d]))
                return gcd(a.contiguity[d], b.contiguity[d]), div, gcd(a.constancy[d], b.constancy[d])
            return _zip(rank, dim, None)
        if name in ("arith.andi", "arith.ori", "arith.xori"):
            a, b = ops
            if a.constant is not None and b.constant is not None:
                fn = {"arith.andi": lambda x, y: x & y, "arith.ori": lambda x, y: x | y}.get(name, lambda x, y: x ^ y)
                return AxisInfo.of_constant(fn(a.constant, b.constant), shape)
            return _zip(rank, lambda d: (1, 1, gcd(a.constancy[d], b.constancy[d])), None)
        if name == "arith.cmpi":
            return self._cmp(op, ops, rank)
        if name == "arith.select":
            c, a, b = ops
            return _zip(rank, lambda d: (
                gcd(a.contiguity[d], b.contiguity[d]) if c.constancy[d] == _shape(op.operands[1])[d] else 1,
                gcd(a.divisibility[d], b.divisibility[d]),
                gcd(gcd(a.constancy[d], b.constancy[d]), c.constancy[d])), None)
        return AxisInfo.unknown(rank)

    def _add(self, name: str, ops: list[AxisInfo], op: Operation, rank: int) -> AxisInfo:
        a, b = ops
        scale = _elem_bytes(op.operands[0].type) if name == "tt.addptr" else 1
        sub = name == "arith.subi"

        def dim(d):
            contig = gcd(a.contiguity[d], b.constancy[d])
            if not sub:
                contig = max(contig, gcd(a.constancy[d], b.contiguity[d]))
            # The first element of a run is (run start of the contiguous side) + (a constant).
            div = gcd(a.divisibility[d], min(b.divisibility[d] * scale, MAX_DIV))
            return contig, div, gcd(a.constancy[d], b.constancy[d])

        cst = None
        if name != "tt.addptr":
            cst = _fold(a, b, (lambda x, y: x - y) if sub else (lambda x, y: x + y))
        return _zip(rank, dim, cst)

    def _cmp(self, op: Operation, ops: list[AxisInfo], rank: int) -> AxisInfo:
        a, b = ops
        pred = op.predicate.value.data if hasattr(op.predicate, "value") else None
        shape = _shape(op.results[0])

        def dim(d):
            con = gcd(a.constancy[d], b.constancy[d])
            # `range + base < n` with n constant: the mask flips only at multiples of gcd(divs).
            if pred not in (0, 1) and b.constancy[d] == shape[d] and a.contiguity[d] > 1:
                con = max(con, gcd(a.contiguity[d], gcd(a.divisibility[d], b.divisibility[d])))
            elif pred not in (0, 1) and a.constancy[d] == shape[d] and b.contiguity[d] > 1:
                con = max(con, gcd(b.contiguity[d], gcd(a.divisibility[d], b.divisibility[d])))
            return 1, 1, con

        return _zip(rank, dim, None)


class PartialAxisInfo(AxisInfoAnalysis):
    """The same facts on demand, for a function still being built (the frontend asks while
    lowering a kernel's source): a value's definition chain is followed back to constants,
    op hints and the kernel's argument attributes.  Arguments of other functions and values
    carried by loops or merged by branches are unknown, so every answer is one the whole-module
    analysis would also give."""

    def __init__(self):  # noqa: D107 - no module to walk
        self.info = {}

    def get(self, v: SSAValue) -> AxisInfo:
        info = self.info.get(v)
        if info is None:
            info = self.info[v] = self._derive(v)
        return info

    def _derive(self, v: SSAValue) -> AxisInfo:
        rank = _rank(v)
        if isinstance(v, BlockArgument):
            func = v.block.parent_op()
            if func is None or func.name != "tt.func" or v.block is not func.body.blocks.first:
                return AxisInfo.unknown(rank)
            attrs = func.arg_attrs.data if func.arg_attrs else ()
            if v.index < len(attrs) and attrs[v.index] is not None:
                return _apply_hints(AxisInfo.unknown(rank), dict(attrs[v.index].data))
            return AxisInfo.unknown(rank)
        op = v.owner
        if op.regions or len(op.results) != 1:
            return AxisInfo.unknown(rank)
        return _apply_hints(self._transfer(op), op)


def _zip(rank: int, dim, constant) -> AxisInfo:
    cols = [dim(d) for d in range(rank)]
    return AxisInfo(tuple(c[0] for c in cols), tuple(c[1] for c in cols), tuple(c[2] for c in cols), constant)


def _fold(a: AxisInfo, b: AxisInfo, fn):
    if a.constant is None or b.constant is None:
        return None
    try:
        return fn(a.constant, b.constant)
    except (ZeroDivisionError, ValueError):
        return None


def vector_width(analysis: AxisInfoAnalysis, ptr: SSAValue, elem_bits: int, mask: SSAValue | None = None) -> int:
    """Elements one thread may move with a single access through ``ptr`` (at most 128 bits): the
    pointer's contiguity along its most contiguous dimension, limited by its alignment, by the
    mask's constancy there and, in TTGIR, by how many consecutive elements of that dimension the
    layout gives one thread."""
    info = analysis.get(ptr)
    order = sorted(range(info.rank), key=lambda d: -info.contiguity[d])
    d = order[0]
    elem_bytes = max(elem_bits // 8, 1)
    n = min(info.contiguity[d], max(info.divisibility[d] // elem_bytes, 1), max(128 // max(elem_bits, 1), 1))
    if mask is not None:
        n = min(n, analysis.get(mask).constancy[d])
    t = ptr.type
    if isinstance(t, TensorType) and t.encoding is not None and hasattr(t.encoding, "linear_layout"):
        n = min(n, contig_per_thread(t.encoding, t.get_shape())[d])
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def contiguity_order(analysis: AxisInfoAnalysis, ptr: SSAValue) -> list[int]:
    """Dimensions of ``ptr`` from most to least contiguous (ties keep the row-major preference)."""
    info = analysis.get(ptr)
    return sorted(range(info.rank), key=lambda d: (-info.contiguity[d], -d))
