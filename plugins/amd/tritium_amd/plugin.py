"""The ``amd`` backend's plugin object (entry point ``tritium.amd``): it declares its targets once
(``info``) and implements what is AMD's; :class:`tritium.hooks.BackendPlugin` answers the hooks,
returning ``None`` for other backends and targets.

Nothing here imports hip-python: the driver module does so on first use, so the plugin loads and
compiles on machines without ROCm (compile-only mode)."""
from __future__ import annotations

from tritium.hooks import BackendInfo, BackendPlugin

from . import __version__
from .options import ARCHS, TARGET_KIND, parse_options, parse_target
from .toolchain import tools

TRITIUM_PLUGIN_API = 1
BACKEND = "amd"


class AmdPlugin(BackendPlugin):
    TRITIUM_PLUGIN_API = TRITIUM_PLUGIN_API
    info = BackendInfo(
        name=BACKEND,
        api_version=TRITIUM_PLUGIN_API,
        version=__version__,
        target_kinds=(TARGET_KIND,),
        targets=tuple(f"hip:{a}" for a in ARCHS),
        default_target="hip:gfx942",
        stages=("ttir", "ttgir", "llir", "amdgcn", "hsaco"),
        binary_ext="hsaco",
        description="AMD GPUs (CDNA2/3 wave64 with MFMA, RDNA3 wave32 with WMMA): AMDGCN through "
                    "LLVM's AMDGPU target, hsaco linked by ld.lld, launched with hip-python",
    )

    # the target and option parsers are plain functions of the options module
    parse_target = staticmethod(parse_target)
    parse_options = staticmethod(parse_options)

    def add_stages(self, target, stages, options):
        from .compiler import add_stages
        add_stages(target, stages, options)

    def make_driver(self):
        from .runtime.driver import HipDriver
        return HipDriver()

    def layout_encodings(self):
        from .passes.encodings import AMD_ENCODINGS
        return list(AMD_ENCODINGS)

    def membar_filter(self, target):
        from .compiler import membar_filter
        return membar_filter

    def scratch_sizes(self, target):
        from .passes.shared_layout import convert_scratch
        return {"ttg.convert_layout": convert_scratch}

    def toolchain_hash(self, target):
        """The external tools a code object may pass through: the linker (every kernel) and the
        AMDGPU assembler (kernels with inline assembly), by the commands found for them."""
        found = []
        for find in (tools.find_lld, tools.find_assembler):
            try:
                found.append(find())
            except tools.ToolchainError as e:  # a bad TRITIUM_* path: the stage needing the tool says so
                found.append(f"error: {e}")
        return f"lld={found[0]} assembler={found[1]}"

    def conformance_exclusions(self, target):
        from .exclusions import exclusions
        return exclusions(target)


amd_plugin = AmdPlugin()

__all__ = ["AmdPlugin", "TRITIUM_PLUGIN_API", "amd_plugin"]
