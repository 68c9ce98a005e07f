"""The ``nvidia`` backend's hook implementations (entry point ``tritium.nvidia``)."""
from __future__ import annotations

from tritium.hooks import BackendInfo, hookimpl

from . import __version__
from .options import TARGET_KIND, WARP_SIZE, parse_options, parse_target

TRITIUM_PLUGIN_API = 1
BACKEND = "nvidia"

_driver = None


def _get_driver():
    global _driver
    if _driver is None:
        from .driver import CudaDriver
        _driver = CudaDriver()
    return _driver


def _is_ours(target) -> bool:
    return getattr(target, "backend", None) == TARGET_KIND


@hookimpl
def tritium_backend_info():
    return BackendInfo(
        name=BACKEND,
        api_version=TRITIUM_PLUGIN_API,
        version=__version__,
        target_kinds=(TARGET_KIND,),
        targets=("cuda:80", "cuda:86", "cuda:89", "cuda:90"),
        default_target="cuda:90",
        stages=("ttir", "ttgir", "llir", "ptx", "cubin"),
        binary_ext="cubin",
        description="NVIDIA GPUs (sm_80+): PTX through LLVM's NVPTX target, cubin through "
                    "nvJitLink or ptxas, launched with cuda-python",
    )


@hookimpl
def tritium_device_present(backend):
    if backend != BACKEND:
        return None
    return _get_driver().is_active()


@hookimpl
def tritium_current_target(backend):
    if backend != BACKEND:
        return None
    drv = _get_driver()
    return drv.get_current_target() if drv.is_active() else None


@hookimpl
def tritium_parse_target(text):
    return parse_target(text)


@hookimpl
def tritium_parse_options(target, options):
    if not _is_ours(target):
        return None
    return parse_options(target, dict(options))


@hookimpl
def tritium_add_stages(target, stages, options):
    if not _is_ours(target):
        return None
    from .compiler import add_stages
    add_stages(target, stages, options)
    return True


@hookimpl
def tritium_layout_encodings():
    from . import dialect  # noqa: F401  (registers the ttng ops, so NVIDIA TTGIR text parses)
    from .encodings import ENCODINGS
    return ENCODINGS


@hookimpl
def tritium_membar_filter(target):
    if not _is_ours(target):
        return None
    from .compiler import membar_filter
    return membar_filter


@hookimpl
def tritium_conformance_exclusions(backend, target):
    if backend != BACKEND:
        return None
    from .exclusions import exclusions
    return exclusions(target)


@hookimpl
def tritium_driver(backend):
    if backend != BACKEND:
        return None
    return _get_driver()


__all__ = ["TRITIUM_PLUGIN_API", "WARP_SIZE"]
