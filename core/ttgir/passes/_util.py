"""Small IR helpers shared by the TTGIR passes."""
from __future__ import annotations

import functools
import math

from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, NoneAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ...ttir.types import PointerType
from ...ttir.ops import FuncOp
from ..encodings import BlockedEncodingAttr, DistributedEncoding, DotOperandEncodingAttr, SliceEncodingAttr
from ..layouts import linear_layout
from ..ops import ConvertLayoutOp


def encoding(t: Attribute) -> Attribute | None:
    if isinstance(t, TensorType) and not isinstance(t.encoding, NoneAttr):
        return t.encoding
    return None


def with_encoding(t: Attribute, enc: Attribute) -> Attribute:
    """``t`` (a tensor, or a block pointer to one) with layout ``enc``."""
    if isinstance(t, TensorType):
        return TensorType(t.element_type, t.get_shape(), enc)
    if isinstance(t, PointerType) and t.is_block_pointer:
        return PointerType(with_encoding(t.pointee_type, enc), t.address_space.data)
    return t


def set_type(value: SSAValue, t: Attribute) -> None:
    """Retype a value in place (uses keep pointing at it).  Constants keep their value attribute
    in step, since its type must equal the result type."""
    value._type = t
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, DenseIntOrFPElementsAttr):
        op.properties["value"] = DenseIntOrFPElementsAttr(t, op.value.data)


@functools.lru_cache(maxsize=4096)
def _registers(enc: Attribute, shape: tuple[int, ...]) -> tuple[int, int] | None:
    """(registers per thread, threads) of ``enc`` over ``shape``; None where it has no linear form."""
    try:
        ll = linear_layout(enc, shape)
    except (NotImplementedError, ValueError, TypeError):
        return None
    return ll.num_registers, ll.threads_per_warp * ll.num_warps


# A value may take a layout that gives each thread more registers than it has now while it stays
# within ``REPLICATION_LIMIT`` times its share of the tensor (elements / threads, at least 1), or
# within ``MODEST_REGISTERS``.  Both are replication that pays for the conversion it saves: a
# column reduction's result in its tile's slice layout (1 -> 4 registers), the attention mask's
# ``1 x 64`` row of offsets in a wgmma accumulator's layout (1 -> 16).
REPLICATION_LIMIT = 4
MODEST_REGISTERS = 32


def affordable(v: SSAValue, enc: Attribute) -> bool:
    """Whether ``v`` may take layout ``enc``: each thread then holds no more registers than now, or
    a number the limits above allow.  A layout chosen for a small tensor (a
    ``1x1`` load's lanes run along its size-1 dimension) carried onto a large one replicates the
    large one into every thread: a ``1x2048`` loop body in the layout of a ``1x1`` operand holds
    2,048 registers per thread instead of 4.  Triton does not take a tensor smaller than the
    thread count as an anchor for the same reason."""
    old = encoding(v.type)
    if old is None or old == enc or not isinstance(enc, DistributedEncoding) \
            or not isinstance(old, DistributedEncoding):
        return True
    shape = tuple(v.type.get_shape())
    new, now = _registers(enc, shape), _registers(old, shape)
    if new is None or now is None or new[0] <= now[0]:
        return True
    share = max(1, math.prod(shape) // new[1])
    return new[0] <= max(REPLICATION_LIMIT * max(now[0], share), MODEST_REGISTERS)


def convert_before(op: Operation, value: SSAValue, t: Attribute) -> SSAValue:
    """A ``ttg.convert_layout`` of ``value`` to type ``t`` inserted just before ``op``."""
    cvt = ConvertLayoutOp(value, t)
    op.parent_block().insert_op_before(cvt, op)
    return cvt.result


def convert_operand(op: Operation, index: int, t: Attribute) -> bool:
    """Make operand ``index`` of ``op`` have type ``t``, converting it if needed."""
    v = op.operands[index]
    if v.type == t or not isinstance(t, TensorType):
        return False
    op.operands[index] = convert_before(op, v, t)
    return True


def permuted_blocked(enc: Attribute, perm: tuple[int, ...]) -> Attribute | None:
    """The blocked layout seen through ``tt.trans(order=perm)``: result dim ``i`` is source dim
    ``perm[i]``, so every per-dimension field is permuted and ``order`` renamed."""
    if not isinstance(enc, BlockedEncodingAttr):
        return None
    inv = {p: i for i, p in enumerate(perm)}
    return BlockedEncodingAttr([enc.size_per_thread[p] for p in perm], [enc.threads_per_warp[p] for p in perm],
                               [enc.warps_per_cta[p] for p in perm], [inv[o] for o in enc.order])


def joined_blocked(enc: Attribute) -> Attribute | None:
    """Layout of ``tt.join``'s result: the source layout with a new fastest dimension of size 2
    held entirely by each thread (so join and split move no data)."""
    if not isinstance(enc, BlockedEncodingAttr):
        return None
    r = enc.rank
    return BlockedEncodingAttr([*enc.size_per_thread, 2], [*enc.threads_per_warp, 1], [*enc.warps_per_cta, 1],
                               [r, *enc.order])


def split_source_blocked(enc: Attribute) -> Attribute | None:
    """What ``tt.split``'s source must look like for a result layout ``enc`` (inverse of join)."""
    return joined_blocked(enc)


def func_ops(module) -> list[Operation]:
    return [op for op in module.body.block.ops if isinstance(op, FuncOp)]


def defined_in(v: SSAValue, op: Operation) -> bool:
    """Whether ``v`` is made inside ``op`` (by an op nested in it, or as a block argument of one of
    its regions, e.g. a loop's induction variable and iter args)."""
    owner = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op()
    return owner is not None and op.is_ancestor(owner)


def iter_arg_index(loop, v: SSAValue) -> int | None:
    """``k`` when ``v`` is ``loop``'s ``k``-th loop-carried block argument (its ``scf.for`` body's
    argument ``k + 1``), else None."""
    args = loop.body.block.args
    for k, a in enumerate(args[1:]):
        if a is v:
            return k
    return None


def block_of(op: Operation) -> Block:
    return op.parent_block()


def broadcastable(enc: Attribute) -> bool:
    """Layouts that stay meaningful when a dimension shrinks to 1 and grows back (``tt.broadcast``'s
    operand and result share them): blocked and vendor register layouts, not slices or operands."""
    return isinstance(enc, DistributedEncoding) and not isinstance(enc, (SliceEncodingAttr, DotOperandEncodingAttr))


def with_extra_iter_args(loop, inits: list[SSAValue]):
    """A copy of ``loop`` (an ``scf.for``, left in place for the caller to erase) that carries
    ``inits`` after its own iter args: ``(new loop, its body)``.  The body's ops move over and read
    the new block arguments; the new ones are the body's last ``len(inits)`` arguments, and the
    body's yield still yields only the old values (the caller extends it)."""
    from xdsl.dialects import scf
    from xdsl.ir import Region
    from xdsl.rewriter import InsertPoint, Rewriter
    old_body = loop.body.block
    new_body = Block(arg_types=[a.type for a in old_body.args] + [v.type for v in inits])
    new = scf.ForOp(loop.lb, loop.ub, loop.step, list(loop.iter_args) + list(inits), Region(new_body))
    new.attributes.update(loop.attributes)
    new.location = loop.location
    Rewriter.insert_op(new, InsertPoint.before(loop))
    for a, b in zip(old_body.args, new_body.args):
        a.replace_all_uses_with(b)
    for op in list(old_body.ops):
        op.detach()
        new_body.add_op(op)
    return new, new_body
