"""The ``amd`` backend's hook implementations (entry point ``tritium.amd``).

Nothing here imports hip-python: the driver module does so on first use, so the plugin loads and
compiles on machines without ROCm (compile-only mode)."""
from __future__ import annotations

from tritium.hooks import BackendInfo, hookimpl

from . import __version__
from .options import ARCHS, TARGET_KIND, parse_options, parse_target

TRITIUM_PLUGIN_API = 1
BACKEND = "amd"

_driver = None


def _get_driver():
    global _driver
    if _driver is None:
        from .driver import HipDriver
        _driver = HipDriver()
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
        targets=tuple(f"hip:{a}" for a in ARCHS),
        default_target="hip:gfx942",
        stages=("ttir", "ttgir", "llir", "amdgcn", "hsaco"),
        binary_ext="hsaco",
        description="AMD GPUs (CDNA2/3 wave64 with MFMA, RDNA3 wave32 with WMMA): AMDGCN through "
                    "LLVM's AMDGPU target, hsaco linked by ld.lld, launched with hip-python",
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
    from .encodings import AMD_ENCODINGS
    return list(AMD_ENCODINGS)


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
