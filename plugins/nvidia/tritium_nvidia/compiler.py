"""The NVIDIA compilation stages: ``ttir -> ttgir -> llir -> ptx -> cubin``.

``ttgir`` runs the shared TTGIR pipeline with the target's warp size; ``llir`` the shared lowering
with :class:`NVIDIATargetInfo`; ``ptx`` LLVM's NVPTX backend (libdevice linked when used);
``cubin`` nvJitLink or ptxas.  Every stage records what the driver needs in ``metadata``."""
from __future__ import annotations

from .options import capability


def membar_filter(op_a, op_b) -> bool:
    """No NVIDIA-specific exemption yet (asynchronous copies are not generated): barrier whenever
    the shared-memory accesses conflict."""
    return False


def make_ttgir(target, options):
    def stage(module, metadata):
        from tritium.ttgir.pipeline import finalize_ttgir, make_ttgir as _make
        # importing the lowering registers its scratch sizes with the allocation pass
        import tritium.conversion.ttgir_to_llvm  # noqa: F401
        from tritium.conversion.ttgir_to_llvm import reduce, scan, shape_ops  # noqa: F401
        module = _make(module, target, options)
        module = finalize_ttgir(module, target, options, membar_filter)
        metadata["threads_per_warp"] = options.threads_per_warp
        return module
    return stage


def make_llir(target, options):
    def stage(module, metadata):
        from tritium.conversion.ttgir_to_llvm import lower_to_llvm
        from .target_info import NVIDIATargetInfo
        text, meta = lower_to_llvm(module, NVIDIATargetInfo(capability(target)), options)
        metadata.update(name=meta["name"], shared=meta["shared"], num_warps=meta["num_warps"],
                        threads_per_warp=meta["threads_per_warp"])
        return text
    return stage


def make_ptx(target, options):
    def stage(llir, metadata):
        from .binary import llir_to_ptx
        return llir_to_ptx(llir, target.arch, enable_fp_fusion=options.enable_fp_fusion,
                           ptx_version=options.ptx_version)
    return stage


def make_cubin(target, options):
    def stage(ptx, metadata):
        from .binary import ptx_to_cubin
        return ptx_to_cubin(ptx, target.arch, metadata["name"], enable_fp_fusion=options.enable_fp_fusion,
                            maxnreg=options.maxnreg, metadata=metadata)
    return stage


def add_stages(target, stages: dict, options) -> None:
    stages["ttgir"] = make_ttgir(target, options)
    stages["llir"] = make_llir(target, options)
    stages["ptx"] = make_ptx(target, options)
    stages["cubin"] = make_cubin(target, options)
