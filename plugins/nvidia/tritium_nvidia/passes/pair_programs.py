"""``pair_programs``: which sm_90 kernels the driver launches with programs ``2i`` and ``2i + 1``
together, as one cluster of two CTAs (``runtime/driver.py``).

The two CTAs of a cluster start at the same moment on the two SMs of one TPC.  In a tiled dot
kernel neighbouring programs read the same operand tiles (the tutorial matmul's grouped order
gives programs ``2i`` and ``2i + 1`` the same columns of B; attention's read the same K and V),
and two that start together read them together, and stay in step, for the whole grid: where the
plain launch's programs drift apart wave after wave and ask L2 (and memory) for the same tiles
at different times.  On the H200, 8192^3 fp16 tutorial matmul, the configs of two blocks an SM
ran 1.04-1.23x their plain launch; configs of one block an SM and attention forward did not
change (``docs/performance.md``, "Paired programs").

A kernel is marked when pairing can help and cannot hurt its occupancy or its balance:

- it has a dot (``tt.dot``, ``tt.dot_scaled``, ``ttng.warp_group_dot``);
- two blocks fit an SM: at most 4 warps (255 registers a thread then still leave room for two)
  and twice its shared memory (plus the 1 KiB a block reserves) within the SM's 228 KiB; one
  block an SM measured no gain;
- its programs do equal work: no outermost loop whose trip count changes with ``program_id(0)``
  (``program_order.work_slope`` is 0).  A pair waits for two free slots of one TPC, so unequal
  programs (causal attention) leave slots idle: 0.97-0.98x there;
- one CTA a program, no ``cluster_pairs`` of its own, no warp-specialized loop (its producer
  warps and register split are sized for its own block).

The mark (``PAIR_PROGRAMS`` on the module) makes the lowering count wgmma descriptors from the
CTA's own shared window (``lowering/tensor_cores.py``), and ``metadata["pair_programs"]`` tells
the driver, which still checks the occupancy on the device and pairs only grids of an even x
size and more than one wave.  The window form is in the kernel whether a launch pairs or not;
in the 128x128x64 4-warp tile ptxas schedules its loop a little worse for it (0.93-0.97x
Triton where the grid is too short to pair, 0.98-1.00x at 4096^3 paired, 1.00-1.02x at 8192^3);
the other marked configs are within 1% of the plain address."""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp, UnitAttr

from tritium.ttgir.dialect import SHARED
from tritium.ttgir.passes.program_order import work_slope

from .cluster_pairs import CLUSTER_PAIRS

PAIR_PROGRAMS = "tritium.pair_programs"

#: the ops that tile a kernel over shared operands
DOTS = frozenset({"tt.dot", "tt.dot_scaled", "ttng.warp_group_dot"})

#: an sm_90 SM's shared memory and what each block reserves of it, bytes
SM_SHARED = 228 * 1024
BLOCK_RESERVED = 1024


def pairs_well(module: ModuleOp, capability: int, num_warps: int, num_ctas: int = 1) -> bool:
    """Whether ``module``'s programs should be launched in pairs (see the module docstring)."""
    if capability != 90 or num_ctas != 1 or CLUSTER_PAIRS in module.attributes:
        return False
    names = {op.name for op in module.walk()}
    if num_warps > 4 or not names & DOTS or "ttng.producer_partition" in names:
        return False
    shared = module.attributes[SHARED].value.data if SHARED in module.attributes else 0
    if 2 * (shared + BLOCK_RESERVED) > SM_SHARED:
        return False
    funcs = [op for op in module.ops if op.name == "tt.func" and op.is_public]
    return bool(funcs) and all(work_slope(f) == 0 for f in funcs)


def mark_pairs(module: ModuleOp, capability: int, num_warps: int, num_ctas: int = 1) -> bool:
    """Mark ``module`` (``PAIR_PROGRAMS``) where :func:`pairs_well`; returns whether it did."""
    if not pairs_well(module, capability, num_warps, num_ctas):
        return False
    module.attributes[PAIR_PROGRAMS] = UnitAttr()
    return True


__all__ = ["PAIR_PROGRAMS", "mark_pairs", "pairs_well"]
