"""Lowering of a warp-specialized loop's ops (``passes/warp_specialize.py``)::

    ttng.producer_partition {consumer_warps = W, producer_regs = P, consumer_regs = C} { body }
        tid >= 32*W:  setmaxnreg.dec.sync.aligned.u32 P;  body (its one-thread work on thread 32*W);  ret
        else:         setmaxnreg.inc.sync.aligned.u32 C;  (go on)

    ttng.arrive_barrier %bars[%i], %pred      lane 0 of each warp, where %pred:
                                                  mbarrier.arrive.shared::cta.b64 _, [bar]

    ttg.barrier {ttng.named_barrier = N}      bar.sync 1, N   (the consumers only)

    ttng.warp_group_turn {step, threads = N}  the two consumer groups' turns, g = tid / 128:
        start: g == 1: bar.arrive 2, N      wait: bar.sync 2 + g, N
        pass:  bar.arrive 2 + (g ^ 1), N    end:  g == 0: bar.sync 2, N

``setmaxnreg`` is warp-group wide (``.sync.aligned``): the producer is one whole warp group and
the consumers are whole warp groups."""
from __future__ import annotations

from llvmlite import ir

from tritium.conversion.target_info import intrinsic
from tritium.conversion.ttgir_to_llvm.lowering import FunctionLowering
from tritium.conversion.ttgir_to_llvm.types import I32, const

from ..passes.warp_specialize import NAMED_BARRIER
from .tma import _asm, _bar_address


def lower_producer_partition(fl: FunctionLowering, op) -> None:
    b = fl.builder
    consumers = op.count("consumer_warps") * 32
    producer = b.append_basic_block("ws_producer")
    rest = b.append_basic_block("ws_consumers")
    b.cbranch(b.icmp_unsigned(">=", fl.tid, const(I32, consumers)), producer, rest)
    b.position_at_end(producer)
    _asm(b, f"setmaxnreg.dec.sync.aligned.u32 {op.count('producer_regs')};", "", [])
    saved, fl.first_thread = fl.first_thread, b.icmp_unsigned("==", fl.tid, const(I32, consumers))
    try:
        fl.lower_block(op.body.blocks[0])
    finally:
        fl.first_thread = saved
    b.ret_void()
    b.position_at_end(rest)
    _asm(b, f"setmaxnreg.inc.sync.aligned.u32 {op.count('consumer_regs')};", "", [])


def lower_arrive_barrier(fl: FunctionLowering, op) -> None:
    b = fl.builder
    bar = _bar_address(fl, op.bars, op.index)
    lane0 = b.icmp_unsigned("==", fl.lane, const(I32, 0))
    with b.if_then(b.and_(lane0, fl.get(op.pred))):
        _asm(b, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r", [bar])


def lower_barrier(fl: FunctionLowering, op) -> None:
    named = op.attributes.get(NAMED_BARRIER)
    if named is None:
        fl.target.barrier(fl.builder)
        return
    # bar.sync id, threads (an intrinsic: convergent, as the block barrier's)
    intrinsic(fl.builder, "llvm.nvvm.barrier.cta.sync.aligned.count", ir.VoidType(),
              [const(I32, 1), const(I32, named.value.data)])


#: the first named barrier of the consumer groups' turns (0 is the block's, 1 the consumers')
TURN_BARRIER = 2


def lower_warp_group_turn(fl: FunctionLowering, op) -> None:
    b = fl.builder
    step, threads = op.step.data, const(I32, op.threads.value.data)
    group = b.lshr(fl.tid, const(I32, 7))

    def bar(kind: str, barrier_id) -> None:
        intrinsic(b, f"llvm.nvvm.barrier.cta.{kind}.aligned.count", ir.VoidType(), [barrier_id, threads])

    if step == "wait":
        bar("sync", b.add(group, const(I32, TURN_BARRIER)))
    elif step == "pass":
        bar("arrive", b.add(b.xor(group, const(I32, 1)), const(I32, TURN_BARRIER)))
    else:  # start / end: group 1 opens group 0's first turn; group 0 takes the last one it was given
        with b.if_then(b.icmp_unsigned("==", group, const(I32, 1 if step == "start" else 0))):
            bar("arrive" if step == "start" else "sync", const(I32, TURN_BARRIER))


LOWERINGS = {"ttng.producer_partition": lower_producer_partition, "ttng.arrive_barrier": lower_arrive_barrier,
             "ttg.barrier": lower_barrier, "ttng.warp_group_turn": lower_warp_group_turn}

__all__ = ["LOWERINGS"]
