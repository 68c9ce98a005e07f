"""The NVIDIA compilation stages: ``ttir -> ttgir -> llir -> ptx -> cubin``.

``ttgir`` runs the shared TTGIR pipeline with the target's warp size; ``llir`` the shared lowering
with :class:`NVIDIATargetInfo`; ``ptx`` LLVM's NVPTX backend (libdevice linked when used);
``cubin`` nvJitLink or ptxas.  Every stage records what the driver needs in ``metadata``."""
from __future__ import annotations

import re

from xdsl.dialects.builtin import AnyFloat, IntegerAttr, IntegerType, i32

from tritium.conversion.ttgir_to_llvm import lower_to_llvm
from tritium.passes import PassManager
from tritium.ttgir.encodings import SwizzledSharedEncodingAttr
from tritium.ttgir.layouts import bit_width
from tritium.ttgir.passes.fma_operands import fma_operand_buffer
from tritium.ttgir.passes.software_pipeline import Pipeline
from tritium.ttgir.passes.pointer_offsets import PointerOffsets
from tritium.ttgir.passes.program_order import LongestProgramsFirst
from tritium.ttgir.passes.remove_layout_conversions import RemoveLayoutConversions
from tritium.ttgir.pass_lists import finalize_ttgir, prepare_ttgir, ttgir_passes as core_ttgir_passes
from tritium.ttir.passes.cse import CSE
from tritium.ttir.passes.dce import DCE

from .lowering.target_info import NVIDIATargetInfo
from .lowering.tma import MAP_TEMPLATE, template_name
from .options import capability
from .passes.dialect import TensorMapCreateOp  # (importing it registers the ttng ops the passes create)
from .passes import tma
from .passes.accelerate_matmul import AccelerateMatmul
from .passes.overlap_dots import OverlapDots
from .passes.async_dot import (ASYNC_COPIES, AsyncDotWaits, spare_pays, spare_refill, wants_late_refill,
                               wants_spare_slot)
from .passes.async_operands import AsyncOperandLoads
from .passes.tensor_maps import DeviceTensorMaps
from .passes.tile_prefetch import TilePrefetch
from .passes.cluster_pairs import CLUSTER_PAIRS, cluster_pairs
from .passes.pair_programs import mark_pairs
from .passes.warp_specialize import WarpSpecialize, consumer_barriers, entry_registers, shared_split
from .toolchain.binary import llir_to_ptx, ptx_to_cubin
from .toolchain.occupancy import register_cap, spill_budget, spills_within_budget


def membar_filter(op_a, op_b) -> bool:
    """No barrier after an asynchronous copy until its wait: each thread's ``cp.async`` writes land
    only at its ``cp.async.wait_group`` (membar then attributes them to that wait, whose readers do
    get a barrier), and a TMA copy's only at its mbarrier's completion, so nothing between the copy
    and the wait can race with them (the seed's backend membar rule, which also covers two copies
    in a row)."""
    return isinstance(op_a, ASYNC_COPIES)


def ttgir_passes(target, options) -> list:
    """The whole TTGIR pass list for ``target``, in order: the core's layout passes, then the
    tensor-core path (accelerate-matmul onto ``nvidia_mma``, the software pipeline, asynchronous
    operand loads and dot waits, TMA stores).  From sm_80 the pipeline also stages the loaded
    operands of FMA dots (``fma_operand_buffer``) through ``cp.async``, as Triton does.
    ``finalize_ttgir`` follows (allocation, the after-allocation passes, membar)."""
    own_tiles = [tma.OwnStoreTiles(options.num_stages)] if options.defer_store_waits and options.own_store_tiles else []
    return [
        *core_ttgir_passes(target, options),  # decompose dot_scaled/bf16x3, convert-to-ttgir, coalesce, ...
        *([LongestProgramsFirst()] if options.longest_first else []),  # causal grids: long programs first
        AccelerateMatmul(capability(target), options.num_warps), RemoveLayoutConversions(), CSE(), DCE(),
        *own_tiles,  # a persistent loop's TMA store keeps bytes of its own (option own_store_tiles)
        Pipeline(options.num_stages, shared_budget=PIPELINE_SHARED_BUDGET, spare_slot=wants_spare_slot,
                 late_refill=wants_late_refill, spare_refill=spare_refill, descriptor_copy=tma.descriptor_copy(target),
                 spare_pays=spare_pays(capability(target)),
                 stream_buffer=stream_buffer if options.stream_loads else None, scratch_rules=tma.SCRATCH_SIZES,
                 operand_buffer=fma_operand_buffer if capability(target) >= 80 else None),
        tma.TilesIntoShared(target),  # a descriptor tile loaded only into shared memory: one copy into it
        DeviceTensorMaps(options.num_stages),  # tl.make_tensor_descriptor's maps, in global scratch
        PointerOffsets(),
        *([AsyncOperandLoads()] if options.async_operand_loads else []),
        AsyncDotWaits(), *([OverlapDots(options.num_warps)] if options.overlap_dots else []),
        tma.StoreTilesInPlace(), tma.AcquireMapsOnce(),
        *([TilePrefetch()] if options.tile_prefetch else []),  # a persistent loop's next tile loads early
        WarpSpecialize(capability(target), options.num_warps, options.pingpong),  # tl.range(..., warp_specialize=True)
        CSE(), DCE(),
    ]


def after_allocation_passes(target, options) -> list:
    """Copies of the engine get a proxy fence only where an ordinary access of their bytes may come
    first (``tma.UnfencedCopies``); TMA stores wait for their reads only where a buffer is reused
    (``tma.DeferStoreWaits``, option ``defer_store_waits``; options of another type, a bare
    ``Options`` in a test, take the default)."""
    return [tma.UnfencedCopies()] + ([tma.DeferStoreWaits()] if getattr(options, "defer_store_waits", True) else [])


def stream_buffer(load):
    """The pipeline's rule for a pipelined loop's loads into registers (``Pipeline(stream_buffer=)``):
    elements of 32 or 64 bits, so that every element is at least one ``cp.async`` of 4 bytes (Triton
    pipelines such a load when a thread's contiguous part is 32 bits or more), into plain slots
    (no swizzle: the reads back are per element, in whatever layout the users want)."""
    t = load.result.type
    ety = t.element_type
    if not isinstance(ety, (AnyFloat, IntegerType)) or bit_width(ety) not in (32, 64):
        return None
    rank = len(t.get_shape())
    order = getattr(t.encoding, "order", None)
    order = list(order) if order is not None and len(order) == rank else list(reversed(range(rank)))
    return SwizzledSharedEncodingAttr(1, 1, 1, order)


#: shared memory the pipeline's buffers may take for their spare slot (sm_80/sm_90 give a block up
#: to 227 KB; the rest is left for conversions and reductions after the loop, which reuse it)
PIPELINE_SHARED_BUDGET = 200 * 1024


def make_ttgir(module, metadata, target, options):
    prepare_ttgir(module, options)
    PassManager("ttgir", ttgir_passes(target, options)).run(module)
    # scratch rules, after-allocation passes and the barrier rule: through the plugin's hooks
    module = finalize_ttgir(module, target, options)
    consumer_barriers(module)  # after membar: a warp-specialized loop's consumers pass their own barriers
    cluster_pairs(module, capability(target), options)  # after membar: the refills' barrier is known
    metadata["threads_per_warp"] = options.threads_per_warp
    return module


def map_templates(module) -> list[dict]:
    """Number the module's ``ttng.tensormap_create`` ops (``MAP_TEMPLATE``) and describe the map
    template each starts from, for the driver to encode at load time (``metadata``'s
    ``tensormap_templates``)."""
    out = []
    for op in module.walk():
        if isinstance(op, TensorMapCreateOp):
            op.attributes[MAP_TEMPLATE] = IntegerAttr(len(out), i32)
            out.append({"name": template_name(len(out)), "elem_type": op.code("elem_type"), "box_dim": op.box_dim,
                        "swizzle_mode": op.code("swizzle_mode"), "fill_mode": op.code("fill_mode")})
    return out


def make_llir(module, metadata, target, options):
    templates = map_templates(module)
    if templates:
        metadata["tensormap_templates"] = templates
    # a warp-specialized kernel starts from a known register count (a user's ``maxnreg`` wins)
    maxnreg = options.maxnreg if options.maxnreg is not None else entry_registers(module)
    info = NVIDIATargetInfo(capability(target), maxnreg, options.num_ctas, options.enable_reflect_ftz,
                            options.ptx_version)
    paired = mark_pairs(module, capability(target), options.num_warps, options.num_ctas)
    text, meta = lower_to_llvm(module, info, options)
    metadata.update(name=meta["name"], shared=meta["shared"], num_warps=meta["num_warps"],
                    threads_per_warp=meta["threads_per_warp"], num_ctas=options.num_ctas,
                    global_scratch_size=meta["global_scratch_size"], global_scratch_align=meta["global_scratch_align"])
    if CLUSTER_PAIRS in module.attributes:
        metadata["cluster_pairs"] = True
    if paired:
        metadata["pair_programs"] = True
    return text


def machine_arch(target) -> str:
    """The architecture code is generated for: Hopper gets its arch-specific variant (``sm_90a``:
    wgmma, setmaxnreg), which runs on every sm_90 device, as Triton does."""
    return "90a" if capability(target) == 90 else str(target.arch)


def make_ptx(llir, metadata, target, options):
    return llir_to_ptx(llir, machine_arch(target), enable_fp_fusion=options.enable_fp_fusion,
                       ptx_version=options.ptx_version, ftz=options.enable_reflect_ftz)


def make_cubin(ptx, metadata, target, options):
    cubin = ptx_to_cubin(ptx, machine_arch(target), metadata["name"], enable_fp_fusion=options.enable_fp_fusion,
                         maxnreg=options.maxnreg, metadata=metadata)
    # One more block an SM, where registers alone stand in its way: the kernel assembled again
    # for it, kept if it spills nothing (a few words from two blocks or fewer).  Not where the
    # user pinned the registers (maxnreg) nor for clusters.
    if not options.occupancy_cap or options.maxnreg is not None or options.num_ctas > 1:
        return cubin
    cc, regs, warps, shared = capability(target), metadata.get("n_regs", 0), metadata["num_warps"], metadata["shared"]
    if ".maxnreg" in ptx:
        # a warp-specialized kernel (its split pinned): the split for two blocks an SM
        split = shared_split(cc, warps, shared)
        trial_ptx = _with_split(ptx, split) if split is not None else None
        found = dict(ws_blocks_per_sm=split.blocks, unshared_regs=regs) if split is not None else {}
    else:
        cap = register_cap(cc, regs, warps, shared)
        trial_ptx = _with_cap(ptx, cap) if cap is not None else None
        found = dict(register_cap=cap, uncapped_regs=regs)
    if trial_ptx is None:
        return cubin
    trial = dict(metadata)
    try:
        trial_cubin = ptx_to_cubin(trial_ptx, machine_arch(target), metadata["name"],
                                   enable_fp_fusion=options.enable_fp_fusion, metadata=trial)
    except RuntimeError:  # an instruction needs more (C7602: a wgmma's accumulator registers)
        return cubin
    if not spills_within_budget(trial.get("resources", {}).get(metadata["name"]), spill_budget(cc, regs, warps, shared)):
        return cubin
    metadata.update(trial, **found)
    return trial_cubin


def _with_cap(ptx: str, cap: int) -> str | None:
    """``ptx`` with the entry's ``.maxnreg`` set to ``cap`` (ptxas leaves --maxrregcount to kernels
    with ``.maxntid``), or None for a kernel without a ``.maxntid`` line."""
    text, n = re.subn(r"^(\.maxntid [^\n]*\n)", rf"\1.maxnreg {cap}\n", ptx, count=1, flags=re.M)
    return text if n else None


def _with_split(ptx: str, split) -> str | None:
    """``ptx`` of a warp-specialized kernel with its entry ``.maxnreg`` and consumers'
    ``setmaxnreg.inc`` set to ``split``'s (None unless it has one of each)."""
    if len(re.findall(r"^\.maxnreg \d+$", ptx, flags=re.M)) != 1 or \
            len(set(re.findall(r"setmaxnreg\.inc\.sync\.aligned\.u32 (\d+);", ptx))) != 1:
        return None
    text = re.sub(r"^\.maxnreg \d+$", f".maxnreg {split.entry}", ptx, flags=re.M)
    return re.sub(r"(setmaxnreg\.inc\.sync\.aligned\.u32 )\d+;", rf"\g<1>{split.consumers};", text)


#: the stages after ``ttir``, in order
STAGES = {"ttgir": make_ttgir, "llir": make_llir, "ptx": make_ptx, "cubin": make_cubin}


def add_stages(target, stages: dict, options) -> None:
    for name, make in STAGES.items():
        stages[name] = lambda src, metadata, make=make: make(src, metadata, target, options)
