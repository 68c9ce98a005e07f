"""Blocks per SM, and the register cap that buys one more.

ptxas picks a kernel's register count for the code, not for the occupancy it gives: attention's
forward at head dim 64 (128x64 tiles, 4 warps) takes 188 registers, two blocks an SM, where 168
would let a third in beside them (the shared memory has room for it).  On the H200 the capped
kernel ran 1.05-1.12x the uncapped one (Triton 3.6's own tutorial kernel, same source).  So
:func:`register_cap` finds, for a kernel of low occupancy (three blocks an SM or fewer) that is
held back by registers alone, the register count of the next step; the NVIDIA ``cubin`` stage
assembles the kernel again with that cap and keeps the result if ptxas spills nothing, or, where
the cap takes the kernel from two blocks an SM (or one) to one more, a few words
(:func:`spill_budget`).  On the H200 the same tutorial's causal kernel (221 registers) capped at
168 spills 24 bytes and ran 1.05-1.10x its uncapped form, three blocks against two; the
benchmark's fp8 attention at d128 (156 registers, three blocks) capped at 128 for a fourth spills
32 bytes and ran 0.95x its uncapped form.

The model is the hardware's allocation rule: registers are given a warp at a time in units of 256
(a thread's count rounded up to a multiple of 8), from four quarter files of 16,384 registers, one
per SM sub-partition, over which a block's warps are spread; shared memory per SM less 1 KB the
driver keeps per block."""
from __future__ import annotations

from dataclasses import dataclass


#: an SM's register file (sm_80 to sm_90), and the shared memory the driver keeps per block
REGISTER_FILE = 64 * 1024
BLOCK_RESERVED_BYTES = 1024


@dataclass(frozen=True)
class SMLimits:
    shared: int        # bytes of shared memory an SM has for blocks
    max_warps: int
    max_blocks: int
    reserved: int = BLOCK_RESERVED_BYTES
    quarter_regs: int = REGISTER_FILE // 4


#: by compute capability; others (sm_70, sm_75, ...) are not capped
LIMITS = {
    80: SMLimits(shared=164 * 1024, max_warps=64, max_blocks=32),
    86: SMLimits(shared=100 * 1024, max_warps=48, max_blocks=16),
    89: SMLimits(shared=100 * 1024, max_warps=48, max_blocks=24),
    90: SMLimits(shared=228 * 1024, max_warps=64, max_blocks=32),
}

#: only kernels at this many blocks an SM or fewer are considered: where a block more hides the
#: most latency
LOW_OCCUPANCY = 3
#: and only where the cap keeps this fraction of the registers ptxas chose
MIN_KEEP = 0.75
#: a capped kernel may spill this many bytes (stores, and loads, each) where it held
#: :data:`SPILL_BLOCKS` blocks an SM or fewer before the cap; above, nothing
SPILL_BUDGET = 32
SPILL_BLOCKS = 2


def _warp_regs(regs: int) -> int:
    return -(-regs * 32 // 256) * 256


def blocks_per_sm(limits: SMLimits, regs: int, warps: int, shared: int) -> int:
    """Blocks of ``warps`` warps, ``regs`` registers a thread and ``shared`` bytes that fit an SM."""
    quarter_warps = limits.quarter_regs // _warp_regs(max(regs, 1))
    # a block's warps spread over the four sub-partitions: the busiest holds ceil(warps / 4)
    by_regs = 4 * quarter_warps // warps if warps < 4 else quarter_warps // -(-warps // 4)
    by_warps = limits.max_warps // warps
    by_shared = limits.shared // (shared + limits.reserved)
    return min(by_regs, by_warps, by_shared, limits.max_blocks)


def register_cap(capability: int, regs: int, warps: int, shared: int) -> int | None:
    """The register count (a multiple of 8) at which one more block fits an SM, where registers
    alone hold the kernel at :data:`LOW_OCCUPANCY` blocks or fewer and the cap keeps at least
    :data:`MIN_KEEP` of ``regs``; else None."""
    limits = LIMITS.get(capability)
    if limits is None or regs <= 0:
        return None
    now = blocks_per_sm(limits, regs, warps, shared)
    if now == 0 or now > LOW_OCCUPANCY:
        return None
    want = now + 1
    if blocks_per_sm(limits, 1, warps, shared) < want:  # shared memory or warps forbid it anyway
        return None
    per_quarter = -(-want * warps // 4)
    cap = min(255, (limits.quarter_regs // per_quarter) // 256 * 8)
    if cap >= regs or cap < MIN_KEEP * regs or blocks_per_sm(limits, cap, warps, shared) < want:
        return None
    return cap


def spill_budget(capability: int, regs: int, warps: int, shared: int) -> int:
    """The spill bytes a capped kernel may keep: :data:`SPILL_BUDGET` where the uncapped kernel
    (``regs``) runs :data:`SPILL_BLOCKS` blocks an SM or fewer, else 0."""
    limits = LIMITS.get(capability)
    if limits is None or blocks_per_sm(limits, regs, warps, shared) > SPILL_BLOCKS:
        return 0
    return SPILL_BUDGET


def spills_within_budget(resources: dict | None, budget: int) -> bool:
    """Whether ptxas's report for a capped kernel (``spill_stores``, ``spill_loads`` in bytes; a
    missing report counts as over) stays within ``budget`` bytes each."""
    if not resources:
        return False
    return max(resources.get("spill_stores", budget + 1), resources.get("spill_loads", budget + 1)) <= budget
