"""The toy backend's plugin object: its targets, options, stages, barrier rule and driver."""
from __future__ import annotations

from tritium.hooks import BackendInfo, BackendPlugin, ConformanceExclusion, GPUTarget, Options

TRITIUM_PLUGIN_API = 1
KIND = "toy"
WARP_SIZE = 32


def conservative(op_a, op_b) -> bool:
    """Every shared-memory conflict gets a barrier (the toy has no asynchronous copies)."""
    return False


class ToyPlugin(BackendPlugin):
    TRITIUM_PLUGIN_API = TRITIUM_PLUGIN_API
    info = BackendInfo(name="toy", api_version=TRITIUM_PLUGIN_API, version="0.1.0", target_kinds=(KIND,),
                       targets=("toy:1",), default_target="toy:1", stages=("ttir", "ttgir", "llir"),
                       binary_ext="llir", description="compile-only test backend: LLVM IR for a 32-lane SIMT machine")

    def __init__(self):
        super().__init__()
        #: (target, ...) per call of the barrier-rule hook, for tests that count them
        self.membar_calls: list = []

    def parse_target(self, text):
        arch = str(text).partition(":")[2].strip()
        if arch != "1":
            raise ValueError(f"toy architectures: 1; got {arch!r}")
        return GPUTarget(KIND, 1, WARP_SIZE)

    def parse_options(self, target, options):
        num_ctas = options.get("num_ctas", 1)
        if num_ctas not in (None, 1):
            raise ValueError(f"num_ctas must be 1 on the toy target (no thread-block clusters), got {num_ctas!r}")
        return Options.from_dict(options, threads_per_warp=target.warp_size)

    def add_stages(self, target, stages, options):
        from . import compiler
        stages["ttgir"] = lambda src, md: compiler.make_ttgir(src, md, target, options)
        stages["llir"] = lambda src, md: compiler.make_llir(src, md, options)

    def membar_filter(self, target):
        self.membar_calls.append(target)
        return conservative

    def make_driver(self):
        from .driver import ToyDriver
        return ToyDriver()

    def conformance_exclusions(self, target):
        asm = "inline assembly is written for one instruction set; the toy target has none"
        other_ir = "TTGIR written for another vendor's layouts and ops (its plugin's own cases)"
        return [
            ConformanceExclusion("inline_asm/*", asm),
            ConformanceExclusion("inline_asm_amdgcn/*", asm),
            ConformanceExclusion("ir_files/nvidia-*", other_ir),
            ConformanceExclusion("ir_files/amd-*", other_ir),
            ConformanceExclusion("errors/dot-too-small", "the toy target has no smallest dot (Options' default "
                                 "min_dot_size), so the 8x8x8 dot is accepted"),
        ]


plugin = ToyPlugin()
