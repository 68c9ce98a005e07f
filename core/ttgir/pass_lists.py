"""The shared TTGIR pipeline.  A plugin's ``ttgir`` stage calls :func:`make_ttgir`, runs its own
passes (accelerate-matmul, pipelining, ...) and then :func:`finalize_ttgir`, which asks the
plugin's hooks for its scratch rules, after-allocation passes and barrier rule.
Each piece is also exposed as a pass object (``tritium.passes`` interface) for custom pipelines."""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from ..hooks.manager import backend_for_target_or_none
from ..passes import PassManager
from ..ttir.passes.cse import CSE
from ..ttir.passes.dce import DCE
from ..ttir.passes.fuse_nested_loops import FuseNestedLoops
from .dialect import ensure_plugin_encodings
from .passes.allocate_global_scratch import AllocateGlobalScratch
from .passes.allocate_shared_memory import AllocateSharedMemory
from .passes.coalesce import Coalesce
from .passes.convert_to_ttgir import ConvertToTTGIR
from .passes.decompose_bf16_dot import DecomposeBf16Dot
from .passes.decompose_scaled_dot import DecomposeScaledDot
from .passes.fma_operands import FmaOperandsThroughShared
from .passes.membar import Membar
from .passes.optimize_thread_locality import OptimizeThreadLocality
from .passes.remove_layout_conversions import RemoveLayoutConversions
from .passes.separable_reductions import SeparableReductions
from .layouts import SCRATCH_LIMIT_ATTR


def _opt(options, key: str, default):
    if isinstance(options, dict):
        return options.get(key, default)
    return getattr(options, key, default)


def ttgir_passes(target, options) -> list:
    """decompose-scaled-dot (unless the backend's options declare ``native_dot_scaled``),
    decompose-bf16-dot (fp32 dots with ``input_precision`` bf16x3/bf16x6 as bf16 dots),
    fuse-nested-loops (a ``tt.flatten`` loop nest becomes one loop, unless its inner loop computes
    dots and the options do not declare ``pipelines_fused_nests``), convert-to-ttgir, coalesce,
    remove-layout-conversions, optimize-thread-locality, cse, dce."""
    tpw = _opt(options, "threads_per_warp", None) or getattr(target, "warp_size", None)
    if tpw is None:
        raise ValueError("threads_per_warp must come from the target (warp_size) or the options")
    first = [] if _opt(options, "native_dot_scaled", False) else [DecomposeScaledDot()]
    # a nest whose inner loop feeds dots stays a nest where the backend's pipeliner takes only the
    # inner loop (FuseNestedLoops.keep_dot_nests)
    fuse = FuseNestedLoops(keep_dot_nests=not _opt(options, "pipelines_fused_nests", False))
    return [*first, DecomposeBf16Dot(), fuse,
            ConvertToTTGIR(_opt(options, "num_warps", 4), tpw, _opt(options, "num_ctas", 1), str(target)),
            Coalesce(), RemoveLayoutConversions(), OptimizeThreadLocality(), CSE(), DCE()]


def set_scratch_limit(module: ModuleOp, options) -> None:
    """Bound the scratch of one layout conversion by the options' ``convert_scratch_limit`` (bytes;
    a target with little shared memory declares it, and larger conversions go through it in row
    slices).  Both :func:`make_ttgir` and :func:`finalize_ttgir` apply it, so a module that starts
    as TTGIR text (``tritium.compile("k.ttgir")``) gets the same bound as one from the frontend."""
    from xdsl.dialects.builtin import IntegerAttr
    limit = _opt(options, "convert_scratch_limit", None)
    if limit and SCRATCH_LIMIT_ATTR not in module.attributes:
        module.attributes[SCRATCH_LIMIT_ATTR] = IntegerAttr(int(limit), 32)


def prepare_ttgir(module: ModuleOp, options) -> ModuleOp:
    """What a ``ttgir`` stage does before its passes: every plugin's encodings known to the
    ``ttg`` dialect, the conversion scratch bound on the module."""
    ensure_plugin_encodings()
    set_scratch_limit(module, options)
    return module


def make_ttgir(ttir_module: ModuleOp, target, options) -> ModuleOp:
    """The core's TTGIR passes alone (:func:`ttgir_passes`); a backend's stage runs them and its
    own as one list (``prepare_ttgir``, ``PassManager``, ``finalize_ttgir``)."""
    prepare_ttgir(ttir_module, options)
    PassManager("ttgir", ttgir_passes(target, options)).run(ttir_module)
    return ttir_module


def finalize_ttgir(module: ModuleOp, target, options, backend=None) -> ModuleOp:
    """fma-operands-through-shared, separable-reductions, allocate-shared-memory,
    allocate-global-scratch, the backend's after-allocation passes (they see every buffer's
    offset), then membar (``ttg.shared`` is then on the module).

    Everything backend-specific comes through the hooks of ``backend`` (the contract's
    :class:`~tritium.hooks.backend.InstalledBackend` owning ``target``, looked up when not given): its
    scratch rules (``tritium_scratch_sizes``), its after-allocation passes and its barrier rule
    (``tritium_membar_filter``).  A kernel from Python and a ``.ttgir`` file run this same list."""
    backend = backend if backend is not None else backend_for_target_or_none(target)
    rules = backend.scratch_sizes(target) if backend is not None else {}
    after = backend.after_allocation_passes(target, options) if backend is not None else []
    rule = backend.membar_filter(target) if backend is not None else None
    set_scratch_limit(module, options)
    PassManager("ttgir-finalize", [FmaOperandsThroughShared(), SeparableReductions(), AllocateSharedMemory(rules),
                                   AllocateGlobalScratch(), *after, Membar(rule, rules)]).run(module)
    return module
