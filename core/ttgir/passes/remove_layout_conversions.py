"""``remove-layout-conversions``: eliminate ``ttg.convert_layout`` ops by rematerialising the values
they convert in the wanted layout.

Rules, applied to a fixed point:

1. identity: a conversion between layouts that place every element identically is dropped;
2. chains: ``convert(convert(x))`` becomes ``convert(x)``;
3. backward rematerialisation: ``convert(f(a, b), L)`` becomes ``f(convert(a, L), convert(b, L))``
   when ``f`` is elementwise (or splat / make_range / a constant / broadcast / expand_dims) and the
   whole slice feeding it can be recomputed in ``L`` without memory access, in at most
   ``MAX_REMAT_OPS`` ops that compute (each once, however many ops of the slice read it;
   expand_dims and broadcast are free; the originals die when no other user is left);
4. loop-carried values: an ``scf.for`` iter arg used only through conversions to ``L`` and by
   elementwise updates feeding its own yield is carried in ``L`` instead;
5. forward propagation (:mod:`.layout_forward`): when the converted value cannot be recomputed
   (a load, a dot), its layout is carried forward through elementwise ops, reductions, expand_dims /
   broadcast and ``scf.for`` iter args instead, as long as that adds no conversion;
6. a conversion feeding only a narrowing cast moves after it (fewer bytes through shared memory);
7. ``reshape(convert(x))`` becomes ``convert(reshape(x))`` when ``x``'s own layout reshapes to a
   blocked or ``#ttg.linear`` layout (the reshape then renames registers; the conversion meets the
   next one);
8. ``trans(convert(x))`` becomes ``convert(trans(x))`` when ``x``'s layout (blocked or linear)
   permutes, for the same reason.

Loads, dots and reductions are anchors: their layouts are never changed here.
"""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from ...ttir.ops import BroadcastOp, ExpandDimsOp, ReshapeOp, TransOp, is_pure
from ...ttir.passes.dce import DCE
from ..encodings import SliceEncodingAttr
from ..ops import ConvertLayoutOp
from ._util import broadcastable, convert_before, encoding, set_type, with_encoding
from .layout_forward import forward_fold
from ..layouts import bit_width, permuted_layout, reshaped_layout

CHEAP = {"arith.constant", "tt.splat", "tt.make_range"}
# expand_dims and broadcast only rename registers (the operand takes the slice / the same layout):
# recomputing them costs no instruction, so they take nothing from the budget below
LAYOUT_ONLY = {"tt.expand_dims", "tt.broadcast"}
# Recomputing a few ALU ops per thread is cheaper than a round trip through shared memory (what a
# conversion costs); longer slices are left converted.
MAX_REMAT_OPS = 12
NEVER = {"tt.load", "tt.dot", "tt.reduce", "tt.scan", "tt.call", "tt.atomic_rmw", "tt.atomic_cas",
         "ttg.local_load", "tt.reshape", "tt.trans", "tt.cat", "tt.join", "tt.split",
         "tt.gather"}


def _elementwise(op: Operation) -> bool:
    if op.name in NEVER or not is_pure(op) or op.regions or len(op.results) != 1:
        return False
    shape = op.results[0].type.get_shape() if isinstance(op.results[0].type, TensorType) else None
    return shape is not None and all(not isinstance(v.type, TensorType) or v.type.get_shape() == shape
                                     for v in op.operands)


def _operand_layout(op: Operation, i: int, enc: Attribute) -> Attribute | None:
    """The layout operand ``i`` must have for ``op`` to produce ``enc``."""
    if isinstance(op, ExpandDimsOp):
        return SliceEncodingAttr(op.axis.value.data, enc)
    if isinstance(op, BroadcastOp):
        return enc if broadcastable(enc) else None
    return enc


class _Remat:
    def __init__(self):
        self.memo: dict[tuple[SSAValue, Attribute], SSAValue] = {}
        self.budget = MAX_REMAT_OPS
        self.counted: set[tuple[SSAValue, Attribute]] = set()

    def can(self, v: SSAValue, enc: Attribute, root: bool, depth: int = 0) -> bool:
        if root:
            self.budget = MAX_REMAT_OPS
            self.counted = set()
        if encoding(v.type) == enc:
            return True
        op = v.owner
        if not isinstance(op, Operation) or depth > 32:
            return False
        if isinstance(op, ConvertLayoutOp):
            return True
        if op.name not in CHEAP and not (_elementwise(op) or isinstance(op, (BroadcastOp, ExpandDimsOp))):
            return False
        if op.name not in CHEAP and op.name not in LAYOUT_ONLY and (v, enc) not in self.counted:
            # a value the slice reads twice is recomputed once (``make`` memoises it)
            self.counted.add((v, enc))
            self.budget -= 1
            if self.budget < 0:
                return False
        for i, o in enumerate(op.operands):
            if isinstance(o.type, TensorType):
                need = _operand_layout(op, i, enc)
                if need is None or not self.can(o, need, False, depth + 1):
                    return False
        return True

    def make(self, v: SSAValue, enc: Attribute) -> SSAValue:
        if encoding(v.type) == enc:
            return v
        key = (v, enc)
        if key in self.memo:
            return self.memo[key]
        op = v.owner
        if isinstance(op, ConvertLayoutOp):
            out = self.make(op.src, enc) if encoding(op.src.type) == enc else self._cvt(op, op.src, enc)
        else:
            clone = op.clone()
            for i, o in enumerate(op.operands):
                if isinstance(o.type, TensorType):
                    clone.operands[i] = self.make(o, _operand_layout(op, i, enc))
            op.parent_block().insert_op_after(clone, op)
            set_type(clone.results[0], with_encoding(v.type, enc))
            out = clone.results[0]
        self.memo[key] = out
        return out

    @staticmethod
    def _cvt(at: Operation, src: SSAValue, enc: Attribute) -> SSAValue:
        cvt = ConvertLayoutOp(src, with_encoding(src.type, enc))
        at.parent_block().insert_op_after(cvt, at)
        return cvt.result


def _fold_one(cvt: ConvertLayoutOp, remat: _Remat) -> bool:
    src, dst = cvt.src, cvt.result
    if src.type == dst.type:
        dst.replace_all_uses_with(src)
        cvt.detach(), cvt.erase()
        return True
    producer = src.owner
    if isinstance(producer, ConvertLayoutOp):
        cvt.operands[0] = producer.src
        if producer.src.type == dst.type:
            dst.replace_all_uses_with(producer.src)
            cvt.detach(), cvt.erase()
        return True
    enc = encoding(dst.type)
    if isinstance(producer, Operation) and remat.can(src, enc, True):
        new = remat.make(src, enc)
        dst.replace_all_uses_with(new)
        cvt.detach(), cvt.erase()
        return True
    return forward_fold(cvt, remat, _elementwise, _operand_layout)


_NARROWING = {"arith.truncf", "arith.trunci", "tt.fp_to_fp"}


def _sink_past_narrowing(cvt: ConvertLayoutOp) -> bool:
    """Rule 6: ``cast(convert(x))`` with a narrowing cast becomes ``convert(cast(x))``: the same one
    conversion, moving fewer bytes (an fp32 accumulator stored as fp16 converts as fp16)."""
    uses = list(cvt.result.uses)
    if len(uses) != 1:
        return False
    cast = uses[0].operation
    if cast.name not in _NARROWING or len(cast.results) != 1 or len(cast.operands) != 1:
        return False
    if bit_width(cast.results[0].type) >= bit_width(cvt.src.type):
        return False
    new_cast = cast.clone()
    new_cast.operands[0] = cvt.src
    cvt.parent_block().insert_op_after(new_cast, cvt)
    set_type(new_cast.results[0], with_encoding(cast.results[0].type, encoding(cvt.src.type)))
    back = ConvertLayoutOp(new_cast.results[0], cast.results[0].type)
    new_cast.parent_block().insert_op_after(back, new_cast)
    cast.results[0].replace_all_uses_with(back.result)
    cast.detach(), cast.erase()
    cvt.detach(), cvt.erase()
    return True


def _reshape_past(cvt: ConvertLayoutOp) -> bool:
    """Rules 7 and 8 for every reshape and transpose of ``cvt``'s result."""
    changed = False
    for use in list(cvt.result.uses):
        op = use.operation
        src_t, dst_t = cvt.src.type, op.results[0].type if op.results else None
        if isinstance(op, ReshapeOp) and "efficient_layout" not in op.properties:
            enc = reshaped_layout(encoding(src_t), src_t.get_shape(), dst_t.get_shape())
        elif isinstance(op, TransOp):
            enc = permuted_layout(encoding(src_t), op.order.get_values())
        else:
            continue  # an efficient_layout reshape's layout was chosen with its source's
        if enc is None or enc == encoding(dst_t):
            continue
        new = op.clone()
        new.operands[0] = cvt.src
        op.parent_block().insert_op_before(new, op)
        set_type(new.results[0], with_encoding(dst_t, enc))
        back = ConvertLayoutOp(new.results[0], dst_t)
        op.parent_block().insert_op_before(back, op)
        op.results[0].replace_all_uses_with(back.result)
        op.detach(), op.erase()
        changed = True
    return changed


def _carry_in(loop: Operation, remat: _Remat) -> bool:
    """Rule 4 for one ``scf.for``; True if an iter arg changed layout."""
    body = loop.body.block
    yield_op = body.last_op
    for k, arg in enumerate(body.args[1:]):
        uses = [u.operation for u in arg.uses]
        cvts = [u for u in uses if isinstance(u, ConvertLayoutOp)]
        if not cvts or not isinstance(arg.type, TensorType):
            continue
        enc = encoding(cvts[0].result.type)
        others = [u for u in uses if u not in cvts]
        if any(encoding(c.result.type) != enc for c in cvts):
            continue
        ok = all(_elementwise(o) and [x.operation for x in o.results[0].uses] == [yield_op]
                 and yield_op.operands[k] == o.results[0]
                 and all(v is arg or not isinstance(v.type, TensorType) or remat.can(v, enc, False)
                         for v in o.operands) for o in others)
        if not ok or (not others and not remat.can(yield_op.operands[k], enc, True)):
            continue
        old_t, new_t = arg.type, with_encoding(arg.type, enc)
        set_type(arg, new_t)
        for c in cvts:
            c.result.replace_all_uses_with(arg)
            c.detach(), c.erase()
        for o in others:
            for i, v in enumerate(o.operands):
                if v is not arg and isinstance(v.type, TensorType):
                    o.operands[i] = remat.make(v, enc)
            set_type(o.results[0], with_encoding(o.results[0].type, enc))
        if yield_op.operands[k].type != new_t:
            yield_op.operands[k] = convert_before(yield_op, yield_op.operands[k], new_t)
        loop.operands[3 + k] = convert_before(loop, loop.operands[3 + k], new_t)
        res = loop.results[k]
        set_type(res, new_t)
        back = ConvertLayoutOp(res, old_t)
        loop.parent_block().insert_op_after(back, loop)
        res.replace_uses_with_if(back.result, lambda u: u.operation is not back)
        return True
    return False


class RemoveLayoutConversions:
    name = "remove-layout-conversions"

    def run(self, module: ModuleOp) -> None:
        for _ in range(16):
            changed = False
            remat = _Remat()
            for op in list(module.walk()):
                if op.parent is None:
                    continue  # erased earlier in this sweep
                if isinstance(op, ConvertLayoutOp):
                    changed |= _fold_one(op, remat) or _sink_past_narrowing(op) or _reshape_past(op)
                elif isinstance(op, scf.ForOp):
                    changed |= _carry_in(op, remat)
            DCE().run(module)
            if not changed:
                break


def remove_layout_conversions(module: ModuleOp) -> ModuleOp:
    RemoveLayoutConversions().run(module)
    return module


def count_conversions(module: ModuleOp) -> int:
    return sum(1 for op in module.walk() if isinstance(op, ConvertLayoutOp))
