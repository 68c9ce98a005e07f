"""``rewrite_tensor_pointer``: lower block pointers to tensors of pointers.

A block pointer (``tt.make_tensor_ptr``) is tracked as its fields: base pointer, per-dimension
shape (i64), strides (i64) and offsets (i32); ``tt.advance`` adds to the offsets.  A load or store
through it becomes, per dimension ``d`` of the block:

    off_d  = extsi(offset_d) + extsi(make_range(0, size_d))          (i64, 1-D)
    ptrs   = splat(base) + sum_d broadcast(expand_dims(off_d)) * stride_d
    mask   = and over boundary-checked d of (off_d >= 0) & (off_d < shape_d)
    other  = 0 or NaN from the ``padding`` option (without padding, masked-off lanes read 0)

Offsets are computed in i64 (as Triton does: block pointers address whole tensors).

Through control flow the block pointer is carried field by field: an ``scf.for`` iter_arg or an
``scf.if`` result that is a block pointer becomes ``1 + 3 * rank`` values (base, shape, strides,
offsets), and yields are expanded to match.  Afterwards, loop-carried fields the body yields back
unchanged (base, shape, strides of a pointer that is only advanced) are dropped from the loop, so
a block pointer carried by a loop ends up as its offsets carried by the loop.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, TensorType, i32, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from .. import arith as A
from ..memory_ops import AdvanceOp, LoadOp, MakeTensorPtrOp, StoreOp, cache_evict
from ..ops import AddPtrOp, BroadcastOp, ExpandDimsOp, MakeRangeOp, SplatOp
from ..types import PointerType, element_type
from ._fold import is_const, make_const

I1 = A.I1


@dataclass
class BlockPtr:
    base: SSAValue
    shape: list[SSAValue]
    strides: list[SSAValue]
    offsets: list[SSAValue]

    def fields(self) -> list[SSAValue]:
        return [self.base, *self.shape, *self.strides, *self.offsets]

    @staticmethod
    def from_fields(vals: list[SSAValue], rank: int) -> "BlockPtr":
        return BlockPtr(vals[0], vals[1:1 + rank], vals[1 + rank:1 + 2 * rank], vals[1 + 2 * rank:])


def _is_block_ptr(v: SSAValue) -> bool:
    return isinstance(v.type, PointerType) and v.type.is_block_pointer


def _rank(v: SSAValue) -> int:
    return len(v.type.pointee_type.get_shape())


def _field_types(v: SSAValue) -> list:
    bt = PointerType(element_type(v.type.pointee_type), v.type.address_space.data)
    n = _rank(v)
    return [bt] + [i64] * (2 * n) + [i32] * n


class _Lowering:
    def __init__(self):
        self.info: dict[SSAValue, BlockPtr] = {}
        self.dead: list[Operation] = []

    # -- emission helpers --------------------------------------------------------------------
    def _emit(self, at: Operation, op: Operation) -> SSAValue:
        op.location = at.location
        Rewriter.insert_op(op, InsertPoint.before(at))
        return op.results[0]

    def _pointers_and_mask(self, at: Operation, bp: BlockPtr, block_t: TensorType, checks):
        shape = block_t.get_shape()
        rank = len(shape)
        ptr_t = TensorType(PointerType(element_type(block_t), bp.base.type.address_space.data), shape)
        total = mask = None
        for d, size in enumerate(shape):
            rng = self._emit(at, MakeRangeOp(0, size, TensorType(i32, [size])))
            rng64 = self._emit(at, A.ExtSIOp(rng, TensorType(i64, [size])))
            start = self._emit(at, A.ExtSIOp(bp.offsets[d], i64))
            off = self._emit(at, A.AddIOp(self._emit(at, SplatOp(start, TensorType(i64, [size]))), rng64))
            scaled = self._emit(at, A.MulIOp(off, self._emit(at, SplatOp(bp.strides[d], TensorType(i64, [size])))))
            term = self._to_full(at, scaled, d, shape)
            total = term if total is None else self._emit(at, A.AddIOp(total, term))
            if d in checks:
                t1 = TensorType(i64, [size])
                zero = self._emit(at, make_const(t1, 0))
                lo = self._emit(at, A.CmpIOp(off, zero, "sge"))
                hi = self._emit(at, A.CmpIOp(off, self._emit(at, SplatOp(bp.shape[d], t1)), "slt"))
                inb = self._to_full(at, self._emit(at, A.AndIOp(lo, hi)), d, shape)
                mask = inb if mask is None else self._emit(at, A.AndIOp(mask, inb))
        base = self._emit(at, SplatOp(bp.base, ptr_t))
        if rank == 0:
            return base, None
        return self._emit(at, AddPtrOp(base, total)), mask

    def _to_full(self, at: Operation, v: SSAValue, d: int, shape) -> SSAValue:
        """Expand the 1-D ``v`` along dimension ``d`` to rank ``len(shape)`` and broadcast it."""
        elt, cur = element_type(v.type), [shape[d]]
        for axis in range(len(shape)):
            if axis == d:
                continue
            cur.insert(axis, 1)
            v = self._emit(at, ExpandDimsOp(v, TensorType(elt, list(cur)), axis=A.IntegerAttr(axis, i32)))
        if tuple(cur) != tuple(shape):
            v = self._emit(at, BroadcastOp(v, TensorType(elt, list(shape))))
        return v

    # -- walking -----------------------------------------------------------------------------
    def block(self, block: Block) -> None:
        for op in list(block.ops):
            self.op(op)

    def op(self, op: Operation) -> None:
        if isinstance(op, MakeTensorPtrOp):
            self.info[op.result] = BlockPtr(op.base, list(op.shape), list(op.strides), list(op.offsets))
            self.dead.append(op)
        elif isinstance(op, AdvanceOp):
            bp = self.info[op.ptr]
            # Skipping zero steps keeps an unmoved dimension loop-invariant, so it leaves the loop.
            offs = [o if is_const(d, 0) else self._emit(op, A.AddIOp(o, d)) for o, d in zip(bp.offsets, op.offsets)]
            self.info[op.result] = BlockPtr(bp.base, bp.shape, bp.strides, offs)
            self.dead.append(op)
        elif isinstance(op, LoadOp) and op.ptr in self.info:
            self.load(op)
        elif isinstance(op, StoreOp) and op.ptr in self.info:
            ptrs, mask = self._pointers_and_mask(op, self.info[op.ptr], op.value.type, set(op.boundaryCheck.get_values()))
            new = StoreOp(ptrs, op.value, mask, *cache_evict(op))
            new.attributes.update(op.attributes)
            new.location = op.location
            Rewriter.replace_op(op, new)
        elif isinstance(op, scf.ForOp) and any(_is_block_ptr(v) for v in op.iter_args):
            self.for_op(op)
        elif isinstance(op, scf.IfOp) and any(_is_block_ptr(r) for r in op.results):
            self.if_op(op)
        elif isinstance(op, scf.YieldOp) and any(v in self.info for v in op.operands):
            Rewriter.replace_op(op, scf.YieldOp(*self._expand(op.operands)))
        else:
            for region in op.regions:
                for b in region.blocks:
                    self.block(b)

    def load(self, op: LoadOp) -> None:
        block_t = op.result.type
        ptrs, mask = self._pointers_and_mask(op, self.info[op.ptr], block_t, set(op.boundaryCheck.get_values()))
        other = None
        if mask is not None and op.padding is not None:
            nan = op.padding.value.data == 2 and not isinstance(element_type(block_t), A.IntegerType)
            other = self._emit(op, make_const(block_t, math.nan if nan else 0))
        new = LoadOp(ptrs, mask, other, *cache_evict(op), bool(op.isVolatile.value.data))
        new.attributes.update(op.attributes)
        new.location = op.location
        Rewriter.replace_op(op, new)

    def _expand(self, values) -> list[SSAValue]:
        out: list[SSAValue] = []
        for v in values:
            out.extend(self.info[v].fields() if v in self.info else [v])
        return out

    def for_op(self, op: scf.ForOp) -> None:
        old_body = op.body.block
        inits = self._expand(op.iter_args)
        arg_types = [old_body.args[0].type] + [v.type for v in inits]
        new_body = Block(arg_types=arg_types)
        new = scf.ForOp(op.lb, op.ub, op.step, inits, Region(new_body))
        new.location = op.location
        new.attributes.update(op.attributes)  # the loop's hints
        Rewriter.insert_op(new, InsertPoint.before(op))
        old_body.args[0].replace_all_uses_with(new_body.args[0])
        self._remap(list(old_body.args[1:]), list(new_body.args[1:]))
        self._remap(list(op.results), list(new.results))
        for inner in list(old_body.ops):
            inner.detach()
            new_body.add_op(inner)
        self.dead.append(op)
        self.block(new_body)

    def if_op(self, op: scf.IfOp) -> None:
        types = []
        for r in op.results:
            types.extend(_field_types(r) if _is_block_ptr(r) else [r.type])
        new = scf.IfOp(op.cond, types, op.true_region.clone(), op.false_region.clone())
        new.location = op.location
        Rewriter.insert_op(new, InsertPoint.before(op))
        # The copies use the same outer values, so the table already covers them; lowering
        # them expands their yields.  The old op goes once every user has been rewritten.
        for region in new.regions:
            for b in region.blocks:
                self.block(b)
        self._remap(list(op.results), list(new.results))
        self.dead.append(op)

    def _remap(self, old_vals: list[SSAValue], new_vals: list[SSAValue]) -> None:
        """Old values (one per old slot) become the new ones (a block pointer takes its fields)."""
        i = 0
        for v in old_vals:
            if _is_block_ptr(v):
                n = 1 + 3 * _rank(v)
                self.info[v] = BlockPtr.from_fields(new_vals[i:i + n], _rank(v))
                i += n
            else:
                v.replace_all_uses_with(new_vals[i])
                i += 1

    def finish(self) -> None:
        for op in reversed(self.dead):
            Rewriter.erase_op(op, safe_erase=False)


def drop_invariant_iter_args(op: scf.ForOp) -> None:
    """Remove iter_args that the body yields back unchanged; their uses take the init value."""
    body = op.body.block
    yielded = list(body.last_op.operands)
    keep = [i for i, (a, y) in enumerate(zip(body.args[1:], yielded)) if y is not a]
    if len(keep) == len(yielded):
        return
    for i, (a, init, res) in enumerate(zip(body.args[1:], op.iter_args, op.results)):
        if i not in keep:
            a.replace_all_uses_with(init)
            res.replace_all_uses_with(init)
    new_body = Block(arg_types=[body.args[0].type] + [body.args[1 + i].type for i in keep])
    new = scf.ForOp(op.lb, op.ub, op.step, [op.iter_args[i] for i in keep], Region(new_body))
    new.location = op.location
    new.attributes.update(op.attributes)  # the loop's hints (num_stages, warp_specialize, licm, ...)
    Rewriter.insert_op(new, InsertPoint.before(op))
    body.args[0].replace_all_uses_with(new_body.args[0])
    for j, i in enumerate(keep):
        body.args[1 + i].replace_all_uses_with(new_body.args[1 + j])
        op.results[i].replace_all_uses_with(new.results[j])
    y = body.last_op
    for inner in list(body.ops):
        inner.detach()
        new_body.add_op(inner)
    # the yield's operands, not ``yielded``: an iter arg yielded in another's place was renamed above
    Rewriter.replace_op(y, scf.YieldOp(*[y.operands[i] for i in keep]))
    Rewriter.erase_op(op, safe_erase=False)


class RewriteTensorPointer:
    name = "rewrite_tensor_pointer"

    def run(self, module: ModuleOp) -> None:
        lowering = _Lowering()
        lowering.block(module.body.block)
        lowering.finish()
        loops = [op for op in module.walk() if isinstance(op, scf.ForOp)]
        for loop in reversed(loops):  # inner loops first: their results feed outer yields
            drop_invariant_iter_args(loop)
