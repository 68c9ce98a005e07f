"""Lowering of the ops of ``passes/cluster_pairs.py`` (two CTAs of a cluster sharing copies)::

    ttng.pair_setup %lb, %ub, %step      cluster of 2: thread 0 stores the bounds at the op's
                                         offset; cluster barrier; every thread reads the peer's
                                         (mapa + ld.shared::cluster): paired = all equal;
                                         cluster barrier (the peer is done reading ours)
                                         otherwise: paired = false
    ttng.pair_exchange %paired, %parity, [values]
        paired:     thread 0 stores the values in half %parity of the table; cluster barrier;
                    thread 0 reads the peer's half: copy k equal -> mode 1 where this CTA's rank
                    is (parity + k) % 2, else 2; different -> 0
        not paired: bar.sync 0; modes 0
    ttng.pair_teardown %paired           paired: cluster barrier
    ttng.pair_copy ..., %mode            thread 0, where the predicate holds: expect the tile's
                                         bytes on the slot's barrier; mode 0 copy, mode 1 copy
                                         with .multicast::cluster to both CTAs, mode 2 nothing more

The cluster barrier is ``barrier.cluster.arrive.release`` + ``barrier.cluster.wait.acquire``:
every thread of both CTAs, ordering thread 0's table stores before the peer's reads.  The table
has two halves so that a CTA one barrier ahead never overwrites what its peer still reads."""
from __future__ import annotations

import llvmlite.ir as ir

from tritium.conversion.ttgir_to_llvm.lowering import FunctionLowering
from tritium.conversion.ttgir_to_llvm.types import I32, const

from ..passes.cluster_pairs import COPY_BYTES
from ..passes.tma import FENCE_ALWAYS, UNFENCED
from .tma import _asm, _bar_address, _coords, _copy_boxes, _address, _expect

I1 = ir.IntType(1)


def _cluster_barrier(b: ir.IRBuilder) -> None:
    _asm(b, "barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;", "", [])


def _area(fl: FunctionLowering, op) -> ir.Value:
    """The 32-bit shared address of the op's table."""
    return fl.builder.ptrtoint(fl.shared_ptr(fl.alloc_offset(op)), I32)


def _peer(fl: FunctionLowering, addr) -> ir.Value:
    """``addr`` in the other CTA of the pair (rank ^ 1), as a shared::cluster address."""
    b = fl.builder
    peer = b.xor(fl.target._sreg(b, "cluster.ctarank"), const(I32, 1))
    fty = ir.FunctionType(I32, [I32, I32])
    return b.asm(fty, "mapa.shared::cluster.u32 $0, $1, $2;", "=r,r,r", [addr, peer], False)


def _load_remote(b: ir.IRBuilder, addr, pred=None) -> ir.Value:
    """A word of the peer's shared memory (0 where ``pred``, an i1, is false)."""
    if pred is None:
        return b.asm(ir.FunctionType(I32, [I32]), "ld.shared::cluster.u32 $0, [$1];", "=r,r,~{memory}", [addr], True)
    return b.asm(ir.FunctionType(I32, [I1, I32]),
                 "{\nmov.b32 $0, 0;\n@$1 ld.shared::cluster.u32 $0, [$2];\n}",
                 "=r,b,r,~{memory}", [pred, addr], True)


def _store(b: ir.IRBuilder, addr, value) -> None:
    _asm(b, "st.shared.u32 [$0], $1;", "r,r", [addr, value])


def lower_pair_setup(fl: FunctionLowering, op) -> None:
    b = fl.builder
    bounds = [fl.get(v) for v in (op.lb, op.ub, op.step)]
    area = _area(fl, op)
    two = b.icmp_unsigned("==", fl.target._sreg(b, "cluster.nctarank"), const(I32, 2))
    entry = b.block
    with b.if_then(two):
        with b.if_then(fl.first_thread_pred()):
            for i, v in enumerate(bounds):
                _store(b, b.add(area, const(I32, 4 * i)), v)
        _cluster_barrier(b)
        remote = _peer(fl, area)
        same = const(I1, 1)
        for i, v in enumerate(bounds):
            same = b.and_(same, b.icmp_signed("==", _load_remote(b, b.add(remote, const(I32, 4 * i))), v))
        _cluster_barrier(b)
        paired_block = b.block
    paired = b.phi(I1)
    paired.add_incoming(same, paired_block)
    paired.add_incoming(const(I1, 0), entry)
    fl.set(op.paired, paired)


def lower_pair_exchange(fl: FunctionLowering, op) -> None:
    b = fl.builder
    widths = op.width_list
    values = [fl.get(v) for v in op.values]
    parity = fl.get(op.parity)
    with b.if_else(fl.get(op.paired)) as (then, otherwise):
        with then:
            first = fl.first_thread_pred()
            half = b.add(_area(fl, op), b.mul(parity, const(I32, len(widths) * COPY_BYTES)))
            with b.if_then(first):
                at = 0
                for k, w in enumerate(widths):
                    for j in range(w):
                        _store(b, b.add(half, const(I32, k * COPY_BYTES + 4 * j)), values[at + j])
                    at += w
            _cluster_barrier(b)
            remote = _peer(fl, half)
            rank = fl.target._sreg(b, "cluster.ctarank")
            modes, at = [], 0
            for k, w in enumerate(widths):
                same = const(I1, 1)
                for j in range(w):
                    theirs = _load_remote(b, b.add(remote, const(I32, k * COPY_BYTES + 4 * j)), first)
                    same = b.and_(same, b.icmp_signed("==", theirs, values[at + j]))
                at += w
                mine = b.icmp_unsigned("==", b.and_(b.add(parity, const(I32, k)), const(I32, 1)), rank)
                modes.append(b.select(same, b.select(mine, const(I32, 1), const(I32, 2)), const(I32, 0)))
            paired_block = b.block
        with otherwise:
            fl.target.barrier(b)
            alone_block = b.block
    for result, mode in zip(op.modes, modes):
        phi = b.phi(I32)
        phi.add_incoming(mode, paired_block)
        phi.add_incoming(const(I32, 0), alone_block)
        fl.set(result, phi)


def lower_pair_teardown(fl: FunctionLowering, op) -> None:
    with fl.builder.if_then(fl.get(op.paired)):
        _cluster_barrier(fl.builder)


def lower_pair_copy(fl: FunctionLowering, op) -> None:
    b = fl.builder
    t = op.result.type
    dst = b.ptrtoint(fl.get(op.result), I32)
    bar = _bar_address(fl, op.bars, op.index)
    coords = _coords(fl, op)
    tmap = _address(fl, op.desc)
    mode = fl.get(op.mode)
    if FENCE_ALWAYS in op.attributes:
        with b.if_then(fl.first_thread_pred()):
            _asm(b, "fence.proxy.async.shared::cta;", "", [])
    with b.if_then(b.and_(fl.first_thread_pred(), fl.get(op.pred))):
        if UNFENCED not in op.attributes and FENCE_ALWAYS not in op.attributes:
            _asm(b, "fence.proxy.async.shared::cta;", "", [])
        _expect(b, t, bar)
        with b.if_then(b.icmp_unsigned("==", mode, const(I32, 0))):
            _copy_boxes(b, t, dst, tmap, bar, coords)
        with b.if_then(b.icmp_unsigned("==", mode, const(I32, 1))):
            _copy_boxes(b, t, dst, tmap, bar, coords, cta_mask=0b11)


LOWERINGS = {"ttng.pair_setup": lower_pair_setup, "ttng.pair_exchange": lower_pair_exchange,
             "ttng.pair_teardown": lower_pair_teardown, "ttng.pair_copy": lower_pair_copy}

__all__ = ["LOWERINGS"]
