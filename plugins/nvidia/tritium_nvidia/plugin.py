"""The ``nvidia`` backend's plugin object (entry point ``tritium.nvidia``): it declares its targets
once (``info``) and implements what is NVIDIA's; :class:`tritium.hooks.BackendPlugin` answers the
hooks, returning ``None`` for other backends and targets."""
from __future__ import annotations

from tritium.hooks import BackendInfo, BackendPlugin

from . import __version__
from .options import TARGET_KIND, TARGETS, WARP_SIZE, parse_options, parse_target
from .toolchain import tools

TRITIUM_PLUGIN_API = 1
BACKEND = "nvidia"


class NvidiaPlugin(BackendPlugin):
    TRITIUM_PLUGIN_API = TRITIUM_PLUGIN_API
    info = BackendInfo(
        name=BACKEND,
        api_version=TRITIUM_PLUGIN_API,
        version=__version__,
        target_kinds=(TARGET_KIND,),
        targets=TARGETS,
        default_target="cuda:90",
        stages=("ttir", "ttgir", "llir", "ptx", "cubin"),
        binary_ext="cubin",
        description="NVIDIA GPUs (sm_80+): PTX through LLVM's NVPTX target, cubin through "
                    "nvJitLink or ptxas, launched with cuda-python",
    )

    # the target and option parsers are plain functions of the options module
    parse_target = staticmethod(parse_target)
    parse_options = staticmethod(parse_options)

    def add_stages(self, target, stages, options):
        from .compiler import add_stages
        add_stages(target, stages, options)

    def make_driver(self):
        from .runtime.driver import CudaDriver
        return CudaDriver()

    def layout_encodings(self):
        from .passes import dialect  # noqa: F401  (registers the ttng ops, so NVIDIA TTGIR text parses)
        from .passes.encodings import ENCODINGS
        return ENCODINGS

    def membar_filter(self, target):
        from .compiler import membar_filter
        return membar_filter

    def scratch_sizes(self, target):
        from .passes.tma import SCRATCH_SIZES
        return SCRATCH_SIZES

    def after_allocation_passes(self, target, options):
        from .compiler import after_allocation_passes
        return after_allocation_passes(target, options)

    def toolchain_hash(self, target):
        """The assembler that turns the PTX into a cubin, with its version (ptxas: and its path):
        two assemblers, or two versions of one, make different machine code from the same PTX."""
        return f"assembler={tools.assembler_identity()}"

    def tensor_descriptor_map(self, target, descriptor):
        return _tensor_maps().tensor_map(target, descriptor, self.driver())

    def device_tensor_descriptor(self, target, options, element, block_shape, padding):
        return _tensor_maps().device_map_alignment(target, options, element, block_shape, padding)

    def tensor_descriptor_mapper(self, target):
        return _tensor_maps().mapper(target, self.driver())

    def conformance_exclusions(self, target):
        from .exclusions import exclusions
        return exclusions(target, self.driver)


def _tensor_maps():
    """``runtime/tensor_map``, imported when a descriptor first needs it (not at plugin load)."""
    from .runtime import tensor_map
    return tensor_map


nvidia_plugin = NvidiaPlugin()

__all__ = ["NvidiaPlugin", "TRITIUM_PLUGIN_API", "WARP_SIZE", "nvidia_plugin"]
