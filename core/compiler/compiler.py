"""``tritium.compiler.compiler``: the front door (Triton's ``triton.compiler.compiler``).

:func:`compile` takes a source (an :class:`ASTSource`, a ``@jit`` function with a signature, or IR:
an :class:`IRSource`, a path or the text) and a target, and returns a :class:`CompiledKernel`
holding every stage's text (``kernel.asm["ttir"]``) and a launcher; :func:`compile_specialized` is
the JIT's way in, from the key parts of a launch's arguments.  A Python kernel's stages are
planned here (:func:`compile_ast`), an IR kernel's in :mod:`tritium.compiler.compile_ir`; both run
through :func:`tritium.compiler.stage_runner.build` and its cache.  ``ASTSource``, ``IRSource``
and ``CompiledKernel`` are importable from here too, as from Triton's module of this name."""
from __future__ import annotations

import os
from typing import Any

from .. import knobs as _knobs
from ..frontend.errors import CompilationError
from .compile_ir import compile_ir
from .kernel import CompiledKernel
from .source import ASTSource, IRSource, decode_key_parts, runtime_leaves
from .stage_runner import build
from ..hooks import manager
from ..hooks.types import GPUTarget
from ..frontend.generator import ast_to_ttir
from ..ttir.pass_lists import optimize_ttir
from ..backends.compiler import BaseBackend
from ..runtime.cache import triton_key as key


def compile(src, target=None, options: dict | None = None, *, signature: dict | None = None,
            constexprs: dict | None = None, attrs: dict | None = None, stage: str | None = None, **kw):
    """Compile ``src`` for ``target`` (``"cuda:90"``, a ``GPUTarget``, or None for the default
    backend's current target).  ``src`` is an ``ASTSource``, a ``@jit`` function with
    ``signature=``/``constexprs=``, or IR: an ``IRSource``, a path to a ``.ttir``/``.ttgir``/
    ``.llir``/``.ptx`` file, or such text (:class:`~tritium.compiler.source.IRSource`).  Returns a
    ``CompiledKernel`` whose ``.asm`` has every stage run (up to ``stage``)."""
    if isinstance(src, (str, os.PathLike)):
        src = IRSource(src)
    elif not isinstance(src, (ASTSource, IRSource)):
        if signature is None:
            raise TypeError("compile(fn, ...) needs signature= (parameter name -> type string)")
        src = ASTSource(src, signature, constexprs, attrs)
    opts = dict(options or {})
    opts.update(kw)
    if target is None:
        backend = manager.select_backend(None, ())
        target = _knobs.arch_target(backend, backend.default_target(), opts.get("arch"))
    else:
        if isinstance(target, str):
            target = manager.parse_target(target)
        if not isinstance(target, GPUTarget):
            raise TypeError(f"target must be a string like 'cuda:90' or a GPUTarget, got {target!r}")
        backend = manager.get_plugin_manager().backend_for_target(target)
        if opts.get("arch"):  # an arch= option names the architecture compiled for
            target = _knobs.arch_target(backend, target, opts["arch"])
    if stage is not None:
        check_stage(stage, backend, target, src)
    if isinstance(src, IRSource):
        return compile_ir(src, backend, target, opts, stage)
    return compile_ast(src, backend, target, opts, stage)


def check_stage(stage, backend, target, src=None) -> None:
    """``stage`` must name one of the backend's stages (or an IR source's own): a typo would
    otherwise run every stage and say nothing."""
    known = list(backend.info.stages)
    ext = getattr(src, "ext", None)
    if ext and ext not in known:
        known.insert(0, ext)
    if stage not in known:
        raise ValueError(f"unknown stage {stage!r} for {target}: the {backend.name} backend's stages are "
                         f"{', '.join(known)}")


def compile_specialized(fn, bound, key_parts, backend, target, opts) -> CompiledKernel:
    """The JIT path: build the ASTSource for these launch arguments and compile it."""
    signature, constexprs, attrs = decode_key_parts(fn, bound, key_parts)
    if target is None:
        target = backend.default_target()
    elif isinstance(target, str):
        target = manager.parse_target(target)
    # the arch= option, else knobs.runtime.override_arch (TRITON_OVERRIDE_ARCH), names the architecture
    target = _knobs.arch_target(backend, target, opts.get("arch") if opts else None)
    src = ASTSource(fn, signature, constexprs, attrs)
    return compile_ast(src, backend, target, opts)


# --- a Python kernel's stages -----------------------------------------------------------------------

def _ttir_stage(src: ASTSource, target, options):
    def stage(_, metadata):
        module = ast_to_ttir(src.fn, src.signature, src.constexprs, src.attrs, options, target, kernel_name=src.name)
        metadata["name"] = src.name
        return optimize_ttir(module, options)
    return stage


def compile_ast(src: ASTSource, backend, target, opts: dict, last_stage: str | None = None) -> CompiledKernel:
    """Compile a ``@jit`` function's specialization: the core's TTIR stage, then the backend's."""
    options = backend.parse_options(target, opts)
    if src.fn.debug is not None and "debug" not in opts:
        import dataclasses
        options = dataclasses.replace(options, debug=bool(src.fn.debug))
    if not options.debug and _knobs.runtime.debug:  # TRITON_DEBUG=1: device asserts in every kernel
        import dataclasses
        options = dataclasses.replace(options, debug=True)
    name = src.name
    leaves = runtime_leaves(src.signature, src.fn.arg_names)
    runtime_sig = {i: t for i, (n, t) in enumerate(leaves)}

    def plan():
        metadata: dict[str, Any] = {"name": name, "target": str(target), "backend": backend.name,
                                    "num_warps": options.num_warps, "num_stages": options.num_stages,
                                    "num_ctas": getattr(options, "num_ctas", 1), "debug": options.debug,
                                    "arg_names": [n for n, _ in leaves],
                                    "signature": {n: t for n, t in src.signature.items()}}
        ttir = _ttir_stage(src, target, options)
        try:
            stages = backend.make_stages(target, options, ttir)
        except ValueError:
            if last_stage != "ttir":
                raise
            stages = {"ttir": ttir}  # TTIR does not depend on the backend's later stages
        return metadata, stages, src

    def error(st, e):
        return CompilationError(f"internal compiler error in stage '{st}' for {target}: {type(e).__name__}: {e}",
                                filename=src.fn.file, lineno=src.fn.file_position(src.fn.parse())[0], fn_name=name)

    kernel = build(backend, target, name, src.key(), options, runtime_sig, plan, error, last_stage)
    kernel.src = src
    return kernel


# --- Triton's ``triton.compiler.compiler`` names ----------------------------------------------------
def make_backend(target):
    """The installed backend compiling for ``target`` (a ``GPUTarget`` or ``"cuda:90"``), as Triton's
    ``make_backend``: ``make_backend(t).parse_options({})`` is that backend's options object."""
    return BaseBackend(target)


def triton_key() -> str:
    """Changes whenever the compiler does (Triton's ``triton_key``; Inductor keys its caches on it)."""
    return key()
