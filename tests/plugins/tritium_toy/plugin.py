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
        from tritium.hooks.manager import layout_encodings
        asm = "inline assembly is written for one instruction set; the toy target has none"
        fp8 = "the toy's options support the fp8 formats fp8e5 and fp8e4nv only; the kernel is rejected"
        out = [
            ConformanceExclusion("inline_asm/*", asm),
            ConformanceExclusion("inline_asm_amdgcn/*", asm),
            # CDNA's layouts are for 64-lane wavefronts; NVIDIA's are for 32 lanes, as the toy's,
            # and compile wherever the NVIDIA plugin has registered them
            ConformanceExclusion("ir_files/amd-*", "CDNA's amd_mfma layouts are laid out for 64-lane wavefronts"),
            *[ConformanceExclusion(f"{cat}/*{fmt}*", fp8) for cat in ("casts", "fp8_storage")
              for fmt in ("fp8e4b15", "fp8e4b8", "fp8e5b16")],
            ConformanceExclusion("clusters/*", "the toy target has no thread-block clusters (num_ctas must be 1)"),
            # the toy's math library is the portable set (target_info.map_extern): libdevice's directed
            # roundings, fast approximations, conversions and bit tricks are rejected at the call
            *[ConformanceExclusion(f"libdevice/{pattern}", "not in the toy's math library; rejected at the call")
              for pattern in ("*_r[nzdu]-*", "fast_*", "float2int_*", "int2float_*", "float_as_int", "llrint-*",
                              "clz-*", "popc-*", "ffs-*", "brev-*", "mulhi-*", "saturatef-*")],
            ConformanceExclusion("errors/dot-too-small", "the toy target has no smallest dot (Options' default "
                                 "min_dot_size), so the 8x8x8 dot is accepted"),
        ]
        if not any(getattr(enc, "name", "") == "ttg.nvidia_mma" for enc in layout_encodings()):
            out.append(ConformanceExclusion("ir_files/nvidia-*", "NVIDIA's layouts parse only where its plugin is "
                                            "installed"))
        if not any(getattr(enc, "name", "") == "ttg.amd_wmma" for enc in layout_encodings()):
            out.append(ConformanceExclusion("ir_files/rdna-*", "RDNA3's layouts parse only where the AMD plugin "
                                            "is installed"))
        return out


plugin = ToyPlugin()
