"""The toy stages: ``ttgir`` (the core's TTGIR pipeline; the toy has no passes of its own) and
``llir`` (the core's lowering with :class:`ToyTargetInfo`)."""
from __future__ import annotations

from tritium.conversion.ttgir_to_llvm import lower_to_llvm
from tritium.ttgir.pass_lists import finalize_ttgir, make_ttgir as core_ttgir

from .target_info import ToyTargetInfo


def make_ttgir(module, metadata, target, options):
    module = core_ttgir(module, target, options)
    # allocation (with the core's scratch rules) and membar (with this plugin's rule, asked
    # through its hook) run in the core's finalize, as on every backend
    module = finalize_ttgir(module, target, options)
    metadata["threads_per_warp"] = options.threads_per_warp
    return module


def make_llir(module, metadata, options):
    text, meta = lower_to_llvm(module, ToyTargetInfo(), options)
    metadata.update(name=meta["name"], shared=meta["shared"], num_warps=meta["num_warps"],
                    threads_per_warp=meta["threads_per_warp"])
    return text
