"""Where ``ld.lld`` comes from: the linker that turns the AMDGPU relocatable object LLVM emits
into an HSA code object (``hsaco``: a shared ELF the HIP runtime loads); and the AMDGPU assembler
that kernels with inline assembly need (:func:`find_assembler`).

Search order, first hit wins:

* ``TRITIUM_LLD_PATH`` (an ``ld.lld`` binary);
* ROCm's own: ``$ROCM_PATH/llvm/bin/ld.lld``, ``$HIP_PATH/llvm/bin/ld.lld``, ``/opt/rocm/llvm/bin/ld.lld``;
* ``ld.lld`` on ``PATH``;
* the ``ziglang`` wheel's (``python -m ziglang ld.lld``; LLVM's lld shipped with Zig).
"""
from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tritium import knobs


ZIG_PACKAGE = "ziglang"


class ToolchainError(RuntimeError):
    """A tool needed to produce an hsaco is missing; the message says what to install."""


def _rocm_roots() -> list[Path]:
    roots = [os.environ.get(v) for v in ("ROCM_PATH", "ROCM_HOME", "HIP_PATH")]
    return [Path(r) for r in roots if r] + [Path("/opt/rocm")]


def _knob(name: str):
    """(the value requested through ``tritium.knobs.amd.<name>`` or its variable, where it came from)."""
    d = knobs.amd.knob_descriptors[name]
    return d.raw(knobs.amd), d.source(knobs.amd)


def find_lld() -> tuple[str, ...] | None:
    """The command (argv prefix) running ``ld.lld``, or ``None`` when there is none."""
    return _find_lld(*_knob("lld_path"))


@functools.lru_cache(maxsize=None)
def _find_lld(env: str | None, source: str) -> tuple[str, ...] | None:
    if env:
        if not os.access(env, os.X_OK):
            raise ToolchainError(f"{source}={env!r} is not an executable file")
        return (env,)
    for root in _rocm_roots():
        c = root / "llvm" / "bin" / "ld.lld"
        if c.is_file() and os.access(c, os.X_OK):
            return (str(c),)
    on_path = shutil.which("ld.lld")
    if on_path:
        return (on_path,)
    if importlib.util.find_spec(ZIG_PACKAGE) is not None:
        return (sys.executable, "-m", ZIG_PACKAGE, "ld.lld")
    return None


def missing_lld_message() -> str:
    return ("cannot link the AMDGPU object into an hsaco: no ld.lld was found (looked at "
            "TRITIUM_LLD_PATH, ROCm's llvm/bin under ROCM_PATH or /opt/rocm, PATH, and the ziglang "
            f"wheel). Install one with `pip install {ZIG_PACKAGE}` (or install ROCm, or point "
            "TRITIUM_LLD_PATH at an ld.lld binary).")


def lld_version() -> str | None:
    cmd = find_lld()
    if cmd is None:
        return None
    out = subprocess.run([*cmd, "--version"], capture_output=True, text=True)
    return out.stdout.strip() or None


def find_assembler() -> tuple[str, ...] | None:
    """The command (argv prefix) of an AMDGPU assembler taking ``clang -cc1as`` arguments, or None.

    llvmlite's LLVM has the AMDGPU target but not its assembly parser, so it cannot put inline
    assembly in an object (LLVM aborts the process); kernels with inline assembly are assembled
    from their AMDGCN text instead.  Search order: ``TRITIUM_AMDGPU_CLANG``; ROCm's
    ``llvm/bin/clang`` (under ``ROCM_PATH``, ``ROCM_HOME``, ``HIP_PATH``, ``/opt/rocm``); the
    ``ziglang`` wheel's clang (``python -m ziglang clang``), whose LLVM has the AMDGPU assembler."""
    return _find_assembler(*_knob("amdgpu_clang"))


@functools.lru_cache(maxsize=None)
def _find_assembler(env: str | None, source: str) -> tuple[str, ...] | None:
    if env:
        if not os.access(env, os.X_OK):
            raise ToolchainError(f"{source}={env!r} is not an executable file")
        return (env, "-cc1as")
    for root in _rocm_roots():
        c = root / "llvm" / "bin" / "clang"
        if c.is_file() and os.access(c, os.X_OK):
            return (str(c), "-cc1as")
    if importlib.util.find_spec(ZIG_PACKAGE) is not None:
        return (sys.executable, "-m", ZIG_PACKAGE, "clang", "-cc1as")
    return None


def missing_assembler_message() -> str:
    return ("this kernel has inline assembly, which llvmlite's LLVM cannot assemble (it has no AMDGPU "
            "assembly parser), and no AMDGPU assembler was found (looked at TRITIUM_AMDGPU_CLANG, ROCm's "
            f"llvm/bin/clang, and the ziglang wheel). Install one with `pip install {ZIG_PACKAGE}` (or install "
            "ROCm, or point TRITIUM_AMDGPU_CLANG at a clang with the AMDGPU target).")


# the cached searches behind the knob-reading entry points
find_lld.cache_clear = _find_lld.cache_clear
find_assembler.cache_clear = _find_assembler.cache_clear
