"""``fuse-nested-loops``: flatten a two-level loop nest whose outer loop is marked ``tt.flatten``
(``tl.range(..., flatten=True)``) into one ``scf.for``.

A nest ``for i in range(lbi, ubi, si): prologue(i); for j in range(lbj, ubj, sj): body(i, j);
epilogue(i)`` becomes one loop over ``T``, a position in the inner iteration space, of
``len_i * max(1, len_j)`` trips (``len_j`` summed over ``i`` when the inner bounds depend on
``i``)::

    for _ in range(total):                          # iter_args: T, i, the outer loop's values,
        if T == 0:  i += si; prologue(i); j = lbj   #   j, the inner loop's values, the prologue's
        if T < len_j:  body(i, j); j += sj          #   outputs (and len_j when it depends on i)
        if T == max(1, len_j) - 1:  epilogue(i)
        T = 0 if T == max(1, len_j) - 1 else T + 1

Every outer iteration thus takes ``max(1, len_j)`` fused iterations: the prologue runs on the
first, the epilogue on the last (the same one when the inner loop has no trip), and the values
the prologue defines and later code reads are carried from one iteration to the next (they start
as zeros that are never read).  The body is not guarded when the inner loop is known to run at
least once (an ``llvm.intr.assume`` of ``ubj > lbj``).

The nest is fused when the outer loop holds exactly one loop directly in its body and that loop
holds none; when the inner bounds are defined outside the outer loop or computed in its body
from its induction variable by pure scalar ops (cloned into a loop that sums the inner trip
counts); and when the carried values have types a zero can be made of (integers, floats,
pointers, and tensors of them).  Otherwise the nest is left as it is.  The fused loop takes the
larger ``tt.num_stages`` of the two; ``tt.flatten`` is dropped.

It runs on TTIR, before the conversion to TTGIR on the GPU backends and before the interpreter
loads a kernel, so that every backend runs the fused loop, except a nest whose inner loop
computes a dot on a backend whose pipeliner cannot pipeline the fused form (``keep_dot_nests``,
the GPU backends' pass list unless their options declare ``pipelines_fused_nests``).  Loops
step upward (the frontend normalises a negative ``range`` step), so a trip count is
``ceildiv(ub - lb, step)`` and a negative one means no trip.
"""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, StringAttr, TensorType, UnitAttr, i32, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.traits import is_side_effect_free

from .. import arith
from ..ops import IntToPtrOp, SplatOp
from ..types import PointerType, element_type
from ._fold import make_const

FLATTEN_ATTR = "tt.flatten"
STAGES_ATTR = "tt.num_stages"
_PROPAGATED = ("tt.disallow_acc_multi_buffer", "tt.warp_specialize")


def _direct_loops(block: Block) -> list[scf.ForOp]:
    return [op for op in block.ops if isinstance(op, scf.ForOp)]


def _inside(op: Operation | None, block: Block) -> bool:
    """Whether ``op`` is in ``block`` or nested in one of its ops."""
    while op is not None:
        if op.parent_block() is block:
            return True
        op = op.parent_op()
    return False


def _defined_in(v: SSAValue, body: Block) -> bool:
    owner = v.owner
    if isinstance(owner, Block):
        return owner is body or _inside(owner.parent_op(), body)
    return _inside(owner, body)


def _zeroable(t: Attribute) -> bool:
    e = element_type(t)
    if isinstance(e, PointerType):
        return not isinstance(e.pointee_type, TensorType)
    return isinstance(e, IntegerType) or e.name in ("f16", "bf16", "f32", "f64")


def _is_scalar(t: Attribute) -> bool:
    return not isinstance(t, TensorType) and _zeroable(t)


class _Builder:
    """Appends ops to a block (or inserts them before an anchor op), with the location of ``loc``."""

    def __init__(self, loc: Operation, block: Block | None = None, before: Operation | None = None):
        self.loc, self.block, self.before = loc, block, before

    def add(self, op: Operation) -> SSAValue:
        op.location = self.loc.location
        if self.before is not None:
            self.before.parent_block().insert_op_before(op, self.before)
        else:
            self.block.add_op(op)
        return op.results[0] if op.results else None

    def const(self, t: Attribute, value: int) -> SSAValue:
        return self.add(make_const(t, value))

    def cast(self, v: SSAValue, t: Attribute) -> SSAValue:
        if v.type == t:
            return v
        if v.type.width.data > t.width.data:
            return self.add(arith.TruncIOp(v, t))
        return self.add(arith.ExtSIOp(v, t))

    def trips(self, lb: SSAValue, ub: SSAValue, step: SSAValue, t: Attribute) -> SSAValue:
        """``ceildiv(ub - lb, step)`` in ``t`` (negative when the range is empty)."""
        lb, ub, step = (self.cast(v, t) for v in (lb, ub, step))
        diff = self.add(arith.SubIOp(ub, lb))
        num = self.add(arith.AddIOp(diff, self.add(arith.SubIOp(step, self.const(t, 1)))))
        return self.add(arith.DivSIOp(num, step))

    def zero(self, t: Attribute) -> SSAValue:
        e = element_type(t)
        if isinstance(e, PointerType):
            p = self.add(IntToPtrOp(self.const(i64, 0), e))
            return self.add(SplatOp(p, t)) if isinstance(t, TensorType) else p
        return self.const(t, 0)


def _bound_slice(outer: scf.ForOp, values) -> list[Operation] | None:
    """The ops of ``outer``'s body that compute ``values`` from its induction variable and from
    values defined outside it, in body order; None when one is not a pure scalar op (or reads the
    outer loop's carried values)."""
    body = outer.body.block
    iv = body.args[0]
    found: set[Operation] = set()
    stack = list(values)
    while stack:
        v = stack.pop()
        if v is iv:
            continue
        owner = v.owner
        if isinstance(owner, Block):
            if owner is body or _inside(owner.parent_op(), body):
                return None
            continue
        if not _inside(owner, body):
            continue
        if owner.parent_block() is not body:
            return None
        if owner in found:
            continue
        if owner.regions or not is_side_effect_free(owner) or \
                not all(_is_scalar(x.type) for x in (*owner.operands, *owner.results)):
            return None
        found.add(owner)
        stack.extend(owner.operands)
    return [op for op in body.ops if op in found]


def _must_execute(inner: scf.ForOp) -> bool:
    """Whether an ``llvm.intr.assume`` states ``ub > lb`` (or ``lb < ub``) for ``inner``."""
    for use in inner.ub.uses:
        cmp = use.operation
        if not isinstance(cmp, arith.CmpIOp):
            continue
        pred = cmp.predicate_name
        if not ((pred == "sgt" and cmp.lhs is inner.ub and cmp.rhs is inner.lb)
                or (pred == "slt" and cmp.lhs is inner.lb and cmp.rhs is inner.ub)):
            continue
        if any(u.operation.name == "llvm.intr.assume" for u in cmp.result.uses):
            return True
    return False


def _replace_uses(v: SSAValue, new: SSAValue, keep=lambda op: False) -> None:
    for use in list(v.uses):
        if not keep(use.operation):
            use.operation.operands[use.index] = new


def fuse(outer: scf.ForOp) -> bool:
    """Fuse ``outer`` with the one loop in its body; False (nothing changed) when it does not
    qualify."""
    body = outer.body.block
    loops = _direct_loops(body)
    if len(loops) != 1 or _direct_loops(loops[0].body.block):
        return False
    inner = loops[0]
    ops = list(body.ops)
    k = ops.index(inner)
    prologue, epilogue = ops[:k], ops[k + 1:-1]
    outer_yield = ops[-1]
    outer_iv, outer_args = body.args[0], list(body.args[1:])
    ibody = inner.body.block
    inner_iv, inner_args = ibody.args[0], list(ibody.args[1:])

    bounds = (inner.lb, inner.ub, inner.step)
    variant = any(_defined_in(v, body) for v in bounds)
    sliced = _bound_slice(outer, bounds) if variant else []
    if sliced is None:
        return False
    in_prologue = set(prologue)

    def top(op: Operation) -> Operation | None:
        while op is not None and op.parent_block() is not body:
            op = op.parent_op()
        return op

    # the prologue's values read after it (the inner loop's step is read by the body)
    outs = []
    for op in prologue:
        for r in op.results:
            if r is inner.step or any(top(u.operation) not in in_prologue and u.operation is not inner for u in r.uses):
                outs.append(r)
    carried_types = [inner_iv.type, *(r.type for r in inner.results), *(r.type for r in outs)]
    if not all(_zeroable(t) for t in carried_types):
        return False

    t = max((outer_iv.type, inner_iv.type), key=lambda x: x.width.data)
    must_run = _must_execute(inner)

    # trip counts, before the nest
    pre = _Builder(outer, before=outer)
    len_i = pre.trips(outer.lb, outer.ub, outer.step, t)
    one = pre.const(t, 1)
    if not variant:
        len_j = pre.trips(inner.lb, inner.ub, inner.step, t)
        span = len_j if must_run else pre.add(arith.MaxSIOp(one, len_j))
        total = pre.add(arith.MulIOp(len_i, span))
    else:
        count = Block(arg_types=[outer_iv.type, t])
        cb = _Builder(outer, block=count)
        env = {outer_iv: count.args[0]}
        for op in sliced:
            cb.add(op.clone(value_mapper=env))
        n = cb.trips(*(env.get(v, v) for v in bounds), t)
        acc = cb.add(arith.AddIOp(count.args[1], cb.add(arith.MaxSIOp(cb.const(t, 1), n))))
        cb.add(scf.YieldOp(acc))
        counter = scf.ForOp(outer.lb, outer.ub, outer.step, [pre.const(t, 0)], Region(count))
        pre.add(counter)
        total = counter.results[0]
    zeros = [pre.zero(x) for x in carried_types]
    i_init = pre.add(arith.SubIOp(outer.lb, outer.step))
    zero_t = pre.const(t, 0)

    # iter_args: T, i, outer values, [len_j], j, inner values, prologue outputs
    n_outer, n_inner = len(outer_args), len(inner_args)
    inits = [zero_t, i_init, *outer.iter_args]
    if variant:
        inits.append(pre.const(t, 0))
    inits += zeros
    fbody = Block(arg_types=[t] + [v.type for v in inits])
    fa = list(fbody.args[1:])
    T, i_prev = fa[0], fa[1]
    f_outer = fa[2:2 + n_outer]
    pos = 2 + n_outer
    f_len = None
    if variant:
        f_len, pos = fa[pos], pos + 1
    f_j, f_inner, f_outs = fa[pos], fa[pos + 1:pos + 1 + n_inner], fa[pos + 1 + n_inner:]
    fb = _Builder(outer, block=fbody)

    for a, fa_ in zip(outer_args, f_outer):
        a.replace_all_uses_with(fa_)

    # if T == 0: i += step; prologue(i); j = lbj
    then = Block()
    tb = _Builder(outer, block=then)
    i_new = tb.add(arith.AddIOp(i_prev, outer.step))
    for op in prologue:
        op.detach()
        then.add_op(op)
    then_vals = [inner.lb, *outs, *inner.iter_args, i_new]
    else_vals = [f_j, *f_outs, *f_inner, i_prev]
    if variant:
        then_vals.append(tb.trips(inner.lb, inner.ub, inner.step, t))
        else_vals.append(f_len)
    tb.add(scf.YieldOp(*then_vals))
    otherwise = Block()
    otherwise.add_op(scf.YieldOp(*else_vals))
    first = fb.add(arith.CmpIOp(T, zero_t, "eq"))
    pro_if = scf.IfOp(first, [v.type for v in then_vals], Region(then), Region(otherwise))
    fb.add(pro_if)
    res = list(pro_if.results)
    j = res[0]
    p_outs = res[1:1 + len(outs)]
    cur_inner = res[1 + len(outs):1 + len(outs) + n_inner]
    i_cur = res[1 + len(outs) + n_inner]
    if variant:
        len_j = res[-1]
    _replace_uses(outer_iv, i_new, keep=lambda op: not _inside(op, then))
    _replace_uses(outer_iv, i_cur)
    for r, new in zip(outs, p_outs):
        _replace_uses(r, new, keep=lambda op: _inside(op, then))
    inner_iv.replace_all_uses_with(j)
    for a, new in zip(inner_args, cur_inner):
        a.replace_all_uses_with(new)

    # if T < len_j: body(i, j); j += stepj
    iyield = ibody.last_op
    body_ops = list(ibody.ops)[:-1]
    if must_run:
        for op in body_ops:
            op.detach()
            fbody.add_op(op)
        j_next = fb.add(arith.AddIOp(j, inner.step))
        inner_next = list(iyield.operands)
    else:
        bthen = Block()
        for op in body_ops:
            op.detach()
            bthen.add_op(op)
        bb = _Builder(outer, block=bthen)
        bb.add(scf.YieldOp(bb.add(arith.AddIOp(j, inner.step)), *iyield.operands))
        belse = Block()
        belse.add_op(scf.YieldOp(j, *cur_inner))
        runs = fb.add(arith.CmpIOp(T, len_j, "slt"))
        body_if = scf.IfOp(runs, [j.type, *(r.type for r in inner.results)], Region(bthen), Region(belse))
        fb.add(body_if)
        j_next, inner_next = body_if.results[0], list(body_if.results[1:])
    for r, new in zip(inner.results, inner_next):
        r.replace_all_uses_with(new)

    # if T == max(1, len_j) - 1: epilogue(i)
    span = len_j if must_run else fb.add(arith.MaxSIOp(one, len_j))
    last_t = fb.add(arith.SubIOp(span, one))
    last = fb.add(arith.CmpIOp(T, last_t, "eq"))
    ethen = Block()
    for op in epilogue:
        op.detach()
        ethen.add_op(op)
    ethen.add_op(scf.YieldOp(*outer_yield.operands))
    eelse = Block()
    eelse.add_op(scf.YieldOp(*f_outer))
    epi_if = scf.IfOp(last, [a.type for a in outer_args], Region(ethen), Region(eelse))
    fb.add(epi_if)
    t_next = fb.add(arith.SelectOp(last, zero_t, fb.add(arith.AddIOp(T, one))))
    tail = [t_next, i_cur, *epi_if.results]
    if variant:
        tail.append(len_j)
    fb.add(scf.YieldOp(*tail, j_next, *inner_next, *p_outs))

    fused = scf.ForOp(zero_t, total, one, inits, Region(fbody))
    stages = [a.value.data for a in (outer.attributes.get(STAGES_ATTR), inner.attributes.get(STAGES_ATTR))
              if isinstance(a, IntegerAttr)]
    if stages and max(stages) > 1:
        fused.attributes[STAGES_ATTR] = IntegerAttr(max(stages), i32)
    for name in _PROPAGATED:
        if name in outer.attributes or name in inner.attributes:
            fused.attributes[name] = UnitAttr()
    pre.add(fused)
    for r, new in zip(outer.results, fused.results[2:2 + n_outer]):
        r.replace_all_uses_with(new)
    outer.detach()
    outer.erase(safe_erase=False)
    return True


#: on a marked loop left unfused: why
FLATTEN_REASON = "tritium.flatten_reason"


def _inner_dots(outer: scf.ForOp) -> bool:
    """Whether a loop in ``outer``'s body computes a ``tt.dot`` (or ``tt.dot_scaled``)."""
    return any(isinstance(op, scf.ForOp) and any(o.name in ("tt.dot", "tt.dot_scaled") for o in op.walk())
               for op in outer.body.block.ops)


class FuseNestedLoops:
    """``keep_dot_nests``: leave a nest whose inner loop computes a dot as it is, for a backend
    whose software pipeliner pipelines that inner loop (its tile loads ahead of its dots) but not
    the fused loop, where those loads sit under the fused body's guard: unfused, the persistent
    matmul of Triton's tutorial ran at 737 TFLOP/s on an H200, fused and unpipelined at 97.  The
    loop keeps the reason in ``tritium.flatten_reason``."""

    name = "fuse-nested-loops"

    def __init__(self, keep_dot_nests: bool = False):
        self.keep_dot_nests = keep_dot_nests

    def run(self, module: ModuleOp) -> None:
        loops = [op for op in module.walk() if isinstance(op, scf.ForOp) and FLATTEN_ATTR in op.attributes]
        # innermost first: fusing a loop erases only it and the loop in its body, both seen already
        for loop in reversed(loops):
            if self.keep_dot_nests and _inner_dots(loop):
                del loop.attributes[FLATTEN_ATTR]
                loop.attributes[FLATTEN_REASON] = StringAttr(
                    "not fused: this backend pipelines the inner loop's dot operands, not a fused nest's")
                continue
            if not fuse(loop):
                del loop.attributes[FLATTEN_ATTR]
