"""Lowering of the ops of ``passes/cluster_pairs.py`` (two CTAs of a cluster sharing copies)::

    ttng.pair_setup %lb, %ub, %step, [invariants]
        cluster of 2: thread 0 stores the words at the op's offset and initialises the empty
        barriers (count 2); cluster barrier; every thread reads the peer's words (mapa +
        ld.shared::cluster); cluster barrier (both are done reading); paired = bounds equal,
        shares[k] = paired and copy k's invariants equal.  Otherwise all false.
    ttng.pair_refill %paired, %t, %slot, [shares]
        thread 0, paired and some copy shared: mbarrier.arrive on the slot's empty barrier here
        and in the peer (release, cluster scope); where this CTA issues one of them, wait for
        the round's phase (t / nslots) % 2 of its own (acquire, cluster scope).
        modes[k] = shares[k] ? ((t + k) % 2 == rank ? 1 : 2) : 0
    ttng.pair_teardown %paired           paired: cluster barrier
    ttng.pair_copy ..., %mode            thread 0, where the predicate holds: expect the tile's
                                         bytes on the slot's barrier; mode 0 copy, mode 1 copy
                                         with .multicast::cluster to both CTAs, mode 2 nothing more

The cluster barrier is ``barrier.cluster.arrive.release`` + ``barrier.cluster.wait.acquire``,
every thread of both CTAs."""
from __future__ import annotations

import llvmlite.ir as ir

from tritium.conversion.ttgir_to_llvm.lowering import FunctionLowering
from tritium.conversion.ttgir_to_llvm.types import I32, const

from .tma import _asm, _bar_address, _wait_parity, lower_copy_descriptor_to_local

I1 = ir.IntType(1)


def _cluster_barrier(b: ir.IRBuilder) -> None:
    _asm(b, "barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;", "", [])


def _area(fl: FunctionLowering, op) -> ir.Value:
    """The 32-bit shared address of the op's words."""
    return fl.builder.ptrtoint(fl.shared_ptr(fl.alloc_offset(op)), I32)


def _peer(fl: FunctionLowering, addr) -> ir.Value:
    """``addr`` in the other CTA of the pair (rank ^ 1), as a shared::cluster address."""
    b = fl.builder
    peer = b.xor(fl.target._sreg(b, "cluster.ctarank"), const(I32, 1))
    fty = ir.FunctionType(I32, [I32, I32])
    return b.asm(fty, "mapa.shared::cluster.u32 $0, $1, $2;", "=r,r,r", [addr, peer], False)


def _load_remote(b: ir.IRBuilder, addr) -> ir.Value:
    """A word of the peer's shared memory (``addr`` from :func:`_peer`)."""
    return b.asm(ir.FunctionType(I32, [I32]), "ld.shared::cluster.u32 $0, [$1];", "=r,r,~{memory}", [addr], True)


def _store(b: ir.IRBuilder, addr, value) -> None:
    _asm(b, "st.shared.u32 [$0], $1;", "r,r", [addr, value])


def _empty_barrier(fl: FunctionLowering, op, slot) -> ir.Value:
    """The 32-bit shared address of empty barrier ``slot`` (an i32 value or an int)."""
    b = fl.builder
    base = b.ptrtoint(fl.shared_ptr(op.empty_offset.value.data), I32)
    index = slot if isinstance(slot, ir.Value) else const(I32, slot)
    return b.add(base, b.mul(index, const(I32, 8)))


def lower_pair_setup(fl: FunctionLowering, op) -> None:
    b = fl.builder
    bounds = [fl.get(v) for v in (op.lb, op.ub, op.step)]
    invariants = [fl.get(v) for v in op.invariants]
    words = bounds + invariants
    area = _area(fl, op)
    two = b.icmp_unsigned("==", fl.target._sreg(b, "cluster.nctarank"), const(I32, 2))
    entry = b.block
    with b.if_then(two):
        with b.if_then(fl.first_thread_pred()):
            for i, v in enumerate(words):
                _store(b, b.add(area, const(I32, 4 * i)), v)
        _cluster_barrier(b)
        remote = _peer(fl, area)
        theirs = [_load_remote(b, b.add(remote, const(I32, 4 * i))) for i in range(len(words))]
        same = [b.icmp_signed("==", x, y) for x, y in zip(theirs, words)]
        paired = const(I1, 1)
        for s in same[:3]:
            paired = b.and_(paired, s)
        # the empty barriers count both CTAs' arrivals: set before the barrier that publishes them
        with b.if_then(b.and_(fl.first_thread_pred(), paired)):
            for k in range(op.nslots.value.data):
                _asm(b, f"mbarrier.init.shared::cta.b64 [$0], {op.empty_count.value.data};", "r",
                     [_empty_barrier(fl, op, k)])
            _asm(b, "fence.mbarrier_init.release.cluster;", "", [])
        _cluster_barrier(b)  # both have read: the tables are free
        shares, at = [], 3
        for w in op.width_list:
            share = paired
            for s in same[at:at + w]:
                share = b.and_(share, s)
            shares.append(share)
            at += w
        paired_block = b.block
    out = []
    for v in [paired] + shares:
        phi = b.phi(I1)
        phi.add_incoming(v, paired_block)
        phi.add_incoming(const(I1, 0), entry)
        out.append(phi)
    fl.set(op.paired, out[0])
    for result, v in zip(op.shares, out[1:]):
        fl.set(result, v)


def lower_pair_refill(fl: FunctionLowering, op) -> None:
    b = fl.builder
    shares = [fl.get(v) for v in op.shares]
    t = fl.get(op.t)
    rank = fl.target._sreg(b, "cluster.ctarank")
    any_shared = const(I1, 0)
    issuing = const(I1, 0)
    modes = []
    for k, share in enumerate(shares):
        mine = b.icmp_unsigned("==", b.and_(b.add(t, const(I32, k)), const(I32, 1)), rank)
        modes.append(b.select(share, b.select(mine, const(I32, 1), const(I32, 2)), const(I32, 0)))
        any_shared = b.or_(any_shared, share)
        issuing = b.or_(issuing, b.and_(share, mine))
    if not op.handoff.value.data:  # the producer of a warp-specialized loop: only the modes
        for result, mode in zip(op.modes, modes):
            fl.set(result, mode)
        return
    with b.if_then(b.and_(fl.first_thread_pred(), b.and_(fl.get(op.paired), any_shared))):
        bar = _empty_barrier(fl, op, fl.get(op.slot))
        # this CTA is done with the slot (the block barrier before this op): tell both CTAs
        _asm(b, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r", [bar])
        _asm(b, "mbarrier.arrive.shared::cluster.b64 _, [$0];", "r", [_peer(fl, bar)])
        with b.if_then(issuing):
            # both CTAs are done with it: the copy may write into both
            _wait_parity(b, bar, b.and_(b.udiv(t, const(I32, op.nslots.value.data)), const(I32, 1)))
    for result, mode in zip(op.modes, modes):
        fl.set(result, mode)


def lower_pair_arrive(fl: FunctionLowering, op) -> None:
    b = fl.builder
    bar = _bar_address(fl, op.bars, op.index)
    lane0 = b.and_(b.icmp_unsigned("==", fl.lane, const(I32, 0)), fl.get(op.pred))
    with b.if_then(lane0):
        _asm(b, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r", [bar])
    with b.if_then(b.and_(lane0, fl.get(op.paired))):
        _asm(b, "mbarrier.arrive.shared::cluster.b64 _, [$0];", "r", [_peer(fl, bar)])


def lower_pair_teardown(fl: FunctionLowering, op) -> None:
    with fl.builder.if_then(fl.get(op.paired)):
        _cluster_barrier(fl.builder)


def lower_pair_copy(fl: FunctionLowering, op) -> None:
    lower_copy_descriptor_to_local(fl, op, fl.get(op.mode))


LOWERINGS = {"ttng.pair_setup": lower_pair_setup, "ttng.pair_refill": lower_pair_refill,
             "ttng.pair_teardown": lower_pair_teardown, "ttng.pair_copy": lower_pair_copy,
             "ttng.pair_arrive": lower_pair_arrive}

__all__ = ["LOWERINGS"]
