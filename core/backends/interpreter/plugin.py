"""The ``interpreter`` backend, registered through the same hooks as any external plugin (entry
point ``interpreter = "tritium.backends.interpreter.plugin"``).  It is the embedded default: its
device, the host CPU, is always present."""
from __future__ import annotations

from dataclasses import dataclass

from ...hooks import hookimpl
from ...hooks.types import BackendInfo, Options, ConformanceExclusion
from .driver import TARGET, InterpreterDriver, parse_binary
from ...ttir.ir import parse_module, print_module
from ...ttir.passes.fuse_nested_loops import FLATTEN_ATTR, FuseNestedLoops

TRITIUM_PLUGIN_API = 1
NAME = "interpreter"
#: target kinds compiled here: the interpreter's own and ``cpu``, the kind Triton's CPU backend
#: compiles for (PyTorch Inductor's ``cpu_backend="triton"`` asks for ``GPUTarget("cpu", ...)``)
KINDS = (TARGET.backend, "cpu")


@dataclass(frozen=True)
class InterpreterOptions(Options):
    """The common options; ``num_warps``/``num_stages`` are accepted (they take part in the cache
    key) and ignored, ``threads_per_warp`` is the target's ``warp_size``, 1.  Every fp8 format
    is supported (numpy emulates them all)."""

    threads_per_warp: int = 1
    supported_fp8_dtypes: tuple[str, ...] = ("fp8e5", "fp8e5b16", "fp8e4nv", "fp8e4b8", "fp8e4b15")


@hookimpl
def tritium_backend_info():
    return BackendInfo(name=NAME, api_version=TRITIUM_PLUGIN_API, version="0.1.0",
                       target_kinds=KINDS, targets=("interpreter",), default_target="interpreter",
                       stages=("ttir", "interp"), binary_ext="interp",
                       description="reference interpreter: runs TTIR over the grid with numpy")


@hookimpl
def tritium_device_present(backend):
    return True if backend == NAME else None


@hookimpl
def tritium_current_target(backend):
    return TARGET if backend == NAME else None


@hookimpl
def tritium_parse_target(text):
    kind, _, arch = text.partition(":")
    if kind.strip() not in KINDS:
        return None
    if arch.strip() not in ("", str(TARGET.arch)):
        raise ValueError(f"unknown interpreter architecture {arch!r}; accepted: 'interpreter', "
                         f"'interpreter:{TARGET.arch}'")
    return TARGET


@hookimpl
def tritium_parse_options(target, options):
    if target.backend not in KINDS:
        return None
    warp = target.warp_size if target.backend == TARGET.backend else TARGET.warp_size
    return InterpreterOptions.from_dict(options, threads_per_warp=warp)


def _interp_stage(src, metadata):
    """TTIR (module or text) -> the TTIR text the driver loads, its ``tt.flatten`` loop nests
    fused (fuse-nested-loops, which the GPU backends run first thing in TTGIR); records the
    kernel name.  The text is checked to parse back (falling back to MLIR's generic form, which always does), and the
    parsed module is kept for the driver's ``load_binary`` in this process."""

    if isinstance(src, (str, bytes)):
        text = src if isinstance(src, str) else src.decode()
        if FLATTEN_ATTR in text:  # loop nests marked for flattening run fused, as on a GPU
            src = parse_module(text)
    if isinstance(src, (str, bytes)):
        module = parse_binary(text)
    else:
        FuseNestedLoops().run(src)
        text = print_module(src)
        try:
            module = parse_binary(text)
        except Exception:
            text = print_module(src, generic=True)
            module = parse_binary(text)
    funcs = [op for op in module.ops if op.name == "tt.func"]
    public = [f for f in funcs if not f.sym_visibility or f.sym_visibility.data == "public"]
    if public and "name" not in metadata:
        metadata["name"] = public[0].sym_name.data
    metadata.setdefault("shared", 0)
    return text


@hookimpl
def tritium_add_stages(target, stages, options):
    if target.backend not in KINDS:
        return None
    stages["interp"] = _interp_stage
    return True


@hookimpl
def tritium_driver(backend):
    return InterpreterDriver() if backend == NAME else None


@hookimpl
def tritium_conformance_exclusions(backend, target):
    if backend != NAME:
        return None
    reason = "inline assembly is written for a GPU target ({}); the interpreter rejects inline_asm_elementwise " \
             "at the call's line"
    return [ConformanceExclusion("inline_asm/*", reason.format("PTX here")),
            ConformanceExclusion("inline_asm_amdgcn/*", reason.format("AMDGCN here")),
            # Triton's interpreter declares min_dot_size (1, 1, 1): the bound is a GPU target's
            ConformanceExclusion("errors/dot-too-small", "the interpreter has no smallest dot (as Triton's "
                                 "interpreter: min_dot_size (1, 1, 1)), so the 8x8x8 fp16 dot is accepted and "
                                 "computed; a GPU target rejects K < 16")]
