"""The AMD compilation stages: ``ttir -> ttgir -> llir -> amdgcn -> hsaco``.

``ttgir`` runs one pass list (:func:`ttgir_passes`): the shared TTGIR passes with the target's
wavefront size, then AMD's accelerate-matmul (``tt.dot`` onto ``amd_mfma`` / ``amd_wmma``), the
stream pipeliner (``num_stages``; :mod:`.passes.stream_pipeline`), then allocation and membar with
AMD's barrier rule; ``llir`` the shared lowering with :class:`AMDTargetInfo` (which also lowers the
MFMA/WMMA dots); ``amdgcn`` LLVM's AMDGPU backend (optimised IR -> assembly text); ``hsaco`` the
object from the same optimised IR, linked by ``ld.lld``.  Every stage records what the driver
and the binary checks need in ``metadata``."""
from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr

from tritium.conversion.ttgir_to_llvm import lower_to_llvm
from tritium.frontend.errors import CompilationError
from tritium.passes import PassManager
from tritium.ttgir.pass_lists import finalize_ttgir, prepare_ttgir, ttgir_passes as core_ttgir_passes
from tritium.ttgir.ops import LocalLoadOp, LocalStoreOp, MemDescIndexOp
from tritium.ttir import arith
from tritium.ttir.dot_scaled import DotScaledOp
from tritium.ttir.ops import DotOp
from tritium.ttir.passes.cse import CSE
from tritium.ttir.passes.dce import DCE

from .lowering.device_libs import link
from .lowering.device_runtime import add_device_runtime
from .lowering.target_info import AMDTargetInfo
from .options import arch_of
from .passes.accelerate_matmul import AccelerateMatmul
from .passes.epilogue_scratch import BoundEpilogueScratch
from .passes.in_thread_transpose import InThreadTranspose
from .passes.optimize_epilogue import OptimizeEpilogue
from .passes.stream_pipeline import StreamPipeline
from .toolchain.binary import assemble, emit_assembly, emit_object, has_inline_asm, link_hsaco, optimize
from .toolchain.elf import read_hsaco


class OutOfResources(CompilationError):
    """The kernel needs more of a per-workgroup resource than the target has (Triton's name, which
    the autotuner recognises to skip a configuration)."""


def _constant_slot(op):
    """(buffer, slot) when ``op`` is a ``ttg.local_store`` or ``ttg.local_load`` of slot ``c`` of a
    multi-slot buffer, ``c`` an ``arith.constant`` (the pipeline's prologue stores); else None."""
    view = op.dst if isinstance(op, LocalStoreOp) else op.src if isinstance(op, LocalLoadOp) else None
    index = view.owner if view is not None and isinstance(view.owner, MemDescIndexOp) else None
    if index is None or not isinstance(index.index.owner, arith.ConstantOp):
        return None
    value = index.index.owner.value
    return (index.src, value.value.data) if isinstance(value, IntegerAttr) else None


def membar_filter(op_a, op_b) -> bool:
    """AMD's barrier rule, given to the core's membar pass through ``tritium_membar_filter``:
    every LDS conflict the pass finds (RAW, WAR, WAW between ops) gets an ``s_barrier``, since no
    access the backend generates is ordered otherwise (no direct-to-LDS or asynchronous copies
    yet; those would be exempted here, as ``buffer_load ... lds`` completes through its own
    ``s_waitcnt``), except accesses of two different constant slots of one buffer (the prologue
    of a pipeline with ``num_stages > 2`` fills slot 0, then slot 1): those touch disjoint bytes.
    Within one wavefront the lowering's LDS round trips need no barrier either way: the core
    places them only where threads of different wavefronts exchange data."""
    a, b = _constant_slot(op_a), _constant_slot(op_b)
    return a is not None and b is not None and a[0] is b[0] and a[1] != b[1]


def _shared_bytes(module) -> int:
    return module.attributes["ttg.shared"].value.data if "ttg.shared" in module.attributes else 0


def _has_dots(module) -> bool:
    return any(isinstance(op, (DotOp, DotScaledOp)) for op in module.walk())


def sched_strategy(module, arch) -> str | None:
    """LLVM's scheduling strategy for a kernel without matrix instructions (elementwise, reductions,
    normalisations: their time is memory latency).  On CDNA the VGPR file is what bounds the
    wavefronts resident to hide it, so the fewest registers (``iterative-minreg``: the row softmax
    takes 20 VGPRs instead of 35; every conformance kernel compiles with it).  On
    RDNA3 that packing puts each transcendental's result right before its use and the wave stalls
    on it (``s_waitcnt_depctr``), so an elementwise kernel takes ``max-ilp`` (LLVM 22's
    ``iterative-ilp`` crashes on the fallback ``lgamma``).  ``max-ilp`` ranks latency above
    register pressure unconditionally, though: in the softmax row it starts the last phase's eight
    IEEE divisions at once (~5 temporaries each: VGPR file 59, Triton's 46, on any IR shape, Triton's
    own included).  So a kernel whose wavefronts exchange values through LDS, and which therefore
    runs in phases between barriers (:func:`barrier_bounds_schedule`), keeps LLVM's default, which
    weighs each choice against the region's register pressure before its latency (with the barriers
    as region bounds: 49 VGPRs, one ``s_waitcnt_depctr`` where ``max-ilp`` had two).
    Kernels with dots keep LLVM's default, which interleaves the matrix instructions with the
    loads."""
    if _has_dots(module):
        return None
    if not arch.family.startswith("rdna"):
        return "iterative-minreg"
    return None if barrier_bounds_schedule(module, arch) else "max-ilp"


def barrier_bounds_schedule(module, arch) -> bool:
    """Whether each workgroup barrier also bounds LLVM's scheduling regions (a ``sched_barrier``
    after it): RDNA3 kernels without dots that exchange values through LDS.  LLVM does not treat
    ``s_barrier`` as a region boundary, so a reduction's last phase is scheduled with the code
    before it, against that larger region's pressure (the softmax row under the default strategy:
    59 VGPRs, 49 with the bound).  Triton's code gets the same bounds from its one-lane LDS stores,
    whose EXEC-mask branches end the blocks (the division of its softmax row is one block: 46).
    Only ALU code could cross the barrier anyway (the fences pin the memory accesses), and the
    scheduler's latency model does not see the wait for the workgroup there.  Such a kernel runs
    in phases between barriers, and keeps LLVM's default strategy (:func:`sched_strategy`)."""
    return arch.family.startswith("rdna") and _shared_bytes(module) > 0 and not _has_dots(module)


def ttgir_passes(target, options) -> list:
    """The whole TTGIR pass list for ``target``, in order: the core's layout passes, then AMD's:
    accelerate-matmul (``tt.dot`` onto ``amd_mfma`` / ``amd_wmma``), in-thread-transpose,
    optimize-epilogue, the stream pipeliner (``num_stages``), CSE and DCE, and the bound on
    conversions after the loops (:mod:`.passes.epilogue_scratch`).  ``finalize_ttgir``
    follows (allocation, membar with AMD's rule)."""
    return [
        *core_ttgir_passes(target, options),  # decompose dot_scaled/bf16x3, convert-to-ttgir, coalesce, ...
        AccelerateMatmul(arch_of(target), options), InThreadTranspose(), OptimizeEpilogue(),
        StreamPipeline(options.num_stages), CSE(), DCE(), BoundEpilogueScratch(),
    ]


def make_ttgir(target, options):
    def stage(module, metadata):
        # the options' convert_scratch_limit (64 KiB of LDS) bounds each conversion's scratch
        prepare_ttgir(module, options)
        passes = ttgir_passes(target, options)
        at = next(i for i, p in enumerate(passes) if isinstance(p, StreamPipeline))
        pipeline = passes[at]
        PassManager("ttgir", passes[:at]).run(module)
        metadata["dot_lowering"] = next(p for p in passes if isinstance(p, AccelerateMatmul)).dot_lowering
        unpipelined = module.clone()  # kept for the fallback below
        PassManager("ttgir-amd", passes[at:]).run(module)
        module = finalize_ttgir(module, target, options)
        if pipeline.pipelined and _shared_bytes(module) > arch_of(target).lds_bytes:
            # the operand buffers live across the loop, beside the scratch of the conversions in
            # it: where both do not fit in LDS, the loop stays as it was
            module = finalize_ttgir(unpipelined, target, options)
        metadata["threads_per_warp"] = options.threads_per_warp
        return module
    return stage


def make_llir(target, options):
    def stage(module, metadata):
        shared = module.attributes["ttg.shared"].value.data if "ttg.shared" in module.attributes else 0
        limit = arch_of(target).lds_bytes
        if shared > limit:
            # LLVM's AMDGPU backend aborts the process on this; say it first, clearly
            raise OutOfResources(f"out of resource: shared memory (LDS), Required: {shared}, Hardware limit: "
                                 f"{limit} on {target.arch}. Reducing block sizes or `num_stages` may help.",
                                 fn_name=metadata.get("name"))
        info = AMDTargetInfo(str(target.arch), shared, options.waves_per_eu,
                             sched_strategy(module, arch_of(target)),
                             getattr(options, "allow_flush_denorm", False),
                             barrier_bounds_schedule(module, arch_of(target)))
        text, meta = lower_to_llvm(module, info, options)
        text = add_device_runtime(text)
        text, libs = link(text, info.externs, arch_of(target))
        if libs:
            metadata["device_libs"] = libs
        metadata.update(name=meta["name"], shared=meta["shared"], num_warps=meta["num_warps"],
                        threads_per_warp=meta["threads_per_warp"], global_scratch_size=meta["global_scratch_size"],
                        global_scratch_align=meta["global_scratch_align"])
        return text
    return stage


def make_amdgcn(target, options, state: dict):
    def stage(llir, metadata):
        # the hsaco stage emits its object from the same optimised IR
        state["optimized"] = optimize(llir, str(target.arch))
        return emit_assembly(state["optimized"], str(target.arch))
    return stage


def make_hsaco(target, options, state: dict):
    def stage(asm, metadata):
        optimized = state.pop("optimized")
        # inline assembly: llvmlite's LLVM has no AMDGPU assembly parser, so the object comes from
        # the assembly text through an external assembler (the same text the amdgcn stage printed)
        obj = assemble(asm, str(target.arch)) if has_inline_asm(optimized) else emit_object(optimized, str(target.arch))
        hsaco = link_hsaco(obj, metadata["name"])
        k = read_hsaco(hsaco).kernel(metadata["name"])
        metadata.update(n_regs=k.vgpr_count, n_sgprs=k.sgpr_count, n_spills=k.private_segment_fixed_size,
                        lds=k.group_segment_fixed_size)
        return hsaco
    return stage


def add_stages(target, stages: dict, options) -> None:
    state: dict = {}
    stages["ttgir"] = make_ttgir(target, options)
    stages["llir"] = make_llir(target, options)
    stages["amdgcn"] = make_amdgcn(target, options, state)
    stages["hsaco"] = make_hsaco(target, options, state)
