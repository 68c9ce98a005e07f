"""Forward layout propagation, the other half of ``remove-layout-conversions``.

``y = convert(x: A -> B)`` where ``x``'s producer cannot be recomputed in ``B`` (a load, whose layout
``coalesce`` chose for wide accesses): instead of converting ``x``, carry ``A`` forward through
everything computed from ``y``:

* elementwise ops take ``A``; their other operands must already be in ``A``, come from the same
  forward slice, or be cheap to rematerialise in ``A`` (splats, constants, ranges and elementwise
  ops of those);
* ``tt.reduce`` reads its operands in ``A`` and its tensor results become ``slice(axis, A)``;
  ``tt.expand_dims`` of ``slice(axis, P)`` gives ``P``, ``tt.broadcast`` keeps a blocked layout;
* ``scf.for``: a value yielded as iter arg ``k`` carries ``A`` into the iter arg, the loop result
  and the init value (which must be cheap to rematerialise), so loop-carried accumulators follow
  the loads that feed them instead of converting every iteration; a value that is the init of a
  later loop's iter arg carries ``A`` into that iter arg and result, and its yielded value must
  come back in ``A`` (two loops over one accumulator);
* another ``ttg.convert_layout`` ends the slice (it now converts from ``A``; the fixed point of the
  pass folds it when ``A`` is what it wants); one that feeds the slice and nothing else is retargeted
  to ``A``;
* an ``scf.for`` iter arg the slice needs, whose next value is converted from ``A`` (a second dot's
  accumulator), is carried in ``A`` too.

A store of a value of the slice takes it back in the store's own layout through a conversion
right before it (an exit).  Exits are allowed only where the rewrite still removes more conversions
than it adds, none of them deeper in loops than ``y``'s: the layer norm's loads of ``w``, ``b`` and
``x`` meet in one store, and three conversions after the loads become one before the store (Triton
places it there too).  Any other use (a dot, a call, an ``scf.if`` yield, ...) rejects the rewrite,
and so does a value that ``A`` would give many more registers per thread than it has
(``_util.affordable``): ``A`` may be the layout of a ``1x1`` load, which broadcast onto a
``1 x 2048`` loop body would hold all 2,048 elements in every thread.
"""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from ...ttir.memory_ops import StoreOp
from ...ttir.ops import BroadcastOp, ExpandDimsOp
from ...ttir.region_ops import ReduceOp
from ..encodings import BlockedEncodingAttr, SliceEncodingAttr
from ..ops import ConvertLayoutOp
from ._util import affordable, broadcastable, convert_before, encoding, set_type, with_encoding

CHEAP = {"arith.constant", "tt.splat", "tt.make_range"}
MAX_CHEAP_OPS = 8


def _cheap(v: SSAValue, enc: Attribute, rules, budget: list, depth: int = 0) -> bool:
    """``v`` is in ``enc`` already, converted from a value in ``enc``, or recomputable there from
    splats / constants / ranges through elementwise ops, expand_dims and broadcast."""
    if encoding(v.type) == enc:
        return True
    op = v.owner
    if not isinstance(op, Operation) or depth > 16:
        return False
    if isinstance(op, ConvertLayoutOp):
        # converted from ``enc`` already, or a conversion used only here: it is retargeted to
        # ``enc`` instead (still one conversion)
        return encoding(op.src.type) == enc or len(list(v.uses)) == 1
    if not affordable(v, enc):
        return False
    if op.name in CHEAP:
        return True
    elementwise, operand_layout = rules
    if not (elementwise(op) or isinstance(op, (BroadcastOp, ExpandDimsOp))):
        return False
    budget[0] -= 1
    if budget[0] < 0:
        return False
    for i, o in enumerate(op.operands):
        if isinstance(o.type, TensorType):
            need = operand_layout(op, i, enc)
            if need is None or not _cheap(o, need, rules, budget, depth + 1):
                return False
    return True


class _Slice:
    def __init__(self, rules):
        self.rules = rules
        self.elementwise = rules[0]
        self.new: dict[SSAValue, Attribute] = {}
        self.needs: list[tuple[Operation, int, Attribute]] = []  # (op, operand index, layout)
        self.exits: list[tuple[Operation, int]] = []  # operands converted back to their own layout
        self.work: list[SSAValue] = []

    def assign(self, v: SSAValue, enc: Attribute) -> bool:
        if v in self.new:
            return self.new[v] == enc
        if not affordable(v, enc):
            return False  # the slice would hold more registers per thread than it does now
        self.new[v] = enc
        self.work.append(v)
        return True

    def need_all(self, op: Operation, skip: SSAValue, enc: Attribute) -> None:
        for i, o in enumerate(op.operands):
            if o is not skip and isinstance(o.type, TensorType):
                self.needs.append((op, i, enc))

    def visit(self, op: Operation, index: int, v: SSAValue, enc: Attribute) -> bool:
        if isinstance(op, ConvertLayoutOp):
            return True
        if isinstance(op, StoreOp):
            self.exits.append((op, index))
            return True
        if isinstance(op, ReduceOp):
            self.need_all(op, v, enc)
            axis = op.axis.value.data
            return all(self.assign(r, SliceEncodingAttr(axis, enc)) for r in op.results
                       if isinstance(r.type, TensorType))
        if isinstance(op, ExpandDimsOp):
            if not isinstance(enc, SliceEncodingAttr) or enc.dim != op.axis.value.data:
                return False
            return self.assign(op.results[0], enc.parent)
        if isinstance(op, BroadcastOp):
            return broadcastable(enc) and self.assign(op.results[0], enc)
        if isinstance(op, scf.YieldOp):
            loop = op.parent_op()
            if not isinstance(loop, scf.ForOp):
                return False
            self.needs.append((loop, 3 + index, enc))
            return self.assign(loop.body.block.args[1 + index], enc) and self.assign(loop.results[index], enc)
        if isinstance(op, scf.ForOp):
            # the init value of a later loop's iter arg (two loops in a row over one accumulator,
            # as attention's causal form runs): that iter arg and its result are carried in the
            # layout too, and its yielded value must come back in it
            if index < 3:
                return False
            k = index - 3
            return self.assign(op.body.block.args[1 + k], enc) and self.assign(op.results[k], enc)
        if self.elementwise(op):
            self.need_all(op, v, enc)
            return self.assign(op.results[0], enc)
        return False

    def grow(self) -> bool:
        while True:
            while self.work:
                v = self.work.pop()
                enc = self.new[v]
                for use in list(v.uses):
                    if not self.visit(use.operation, use.index, v, enc):
                        return False
                # an iter arg's value comes back through the yield: it must arrive in the same layout
                if not isinstance(v.owner, Operation) and isinstance(v.owner.parent_op(), scf.ForOp) \
                        and v.index > 0:
                    yield_op = v.owner.last_op
                    self.needs.append((yield_op, v.index - 1, enc))
            for op, i, enc in self.needs:
                o = op.operands[i]
                if o in self.new:
                    if self.new[o] != enc:
                        return False
                elif self._carried(o, enc):
                    break  # the slice grew through a loop-carried value: look at its uses too
                elif not _cheap(o, enc, self.rules, [MAX_CHEAP_OPS]):
                    return False
            else:
                return True

    def _carried(self, v: SSAValue, enc: Attribute) -> bool:
        """An ``scf.for`` iter arg whose next value is converted from ``enc`` (another dot's
        accumulator, say) joins the slice: it is carried in ``enc`` and its conversion goes away."""
        if isinstance(v.owner, Operation) or v.index == 0:
            return False
        loop = v.owner.parent_op()
        if not isinstance(loop, scf.ForOp):
            return False
        k = v.index - 1
        y = v.owner.last_op.operands[k]
        if not (isinstance(y.owner, ConvertLayoutOp) and encoding(y.owner.src.type) == enc):
            return False
        self.needs.append((loop, 3 + k, enc))
        return self.assign(v, enc) and self.assign(loop.results[k], enc)


def _loop_depth(op: Operation) -> int:
    n = 0
    while op is not None:
        if isinstance(op, scf.ForOp):
            n += 1
        op = op.parent_op()
    return n


def _exits_pay(cvt: ConvertLayoutOp, s: _Slice) -> bool:
    """The exits' conversions are fewer than those the rewrite removes (``cvt``, and conversions
    from the slice's layout feeding only the slice), and none sits deeper in loops than ``cvt``."""
    if not s.exits:
        return True
    depth = _loop_depth(cvt)
    if any(_loop_depth(op) > depth for op, _ in s.exits):
        return False
    absorbed = set()
    for op, i, enc in s.needs:
        o = op.operands[i]
        c = o.owner
        if o not in s.new and isinstance(c, ConvertLayoutOp) and encoding(c.src.type) == enc and \
                all(any(u.operation is n_op and u.index == n_i for n_op, n_i, _ in s.needs) for u in o.uses):
            absorbed.add(c)
    return len(s.exits) < 1 + len(absorbed)


def forward_fold(cvt: ConvertLayoutOp, remat, elementwise, operand_layout) -> bool:
    """Carry the source layout of ``cvt`` forward (module docstring); True if rewritten.
    ``elementwise(op)`` and ``operand_layout(op, i, enc)`` are the backward rules' predicates."""
    src, dst = cvt.src, cvt.result
    a = encoding(src.type)
    # a slice of a vendor layout (a dot accumulator's row statistics) is carried forward too; slices
    # of blocked layouts stay where the generic pipeline put them
    vendor_slice = isinstance(a, SliceEncodingAttr) and not isinstance(a.parent, BlockedEncodingAttr)
    if not (broadcastable(a) or vendor_slice) or not isinstance(encoding(dst.type), (BlockedEncodingAttr, SliceEncodingAttr)):
        return False
    s = _Slice((elementwise, operand_layout))
    if not s.assign(dst, a) or not s.grow() or not _exits_pay(cvt, s):
        return False
    exits = [(op, i, op.operands[i].type) for op, i in s.exits]
    for op, i, enc in s.needs:
        o = op.operands[i]
        if o not in s.new and encoding(o.type) != enc:
            op.operands[i] = remat.make(o, enc)
    for v, enc in s.new.items():
        if v is not dst:
            set_type(v, with_encoding(v.type, enc))
    dst.replace_all_uses_with(src)
    cvt.detach(), cvt.erase()
    for op, i, old_t in exits:
        op.operands[i] = convert_before(op, op.operands[i], old_t)
    return True
