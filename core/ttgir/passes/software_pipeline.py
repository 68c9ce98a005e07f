"""``pipeline``: software-pipeline the global loads that feed shared-memory buffers in ``scf.for``.

A loop iteration that does ``%t = tt.load %ptrs, %mask`` then ``%s = ttg.local_alloc %t`` (what
accelerate-matmul makes of a dot operand) waits for memory every iteration.  With ``S`` stages
(``num_stages``, or ``tl.range(..., num_stages=S)`` on the loop) the pass instead keeps ``S - 1``
iterations' copies in flight:

* before the loop, one ``S``-slot buffer per load (``ttg.local_alloc`` of ``S x`` the tile) and a
  prologue issuing iterations ``0 .. S-2`` as ``ttg.async_copy_global_to_local`` into slots
  ``0 .. S-2``, each predicated on its iteration existing, one ``ttg.async_commit_group`` per copy
  (Triton's grouping: ``L`` loads make ``L`` groups per iteration);
* in the loop, ``ttg.async_wait {num = (S-2)*L}`` (the oldest iteration has landed), then, before the first
  consumer, iteration ``i + S - 1`` is issued into slot ``(i + S - 1) % S`` — the slot read one
  iteration earlier — and the consumers read slot ``i % S`` (``ttg.memdesc_index``); a spare slot
  for consumers that read asynchronously is described at :class:`Pipeline`;
* after the loop, ``ttg.async_wait {num = 0}``.

The address computation of iteration ``j`` is the loop body's *address slice* (the pure ops the
pointers and mask depend on) re-evaluated with the induction variable ``lb + j*step`` and the
loop-carried values that slice reads (``ptrs += BLOCK_K * stride``) advanced ``j`` times; the loop
carries those advanced values as extra iteration arguments.  Masked-off and out-of-range lanes are
zero-filled by the copy, so a load is pipelined only when its ``other`` is absent or zero.  A tile
transposed between its load and its buffer (``local_alloc(tt.trans(tt.load))``: the ``B`` of
``tl.dot(a, b.T)``) is first loaded through transposed addresses (:func:`_load_transposed`; this
schedule only).  Loops whose loads do not fit this shape are left as they are.

A backend whose copy engine moves whole descriptor tiles (``tt.descriptor_load``) passes
``descriptor_copy(load, buffer_type, transposed) -> bool``: a ``local_alloc`` of such a load (or of
its ``tt.trans``) that the backend accepts is pipelined too, as
``ttg.async_copy_descriptor_to_local`` into the slot, completing on barrier ``slot`` of a per-load
``nslots x i64`` buffer (``ttg.init_barriers`` before the prologue, ``ttg.inval_barriers`` after the
loop); the loop carries the parity of the phase those barriers complete next and starts with
``ttg.wait_barrier`` instead of counting groups.

A target without asynchronous copies asks for the ``registers`` schedule instead (Triton's stream
pipeliner; :class:`Pipeline`): the same slices, but the copy is a ``tt.load`` into registers issued
ahead and a ``ttg.local_store`` after the consumers.
"""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, IntegerType, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import Pure

from ...ttir import arith
from ...ttir.descriptor_ops import DescriptorLoadOp
from ...ttir.memory_ops import LoadOp, cache_evict
from ..ops import (AsyncCommitGroupOp, AsyncCopyDescriptorToLocalOp, AsyncCopyGlobalToLocalOp, AsyncWaitOp,
                   ConvertLayoutOp, InitBarriersOp, InvalBarriersOp, LocalAllocOp, LocalLoadOp, LocalStoreOp,
                   MemDescIndexOp, MemDescTransOp, WaitBarrierOp)
from ..types import MemDescType
from ..scratch import scratch_size
from .allocate_shared_memory import SCRATCH_ACROSS_LOOPS, outermost_loop
from ._util import with_extra_iter_args
from ...ttir.ops import TransOp, SplatOp
from ...ttir.passes.rewrite_tensor_pointer import drop_invariant_iter_args
from ..encodings import SwizzledSharedEncodingAttr

STAGES_ATTR = "tt.num_stages"
#: on a slot buffer this pass made: the stages of its loop (``slots_ahead`` reads it)
SLOT_STAGES_ATTR = "tritium.pipeline_stages"


_DIVISIONS = ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.ceildivsi", "arith.ceildivui",
              "arith.floordivsi")


def _pure(op: Operation) -> bool:
    if op.name in _DIVISIONS:
        # an integer division is safe to evaluate for an iteration that may not run only where
        # its divisor is a constant other than zero (``k // BLOCK_K``)
        return _constant_nonzero(op.operands[1])
    return op.has_trait(Pure) and not op.regions


def _constant_nonzero(v: SSAValue) -> bool:
    op = v.owner
    if isinstance(op, SplatOp):
        return _constant_nonzero(op.operands[0])
    values = _constant_values(op)
    return values is not None and all(x != 0 for x in values)


def _constant_values(op) -> list | None:
    """The values of an ``arith.constant`` (every element of a dense one), or None."""
    if not isinstance(op, arith.ConstantOp):
        return None
    val = op.value
    if isinstance(val, DenseIntOrFPElementsAttr):
        return list(val.get_values())
    return [val.value.data] if getattr(val, "value", None) is not None else None


def is_zero(v: SSAValue | None) -> bool:
    if v is None:
        return True
    op = v.owner
    if isinstance(op, Operation) and op.name in ("tt.splat", "arith.truncf", "arith.extf", "arith.sitofp",
                                                 "arith.bitcast", "ttg.convert_layout", "tt.fp_to_fp", "tt.trans"):
        return is_zero(op.operands[0])
    values = _constant_values(op)
    return values is not None and all(x == 0 for x in values)


class _Loop:
    """What the pass needs to know of one candidate loop."""

    def __init__(self, loop: scf.ForOp, stages: int, registers: bool = False, operand_buffer=None,
                 load_filter=None, descriptor_copy=None, stream_buffer=None, shared_budget: int | None = None):
        self.loop, self.stages = loop, stages
        self.registers, self.operand_buffer, self.load_filter = registers, operand_buffer, load_filter
        self.descriptor_copy, self.stream_buffer, self.shared_budget = descriptor_copy, stream_buffer, shared_budget
        self.transposes: dict[Operation, Operation] = {}  # descriptor load -> the tt.trans between it and its buffer
        self.body = loop.body.block
        self.iv = self.body.args[0]
        self.yield_op = self.body.last_op
        # (load, consumer, buffer type): the consumer is the ttg.local_alloc of the loaded tile, or
        # (with ``operand_buffer``) the ttg.convert_layout that takes it to a dot operand
        self.loads: list[tuple[LoadOp, Operation, MemDescType]] = []
        self.slice: list[Operation] = []        # address slice, in body order
        self.carried: list[int] = []            # iter-arg indices the slice reads
        self.update: list[Operation] = []       # ops computing those iter args' next values

    def in_body(self, v: SSAValue) -> bool:
        owner = v.owner
        return (isinstance(owner, Operation) and owner.parent_block() is self.body) or \
            (isinstance(owner, Block) and owner is self.body)

    def backward(self, roots: list[SSAValue]) -> tuple[list[Operation], set[int]] | None:
        """Pure body ops ``roots`` depend on, and the iter args they read (None: not sliceable)."""
        ops: set[Operation] = set()
        args: set[int] = set()
        work = list(roots)
        while work:
            v = work.pop()
            if not self.in_body(v):
                continue
            if isinstance(v.owner, Block):
                if v is not self.iv:
                    args.add(v.index - 1)
                continue
            op = v.owner
            if op in ops:
                continue
            if not _pure(op):
                return None
            ops.add(op)
            work.extend(op.operands)
        order = [op for op in self.body.ops if op in ops]
        return order, args

    def _descriptor_load(self, alloc: Operation) -> bool:
        """``local_alloc(tt.descriptor_load)`` or ``local_alloc(tt.trans(tt.descriptor_load))`` whose
        copy into a slot of the alloc's buffer type the backend takes (``descriptor_copy``): noted
        in ``self.loads``."""
        if self.descriptor_copy is None or self.registers or not isinstance(alloc, LocalAllocOp) or alloc.src is None:
            return False
        src = alloc.src.owner
        trans = None
        if isinstance(src, TransOp) and src.parent_block() is self.body and len(list(src.result.uses)) == 1:
            trans, src = src, src.src.owner
        if not isinstance(src, DescriptorLoadOp) or src.parent_block() is not self.body \
                or len(list(src.result.uses)) != 1:
            return False
        buf_t = alloc.result.type
        if not self.descriptor_copy(src, buf_t, trans is not None):
            return False
        if trans is not None:
            self.transposes[src] = trans
        self.loads.append((src, alloc, buf_t))
        return True

    def analyse(self) -> str | None:
        """Fill in the loads and slices; a reason string when the loop cannot be pipelined."""
        for op in self.body.ops:
            if self._descriptor_load(op):
                continue
            if isinstance(op, LocalAllocOp) and op.src is not None and isinstance(op.src.owner, LoadOp):
                buf_t = op.result.type
            elif self.operand_buffer is not None and isinstance(op, ConvertLayoutOp) \
                    and isinstance(op.src.owner, LoadOp):
                enc = self.operand_buffer(op)
                if enc is None:
                    continue
                t = op.src.type
                buf_t = MemDescType(t.get_shape(), t.element_type, enc, mutable=True)
            else:
                continue
            load = op.src.owner
            if load.parent_block() is not self.body or len(list(op.src.uses)) != 1:
                continue
            # an asynchronous copy zero-fills masked-off lanes; a load into registers keeps ``other``
            if not isinstance(load.ptr.type, TensorType) or not (self.registers or is_zero(load.other)):
                continue
            if self.load_filter is not None and not self.load_filter(load):
                continue
            self.loads.append((load, op, buf_t))
        staged = [entry for entry in self.loads if isinstance(entry[1], ConvertLayoutOp)]
        if staged and self.shared_budget is not None \
                and self.stages * sum(t.size_in_bytes() for _, _, t in self.loads) > self.shared_budget:
            # operands the backend would stage (they had no buffer) stay as they are where the
            # slots would not fit; buffers the tile already had are the kernel's own choice
            self.loads = [entry for entry in self.loads if entry not in staged]
        if not self.loads:
            return "no load feeds a shared-memory buffer"

        def operands(ld):
            if isinstance(ld, DescriptorLoadOp):
                return (ld.desc, *ld.indices)
            return (ld.ptr, ld.mask, ld.other) if self.registers else (ld.ptr, ld.mask)
        roots = [v for load, _, _ in self.loads for v in operands(load) if v is not None]
        got = self.backward(roots)
        if got is None:
            return "the load addresses depend on memory or region ops"
        self.slice, carried = got
        update_roots = [self.yield_op.operands[i] for i in sorted(carried)]
        got = self.backward(update_roots)
        if got is None:
            return "a carried address is updated through memory or region ops"
        self.update, more = got
        if not more <= carried:
            return "a carried address depends on other loop-carried values"
        self.carried = sorted(carried)
        if self.stream_buffer is not None and not self.registers:
            self._add_stream_loads(roots)
        return None

    def _add_stream_loads(self, roots: list[SSAValue]) -> None:
        """Once the loop is pipelined for its buffers, its other loads (into registers: a row's
        statistics, a bias) whose copies the backend takes (``stream_buffer(load)``: the shared
        encoding of their slots) ride along: copied ahead into slots of their own and read back
        with ``ttg.local_load`` where they were loaded, in the layout their users want.  Each is
        taken only where its addresses slice as the others' do and its slots fit the budget."""
        taken = {load for load, _, _ in self.loads}
        nbytes = sum(t.size_in_bytes() for _, _, t in self.loads)
        for op in list(self.body.ops):
            if not isinstance(op, LoadOp) or op in taken or not isinstance(op.ptr.type, TensorType) \
                    or not is_zero(op.other) or op.properties["isVolatile"].value.data:
                continue
            if self.load_filter is not None and not self.load_filter(op):
                continue
            enc = self.stream_buffer(op)
            if enc is None:
                continue
            t = op.result.type
            buf_t = MemDescType(t.get_shape(), t.element_type, enc, mutable=True)
            if self.shared_budget is not None and self.stages * (nbytes + buf_t.size_in_bytes()) > self.shared_budget:
                continue
            more_roots = roots + [v for v in (op.ptr, op.mask) if v is not None]
            got = self.backward(more_roots)
            if got is None:
                continue
            sliced, carried = got
            got = self.backward([self.yield_op.operands[i] for i in sorted(carried)])
            if got is None or not got[1] <= carried:
                continue
            self.slice, self.update, self.carried, roots = sliced, got[0], sorted(carried), more_roots
            self.loads.append((op, op, buf_t))
            nbytes += buf_t.size_in_bytes()


def _load_transposed(loop: scf.ForOp, stages: int, shared_budget: int | None, scratch_rules=None) -> None:
    """``local_alloc(trans(load(p, m, o)))`` -> ``local_alloc(load(trans(p), trans(m), trans(o)))``.

    A dot of a K-contiguous ``B`` (``tl.dot(a, b.T)``) writes the transposed tile to shared memory;
    loading the transposed addresses instead gives the same tensor, and its load then feeds the
    buffer directly, which is what the pipeline copies asynchronously (the copy reads the same
    contiguous rows, now along the tile's first dimension).

    A load whose other use is a ``local_alloc`` of the tile itself (attention's backward reads
    ``do`` as ``B`` of one dot and its transpose as ``B`` of another): where that buffer holds the
    tile in the same bytes as the transposed one would, the transposed buffer becomes a
    ``ttg.memdesc_trans`` view of it (one buffer, one copy).  Otherwise the transposed buffer gets
    a load of its own (the tile copied twice, the second from L2, into two pipelined buffers), only
    where ``stages + 1`` slots of every buffer the loop's loads fill, the extra ones included, and
    the function's other buffers stay within ``shared_budget``."""
    body = loop.body.block
    fed = [op for op in body.ops if isinstance(op, LocalAllocOp) and op.src is not None
           and isinstance(op.src.owner, (LoadOp, TransOp))]
    slot_bytes = sum(op.result.type.size_in_bytes() for op in fed)
    outside = _other_buffers_bytes(loop, scratch_rules)
    for alloc in [op for op in body.ops if isinstance(op, LocalAllocOp)]:
        trans = alloc.src.owner if alloc.src is not None else None
        if not isinstance(trans, TransOp) or trans.parent_block() is not body or len(list(trans.result.uses)) != 1:
            continue
        load = trans.src.owner
        if not isinstance(load, LoadOp) or load.parent_block() is not body \
                or not isinstance(load.ptr.type, TensorType) or not is_zero(load.other):
            continue
        others = [u.operation for u in load.result.uses if u.operation is not trans]
        view = _transposed_view(alloc, others)
        if view is not None:  # one buffer, read through a transposed view by the second use
            if body.get_operation_index(view) > body.get_operation_index(alloc):
                view.detach()  # the view reads it: the buffer goes right after the load
                Rewriter.insert_op(view, InsertPoint.after(load))
            at = InsertPoint.before(alloc)
            op = MemDescTransOp(view.result, alloc.result.type)
            Rewriter.insert_op(op, at)
            alloc.result.replace_all_uses_with(op.result)
            Rewriter.erase_op(alloc)
            Rewriter.erase_op(trans)
            continue
        shared = bool(others)
        if shared and not (all(isinstance(o, LocalAllocOp) and o.parent_block() is body for o in others)
                           and shared_budget is not None
                           and (stages + 1) * slot_bytes + outside <= shared_budget):
            continue
        out_t = trans.result.type
        at = InsertPoint.before(load)

        def transposed(v: SSAValue) -> SSAValue:
            t = TensorType(v.type.element_type, out_t.get_shape(), out_t.encoding)
            op = TransOp(v, t, order=trans.order)
            Rewriter.insert_op(op, at)
            return op.result

        mask = transposed(load.mask) if load.mask is not None else None
        other = transposed(load.other) if load.other is not None else None
        new = LoadOp(transposed(load.ptr), mask, other, *cache_evict(load), is_volatile=load.isVolatile.value.data)
        new.location = load.location
        Rewriter.insert_op(new, at)
        trans.result.replace_all_uses_with(new.result)
        Rewriter.erase_op(trans)
        if not shared:
            Rewriter.erase_op(load)


def _transposed_view(alloc: LocalAllocOp, others: list[Operation]) -> LocalAllocOp | None:
    """Among ``others`` (the other uses of the tile ``alloc`` holds transposed), a ``local_alloc``
    of the tile whose buffer holds it in the same bytes, so that ``alloc`` can be a
    ``ttg.memdesc_trans`` view of it: element ``(i, j)`` of the tile at the offset of ``(j, i)`` in
    ``alloc``'s layout."""
    t = alloc.result.type
    enc = getattr(t, "encoding", None)
    if len(t.shape) != 2 or not hasattr(enc, "offset_bases"):
        return None
    want = [list(r) for r in reversed(enc.offset_bases(t.shape))]
    body = alloc.parent_block()
    for o in others:
        ot = o.results[0].type if isinstance(o, LocalAllocOp) else None
        if ot is None or o.parent_block() is not body or ot.element_type != t.element_type \
                or not hasattr(ot.encoding, "offset_bases") or ot.shape != tuple(reversed(t.shape)):
            continue
        if [list(r) for r in ot.encoding.offset_bases(ot.shape)] == want:
            return o
    return None


def _clone(ops: list[Operation], env: dict[SSAValue, SSAValue], at: InsertPoint) -> None:
    """Clone ``ops`` at ``at`` with operands renamed by ``env`` (updated with the clones' results)."""
    for op in ops:
        if all(r in env for r in op.results) and op.results:
            continue
        new = op.clone(value_mapper=env)
        Rewriter.insert_op(new, at)
        for old, nw in zip(op.results, new.results):
            env[old] = nw


def _const(value: int, t, at: InsertPoint) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(value, t))
    Rewriter.insert_op(c, at)
    return c.result


def _binop(cls, a, b, at: InsertPoint) -> SSAValue:
    op = cls(a, b)
    Rewriter.insert_op(op, at)
    return op.result


class Pipeline:
    """``Pipeline(num_stages, shared_budget=None, spare_slot=None, late_refill=None, copy="async",
    operand_buffer=None, load_filter=None, descriptor_copy=None, stream_buffer=None, spare_refill=None)``.

    ``copy`` picks the schedule.  ``"async"``: asynchronous copies into ``num_stages`` slots (the
    module docstring).  ``"registers"``: Triton's stream pipeliner for targets without asynchronous
    copies.  Before the loop iterations ``0 .. S-2`` are loaded and stored into slots ``0 .. S-2`` of
    ``S - 1``-slot buffers (one slot, no ``ttg.memdesc_index``, for ``S = 2``); in the loop the
    loads of iteration ``i + S - 1`` go into registers first (predicated on that iteration
    existing), the consumers read slot ``i % (S - 1)``, and the tiles just loaded are stored into
    that same slot last (membar puts the barriers around that store), so no tile stays in registers
    from one iteration to the next; after the loop nothing is left in flight.

    ``operand_buffer(convert) -> shared encoding | None`` lets the backend pipeline a load that
    feeds a ``ttg.convert_layout`` to a dot operand directly (no buffer yet): the pass gives it a
    buffer of that encoding, read by ``ttg.local_load``.  ``load_filter(load) -> bool`` leaves the
    loads it refuses as they are.

    The refill goes before the body's first consumer of a slot, right after the barrier that the
    landed copies need, so it needs no barrier of its own: it overwrites the slot read in the
    previous iteration, whose (synchronous) readers have all passed that barrier.  A backend whose
    consumers may still be reading after their iteration (a warp-group dot left in flight) asks for
    a spare slot with ``spare_slot(loop) -> bool``; the loop then gets ``num_stages + 1`` slots when
    they fit in ``shared_budget`` bytes, and the slot refilled in iteration ``i`` was last read in
    iteration ``i - 2``.  Without a spare slot those consumers must be waited for (see
    ``slots_ahead``).  ``spare_refill(loop) -> bool`` may move a spare-slot loop's refill to right
    after the slots' last consumer: that slot's readers of iteration ``i - 2`` have passed the
    loop-top barrier, so only ``membar``'s barrier for the buffer is added.

    ``spare_pays(loop, plain_bytes, spare_bytes) -> bool`` (the backend's judgement of what the
    block's shared memory does to the SM: how many blocks share it, what is left of the cache)
    may veto a spare slot that would make the block ``spare_bytes`` instead of ``plain_bytes``.

    A backend may instead ask, with ``late_refill(loop)``, for the refill right after the slots'
    last consumer (``True``) or after an op of the body that follows it (that op): the copies are
    then issued while that consumer runs on an asynchronous unit, or once a wait has retired it,
    rather than before the first one starts (the slot written was still read one iteration
    earlier, so ``membar`` puts a barrier before the refill)."""

    name = "pipeline"

    def __init__(self, num_stages: int = 3, shared_budget: int | None = None, spare_slot=None, late_refill=None,
                 copy: str = "async", operand_buffer=None, load_filter=None, descriptor_copy=None,
                 stream_buffer=None, spare_refill=None, scratch_rules=None, spare_pays=None):
        if copy not in ("async", "registers"):
            raise ValueError(f"pipeline copy must be 'async' or 'registers', got {copy!r}")
        self.num_stages = num_stages
        self.shared_budget = shared_budget
        self.spare_slot = spare_slot
        self.late_refill = late_refill
        self.copy, self.operand_buffer, self.load_filter = copy, operand_buffer, load_filter
        self.descriptor_copy, self.stream_buffer = descriptor_copy, stream_buffer
        self.spare_refill = spare_refill
        self.scratch_rules = scratch_rules  # the backend's (``tritium.ttgir.scratch``), for the budget
        # (loop, bytes with S slots, bytes with S + 1) -> whether the spare slot is taken
        self.spare_pays = spare_pays
        self.skipped: dict[Operation, str] = {}

    def run(self, module: ModuleOp) -> None:
        loops = [op for op in module.walk() if isinstance(op, scf.ForOp)]
        for loop in reversed(loops):  # inner loops first
            attr = loop.attributes.get(STAGES_ATTR)
            stages = attr.value.data if isinstance(attr, IntegerAttr) else self.num_stages
            if stages < 2:
                continue
            registers = self.copy == "registers"
            if not registers:
                _load_transposed(loop, stages, self.shared_budget, self.scratch_rules)
            info = _Loop(loop, stages, registers, self.operand_buffer, self.load_filter, self.descriptor_copy,
                         self.stream_buffer, self.shared_budget)
            reason = info.analyse()
            if reason:
                self.skipped[loop] = reason
                continue
            if registers:
                _pipeline_registers(info)
            else:
                self._pipeline(info)

    def _pipeline(self, info: _Loop) -> None:
        loop, s = info.loop, info.stages
        before = InsertPoint.before(loop)
        i32 = IntegerType(32)
        slot_bytes = sum(t.size_in_bytes() for _, _, t in info.loads)
        other = _other_buffers_bytes(loop, self.scratch_rules)
        spare = self.spare_slot is not None and self.spare_slot(loop) and self.shared_budget is not None \
            and (s + 1) * slot_bytes + other <= self.shared_budget
        if spare and self.spare_pays is not None \
                and not self.spare_pays(loop, s * slot_bytes + other, (s + 1) * slot_bytes + other):
            spare = False  # the late refill's schedule keeps S slots
        nslots = s + 1 if spare else s
        if spare:
            late = (self.spare_refill(loop) or None) if self.spare_refill is not None else None
        else:
            late = (self.late_refill(loop) or None) if self.late_refill is not None else None
        # one buffer of nslots slots per load, and per descriptor load a barrier per slot
        bufs, bars = [], {}
        for load, _, t in info.loads:
            buf = LocalAllocOp(MemDescType((nslots,) + t.shape, t.element_type, t.encoding, mutable=True))
            buf.attributes[SLOT_STAGES_ATTR] = IntegerAttr(s, i32)
            Rewriter.insert_op(buf, before)
            bufs.append(buf.result)
            if isinstance(load, DescriptorLoadOp):
                bar = LocalAllocOp(barrier_type(nslots))
                Rewriter.insert_op([bar, InitBarriersOp(bar.result, 1)], before)
                bars[load] = bar.result
        n_groups = sum(not isinstance(load, DescriptorLoadOp) for load, _, _ in info.loads)

        def issue(env: dict, iv_key: SSAValue, iv_val: SSAValue, slot: SSAValue, at: InsertPoint) -> list[SSAValue]:
            """Copies of one iteration (``env`` maps the body's values), predicated on it existing;
            the tokens of its commit groups."""
            tokens = []
            env[iv_key] = iv_val
            _clone(info.slice, env, at)
            live = arith.CmpIOp(iv_val, loop.ub, "slt")
            Rewriter.insert_op(live, at)
            for (load, _, _), buf in zip(info.loads, bufs):
                if isinstance(load, DescriptorLoadOp):
                    view = MemDescIndexOp(buf, slot)
                    copy = AsyncCopyDescriptorToLocalOp(env.get(load.desc, load.desc),
                                                        [env.get(v, v) for v in load.indices], view.result,
                                                        bars[load], slot, live.result)
                    Rewriter.insert_op([view, copy], at)
                    continue
                ptrs = env.get(load.ptr, load.ptr)
                mask_t = TensorType(IntegerType(1), load.ptr.type.get_shape(), load.ptr.type.encoding)
                splat = _splat(live.result, mask_t)
                Rewriter.insert_op(splat, at)
                pred = splat.results[0]
                if load.mask is not None:
                    pred = _binop(arith.AndIOp, env.get(load.mask, load.mask), pred, at)
                view = MemDescIndexOp(buf, slot)
                Rewriter.insert_op(view, at)
                copy = AsyncCopyGlobalToLocalOp(ptrs, view.result, pred, None, *cache_evict(load))
                group = AsyncCommitGroupOp([copy.token])
                Rewriter.insert_op([copy, group], at)
                tokens.append(group.asyncToken)
            return tokens

        def advance(env: dict, at: InsertPoint) -> list[SSAValue]:
            _clone(info.update, env, at)
            return [env.get(info.yield_op.operands[i], info.yield_op.operands[i]) for i in info.carried]

        # prologue: iterations 0 .. S-2
        carried = [loop.iter_args[i] for i in info.carried]
        iv_val = loop.lb
        in_flight: list[SSAValue] = []  # the groups' tokens, oldest iteration first
        for j in range(s - 1):
            env = {info.body.args[1 + i]: v for i, v in zip(info.carried, carried)}
            in_flight += issue(env, info.iv, iv_val, _const(j, i32, before), before)
            carried = advance(env, before)
            iv_val = _binop(arith.AddIOp, iv_val, loop.step, before)
        ahead_iv_offset = iv_val  # lb + (S-1)*step: only its distance from lb matters below
        dist = _binop(arith.SubIOp, ahead_iv_offset, loop.lb, before)

        # the new loop carries the advanced addresses, the slot being read, the slot refilled and
        # (with barriers) the parity of the phase its barrier completes next.  The refilled slot is
        # carried (Triton's form) rather than derived from the one read as (slot + S - 1) mod
        # nslots: that put an add, a compare and a select in a chain before each refill (sm_90
        # attention d64 under Nsight Compute: 0.4-0.5% fewer cycles carried; bench NOTES run 30)
        # (and the tokens of the groups in flight, Triton's form: the loop-top wait names the
        # oldest iteration's groups, the ones it waits for)
        n_old = len(loop.iter_args)
        counters = [_const(0, i32, before), _const(s - 1, i32, before)] + ([_const(0, i32, before)] if bars else [])
        new, new_body = with_extra_iter_args(loop, carried + counters + in_flight)
        ahead = list(new_body.args[1 + n_old:1 + n_old + len(carried)])
        slot = new_body.args[1 + n_old + len(carried)]
        wslot = new_body.args[2 + n_old + len(carried)]
        phase = new_body.args[1 + n_old + len(carried) + 2] if bars else None
        tokens = list(new_body.args[len(new_body.args) - len(in_flight):]) if in_flight else []
        iv = new_body.args[0]

        # consumers read slot i % nslots once the oldest group has landed and its barriers completed
        # all views go in before any load is erased: the body's first op may be one of those loads
        waits: list[Operation] = [AsyncWaitOp(tokens[:n_groups], (s - 2) * n_groups)] if n_groups else []
        waits += [WaitBarrierOp(bar, slot, phase) for bar in bars.values()]
        views = [MemDescIndexOp(buf, slot) for buf in bufs]
        Rewriter.insert_op(waits + views, InsertPoint.at_start(new_body))
        for (load, consumer, _), view in zip(info.loads, views):
            _read_from(consumer, view.result)
            trans = info.transposes.get(load)
            if trans is not None:
                trans.detach()
                trans.erase()
            load.detach()
            load.erase()

        # refill: iteration i + S - 1 into slot (i + S - 1) % nslots, before the first consumer
        # (or after the last one)
        y = new_body.last_op
        # the slots' consumers, through transposed views (the dot reading ``memdesc_trans`` of a slot
        # is the consumer, not the view)
        readers = set()
        for v in views:
            for u in v.result.uses:
                if isinstance(u.operation, MemDescTransOp):
                    readers.update(w.operation for w in u.operation.result.uses)
                else:
                    readers.add(u.operation)
        users = [op for op in new_body.ops if op in readers]
        if isinstance(late, Operation) and late.parent_block() is new_body:
            at = InsertPoint.after(late)
        else:
            at = InsertPoint.after(users[-1]) if late else InsertPoint.before(users[0])
        env = {new_body.args[1 + i]: v for i, v in zip(info.carried, ahead)}
        iv_ahead = _binop(arith.AddIOp, iv, dist, at)
        issued = issue(env, iv, iv_ahead, wslot, at)
        next_ahead = advance(env, at)
        at_end = InsertPoint.before(y)

        def next_slot(v: SSAValue) -> tuple[SSAValue, SSAValue]:
            """(v + 1) mod nslots, and whether it wrapped."""
            n = _binop(arith.AddIOp, v, _const(1, i32, at_end), at_end)
            w = arith.CmpIOp(n, _const(nslots, i32, at_end), "sge")
            sel = arith.SelectOp(w.result, _const(0, i32, at_end), n)
            Rewriter.insert_op([w, sel], at_end)
            return sel.result, w.result

        nslot, nwrap = next_slot(slot)
        counters = [nslot, next_slot(wslot)[0]]
        if phase is not None:  # the parity flips each time the slots wrap around
            flipped = _binop(arith.XOrIOp, phase, _const(1, i32, at_end), at_end)
            nphase = arith.SelectOp(nwrap, flipped, phase)
            Rewriter.insert_op(nphase, at_end)
            counters.append(nphase.result)
        next_tokens = (tokens[n_groups:] + issued) if tokens else []
        Rewriter.replace_op(y, scf.YieldOp(*(list(y.operands) + next_ahead + counters + next_tokens)))

        for old, nw in zip(loop.results, new.results[:n_old]):
            old.replace_all_uses_with(nw)
        after = InsertPoint.after(new)
        # every copy issued was for an iteration that ran and waited for it: the barriers are idle
        Rewriter.insert_op(([AsyncWaitOp((), 0)] if n_groups else []) + [InvalBarriersOp(b) for b in bars.values()],
                           after)
        Rewriter.erase_op(loop, safe_erase=False)
        _drop_dead_carried(new, info.carried)


def _other_buffers_bytes(loop: scf.ForOp, scratch_rules=None) -> int:
    """Bytes of the function's shared buffers made outside ``loop`` (operands kept in shared memory
    across it, other loops' slots, a store's tile kept over an outer loop): what the loop's slots
    share the block's memory with."""
    func = loop.parent_op()
    while func is not None and func.parent_op() is not None and not isinstance(func.parent_op(), ModuleOp):
        func = func.parent_op()
    ops = list(func.walk()) if func is not None else []
    # and scratch kept over a loop around this one (``SCRATCH_ACROSS_LOOPS``: a store's tile)
    return sum(op.results[0].type.size_in_bytes() for op in ops
               if isinstance(op, LocalAllocOp) and not loop.is_ancestor(op)) \
        + sum(scratch_size(op, scratch_rules) for op in ops if SCRATCH_ACROSS_LOOPS in op.attributes
              and not loop.is_ancestor(op) and outermost_loop(op).is_ancestor(loop))


def _read_from(consumer: Operation, buf: SSAValue) -> None:
    """Make ``consumer`` (the tile's ``ttg.local_alloc``, or its ``ttg.convert_layout`` to a dot
    operand) read the buffer ``buf`` instead, and erase it.  A stream load (``consumer`` the load
    itself) is read back with ``ttg.local_load`` where it was; where all its users convert it to one
    layout, the read gives that layout and the conversions go."""
    if isinstance(consumer, LoadOp):
        uses = [u.operation for u in consumer.result.uses]
        t = consumer.result.type
        if uses and all(isinstance(u, ConvertLayoutOp) for u in uses) \
                and len({u.result.type for u in uses}) == 1:
            t = uses[0].result.type
        read = LocalLoadOp(buf, t)
        Rewriter.insert_op(read, InsertPoint.before(consumer))
        if t is consumer.result.type:
            consumer.result.replace_all_uses_with(read.results[0])
        else:
            for u in uses:
                u.result.replace_all_uses_with(read.results[0])
                u.detach()
                u.erase()
        return
    if isinstance(consumer, LocalAllocOp):
        consumer.result.replace_all_uses_with(buf)
        consumer.detach()
        consumer.erase()
        return
    Rewriter.replace_op(consumer, LocalLoadOp(buf, consumer.result.type))


def _pipeline_registers(info: _Loop) -> None:
    """The ``copy="registers"`` schedule (see :class:`Pipeline`): with ``S`` stages, iteration
    ``i`` loads the tiles of ``i + S - 1`` into registers, reads slot ``i % (S - 1)`` of the buffers
    and then stores the tiles it loaded into that slot (iteration ``i + S - 1``'s, as
    ``(i + S - 1) % (S - 1) == i % (S - 1)``).  The other ``S - 2`` slots hold iterations
    ``i + 1 .. i + S - 2``, stored by the iterations before; each tile is held in registers only
    from its load to its store, within one iteration."""
    loop, s = info.loop, info.stages
    nslots = s - 1
    before = InsertPoint.before(loop)
    i32 = IntegerType(32)
    bufs = []
    for _, _, t in info.loads:
        shape = t.shape if nslots == 1 else (nslots,) + t.shape
        buf = LocalAllocOp(MemDescType(shape, t.element_type, t.encoding, mutable=True))
        Rewriter.insert_op(buf, before)
        bufs.append(buf.result)

    def views(slot: SSAValue | None, at: InsertPoint) -> list[SSAValue]:
        if slot is None:
            return bufs
        ops = [MemDescIndexOp(buf, slot) for buf in bufs]
        Rewriter.insert_op(ops, at)
        return [op.result for op in ops]

    def load(env: dict, iv_key: SSAValue, iv_val: SSAValue, at: InsertPoint, places: dict | None = None) -> list[SSAValue]:
        """The tiles of one iteration, loaded into registers, predicated on the iteration existing
        (``env`` maps the body's values, ``iv_key`` its induction variable); all at ``at``, or each
        load (with its own copy of the address slice) at ``places[load]``."""
        env[iv_key] = iv_val
        base = dict(env)
        tiles = []
        for ld, _, _ in info.loads:
            if places is not None or not tiles:  # one address slice for all, or one a load
                if places is not None:
                    at, env = places[ld], dict(base)
                _clone(info.slice, env, at)
                live = arith.CmpIOp(iv_val, loop.ub, "slt")
                Rewriter.insert_op(live, at)
            mask_t = TensorType(IntegerType(1), ld.ptr.type.get_shape(), ld.ptr.type.encoding)
            splat = _splat(live.result, mask_t)
            Rewriter.insert_op(splat, at)
            pred = splat.results[0]
            if ld.mask is not None:
                pred = _binop(arith.AndIOp, env.get(ld.mask, ld.mask), pred, at)
            other = None if ld.other is None else env.get(ld.other, ld.other)
            new = LoadOp(env.get(ld.ptr, ld.ptr), pred, other, *cache_evict(ld), is_volatile=ld.isVolatile.value.data)
            new.location = ld.location
            Rewriter.insert_op(new, at)
            tiles.append(new.result)
        return tiles

    def advance(env: dict, at: InsertPoint) -> list[SSAValue]:
        _clone(info.update, env, at)
        return [env.get(info.yield_op.operands[i], info.yield_op.operands[i]) for i in info.carried]

    # prologue: iterations 0 .. S-2 loaded, then stored into slots 0 .. S-2; the loop carries the
    # addresses of iteration i + S - 1 and the slot it reads
    ahead = [loop.iter_args[i] for i in info.carried]
    iv_val = loop.lb
    loaded: list[list[SSAValue]] = []
    for _ in range(s - 1):
        env = {info.body.args[1 + i]: v for i, v in zip(info.carried, ahead)}
        loaded.append(load(env, info.iv, iv_val, before))
        ahead = advance(env, before)
        iv_val = _binop(arith.AddIOp, iv_val, loop.step, before)
    dist = _binop(arith.SubIOp, iv_val, loop.lb, before)  # (S - 1) * step
    for k, tiles in enumerate(loaded):
        for tile, view in zip(tiles, views(None if nslots == 1 else _const(k, i32, before), before)):
            Rewriter.insert_op(LocalStoreOp(tile, view), before)
    slot0 = [] if nslots == 1 else [_const(0, i32, before)]

    n_old, n_ahead = len(loop.iter_args), len(ahead)
    new, new_body = with_extra_iter_args(loop, ahead + slot0)
    args = new_body.args[1 + n_old:]
    ahead_args = args[:n_ahead]
    slot = args[-1] if nslots > 1 else None

    # iteration i + S - 1's loads where the body loaded iteration i's (as Triton's stream
    # pipeliner places them: a tile loaded late in the body is not held in registers across what
    # comes before), then the reads of slot i % (S - 1) ...
    iv = new_body.args[0]
    at = InsertPoint.at_start(new_body)
    read = views(slot, at)
    env = {new_body.args[1 + i]: v for i, v in zip(info.carried, ahead_args)}
    ahead_iv = _binop(arith.AddIOp, iv, dist, InsertPoint.at_start(new_body))
    tiles = load(dict(env), iv, ahead_iv, at, places={ld: InsertPoint.before(ld) for ld, _, _ in info.loads})
    for (ld, consumer, _), view in zip(info.loads, read):
        _read_from(consumer, view)
        ld.detach()
        ld.erase()
    env[iv] = ahead_iv
    # ... and after every consumer, those tiles into the slot just read
    y = new_body.last_op
    at_end = InsertPoint.before(y)
    for tile, view in zip(tiles, read):
        Rewriter.insert_op(LocalStoreOp(tile, view), at_end)
    nslot = []
    if slot is not None:
        inc = _binop(arith.AddIOp, slot, _const(1, i32, at_end), at_end)
        wrap = arith.CmpIOp(inc, _const(nslots, i32, at_end), "sge")
        Rewriter.insert_op(wrap, at_end)
        sel = arith.SelectOp(wrap.result, _const(0, i32, at_end), inc)
        Rewriter.insert_op(sel, at_end)
        nslot = [sel.result]
    next_ahead = advance(env, at_end)
    Rewriter.replace_op(y, scf.YieldOp(*(list(y.operands) + next_ahead + nslot)))

    for old, nw in zip(loop.results, new.results[:n_old]):
        old.replace_all_uses_with(nw)
    Rewriter.erase_op(loop, safe_erase=False)
    _drop_dead_carried(new, info.carried)


def _drop_dead_carried(loop: scf.ForOp, indices: list[int]) -> None:
    """The original address iter args now only advance themselves (the copies use the ones carried
    ahead): drop them, and the arithmetic that advanced them."""
    body = loop.body.block
    y = body.last_op
    changed = False
    for i in indices:
        arg, res = body.args[1 + i], loop.results[i]
        if list(res.uses):
            continue
        chain: list[Operation] = []
        work, seen = [arg], set()
        ok = True
        while work and ok:
            v = work.pop()
            for use in list(v.uses):
                user = use.operation
                if user is y:
                    ok = use.index == i
                elif _pure(user) and user not in seen:
                    seen.add(user)
                    chain.append(user)
                    work.extend(user.results)
                elif user not in seen:
                    ok = False
        if not ok:
            continue
        y.operands[i] = arg
        for op in sorted(chain, key=lambda o: body.get_operation_index(o), reverse=True):
            op.detach()
            op.erase()
        changed = True
    if changed:
        drop_invariant_iter_args(loop)


def barrier_type(count: int) -> MemDescType:
    """The buffer of ``count`` mbarriers (8 bytes each, unswizzled) a copy of the engine completes
    on: the pipeline's one a slot, a backend's own for a copy outside loops."""
    return MemDescType((count,), IntegerType(64), SwizzledSharedEncodingAttr(1, 1, 1, [0]), mutable=True)


def _splat(v: SSAValue, t) -> Operation:
    return SplatOp(v, t)


__all__ = ["Pipeline", "SLOT_STAGES_ATTR", "STAGES_ATTR", "barrier_type", "slots_ahead"]


def slots_ahead(view: SSAValue) -> int:
    """For a slot view made by this pass, how many iterations after a slot is read it is refilled
    (``nslots - num_stages + 1``: 1 without a spare slot, 2 with one); 0 for anything else."""
    op = view.owner
    while isinstance(op, MemDescTransOp):  # a transposed view of a slot reads that slot
        op = op.src.owner
    if not isinstance(op, MemDescIndexOp):
        return 0
    buf = op.operands[0].owner
    if isinstance(buf, LocalAllocOp) and isinstance(buf.attributes.get(SLOT_STAGES_ATTR), IntegerAttr):
        return buf.result.type.shape[0] - buf.attributes[SLOT_STAGES_ATTR].value.data + 1
    loop = op.parent_op()
    wait = next((o for o in op.parent_block().ops if isinstance(o, AsyncWaitOp)), None) if loop else None
    groups = sum(isinstance(o, AsyncCommitGroupOp) for o in op.parent_block().ops)
    if not isinstance(buf, LocalAllocOp) or wait is None or not groups:
        return 0
    stages = wait.num.value.data // groups + 2
    return buf.result.type.shape[0] - stages + 1
