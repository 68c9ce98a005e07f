"""``tritium.compiler.compile_ir``: compiling an :class:`~tritium.compiler.source.IRSource`: which
of the backend's stages run, and the options and launch signature the IR fixes (see
:mod:`tritium.compiler.source` for the rules)."""
from __future__ import annotations

from typing import Any

from ..frontend.errors import CompilationError
from .kernel import CompiledKernel
from .source import IRSource
from .stage_runner import build
from ..ttgir.pass_lists import finalize_ttgir
from ..ttir.ir import print_module
from ..ttgir.ir import parse_module


def _source_stage(src: IRSource, backend, target, options, has_ttgir_stage: bool):
    """The first stage: the parsed module (TTGIR on a GPU backend: finalized) or the text."""
    def stage(_, metadata):
        if src.ext == "ttgir" and has_ttgir_stage:
            module = parse_module(print_module(src.module))  # a fresh copy: the source stays as read
            metadata["threads_per_warp"] = options.threads_per_warp
            return finalize_ttgir(module, target, options, backend)
        if src.module is not None:
            return parse_module(print_module(src.module))
        return src.text
    return stage


def _plan_stages(src: IRSource, backend, target, options) -> dict:
    def no_ttir(*_):
        raise AssertionError("an IR source starts after the TTIR stage")
    stages = backend.make_stages(target, options, no_ttir)
    names = list(stages)
    start = src.ext
    if start not in stages:
        if src.ext == "ttgir" and "ttir" in stages:
            start = "ttir"  # a backend without a TTGIR stage reads TTGIR as TTIR (layouts ignored)
        else:
            raise ValueError(f"the {backend.name} backend cannot start from {src.ext.upper()}: its stages are "
                             f"{', '.join(names)}")
    out = {src.ext: _source_stage(src, backend, target, options, "ttgir" in stages)}
    for name in names[names.index(start) + 1:]:
        out[name] = stages[name]
    return out


def compile_ir(src: IRSource, backend, target, opts: dict, last_stage: str | None = None) -> CompiledKernel:
    fixed = src.parse_options()
    tpw = fixed.pop("threads_per_warp", None)
    shared = int(opts.pop("shared", 0) or 0)
    opts = {**opts, **fixed}
    options = backend.parse_options(target, opts)
    if tpw is not None and tpw != options.threads_per_warp and backend.name != "interpreter":
        raise ValueError(f"{src.where}: the module is laid out for {tpw} threads per warp "
                         f"(\"ttg.threads-per-warp\"); {target} has {options.threads_per_warp}")
    runtime_sig = dict(src.signature)

    def plan():
        metadata: dict[str, Any] = {"name": src.name, "target": str(target), "backend": backend.name,
                                    "num_warps": options.num_warps, "num_stages": options.num_stages,
                                    "num_ctas": getattr(options, "num_ctas", 1), "debug": options.debug,
                                    "arg_names": list(src.arg_names),
                                    "signature": {n: src.signature[i] for i, n in enumerate(src.arg_names)},
                                    "shared": shared, "source": src.ext}
        return metadata, _plan_stages(src, backend, target, options), None

    def error(st, e):
        return CompilationError(f"compiling {src.where}: stage '{st}' for {target} failed: {type(e).__name__}: {e}",
                                filename=src.path or f"<{src.ext}>", fn_name=src.name)

    return build(backend, target, src.name, src.key(), options, runtime_sig, plan, error, last_stage)
