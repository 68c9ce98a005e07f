"""Where the NVIDIA binary tools come from: nvJitLink, ``ptxas`` and ``libdevice.10.bc``.

Search order (first hit wins), so that a plain ``pip install tritium-nvidia`` works on a machine
with no GPU and no CUDA toolkit, while a system toolkit can still be forced:

* ``ptxas``: ``TRITIUM_PTXAS_PATH``, the ``nvidia-cuda-nvcc`` wheel, ``CUDA_HOME``/``CUDA_PATH``,
  ``PATH``, ``/usr/local/cuda``.
* libdevice: ``TRITIUM_LIBDEVICE_PATH``, the ``nvidia-nvvm`` / ``nvidia-cuda-nvcc`` wheels,
  ``CUDA_HOME``/``CUDA_PATH``, next to ``ptxas`` on ``PATH``, ``/usr/local/cuda``.
* nvJitLink: ``cuda.bindings.nvjitlink`` (it loads ``libnvJitLink.so`` from the
  ``nvidia-nvjitlink`` wheel or the system); disabled with ``TRITIUM_DISABLE_NVJITLINK=1``.

Which one assembles (:func:`default_assembler`): ``TRITIUM_ASSEMBLER`` when set, else a ``ptxas``
(the one ``TRITIUM_PTXAS_PATH`` names, or one found above unless it is of an older CUDA major
version than nvJitLink), else nvJitLink.  nvJitLink assembles PTX as relocatable code (what
``ptxas -c`` makes), a whole-program ``ptxas`` sees the kernel whole; the two differ in the SASS
of one PTX (bench NOTES runs 30-31), so the choice and its version are in the cache key.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tritium import knobs


#: the highest PTX ISA version the bundled LLVM (llvmlite 0.50, LLVM 22) can emit
LLVM_MAX_PTX = 90

NVJITLINK_PACKAGE = "nvidia-nvjitlink"
PTXAS_PACKAGE = "nvidia-cuda-nvcc"
LIBDEVICE_PACKAGE = "nvidia-nvvm"


class ToolchainError(RuntimeError):
    """A tool needed to produce a cubin is missing; the message names the package to install."""


def _wheel_roots() -> list[Path]:
    """``site-packages/nvidia/<cuXX>`` folders of NVIDIA's CUDA wheels, newest CUDA first."""
    roots: list[Path] = []
    for entry in sys.path:
        base = Path(entry or ".") / "nvidia"
        if not base.is_dir():
            continue
        # CUDA 13 wheels install under nvidia/cu13/; CUDA 12 ones under nvidia/<component>/.
        roots += sorted(base.glob("cu[0-9]*"), reverse=True)
        roots += [base / "cuda_nvcc", base / "nvjitlink"]
    return [r for r in roots if r.is_dir()]


def _toolkit_roots() -> list[Path]:
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")]
    return [Path(r) for r in roots if r] + [Path("/usr/local/cuda")]


def _knob(name: str):
    """(the value requested through ``tritium.knobs.nvidia.<name>`` or its variables, where it came from)."""
    d = knobs.nvidia.knob_descriptors[name]
    return d.raw(knobs.nvidia), d.source(knobs.nvidia)


def find_ptxas() -> str | None:
    """Path of a usable ``ptxas`` or ``None``: ``knobs.nvidia.ptxas`` (``TRITIUM_PTXAS_PATH``, or
    Triton's ``TRITON_PTXAS_PATH``) where set, else searched."""
    return _find_ptxas(*_knob("ptxas"))


@functools.lru_cache(maxsize=None)
def _find_ptxas(env: str | None, source: str) -> str | None:
    if env:
        if not os.access(env, os.X_OK):
            raise ToolchainError(f"{source}={env!r} is not an executable file")
        return env
    candidates = [r / "bin" / "ptxas" for r in _wheel_roots()]
    candidates += [r / "bin" / "ptxas" for r in _toolkit_roots()[:-1]]
    on_path = shutil.which("ptxas")
    if on_path:
        candidates.append(Path(on_path))
    candidates.append(_toolkit_roots()[-1] / "bin" / "ptxas")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return None


def find_libdevice() -> str | None:
    """Path of ``libdevice.10.bc`` or ``None``: ``knobs.nvidia.libdevice_path``
    (``TRITIUM_LIBDEVICE_PATH`` / ``TRITON_LIBDEVICE_PATH``) where set, else searched."""
    return _find_libdevice(*_knob("libdevice_path"))


@functools.lru_cache(maxsize=None)
def _find_libdevice(env: str | None, source: str) -> str | None:
    if env:
        if not os.path.isfile(env):
            raise ToolchainError(f"{source}={env!r} is not a file")
        return env
    roots = _wheel_roots() + _toolkit_roots()[:-1]
    on_path = shutil.which("ptxas")
    if on_path:
        roots.append(Path(on_path).resolve().parent.parent)
    roots.append(_toolkit_roots()[-1])
    for r in roots:
        c = r / "nvvm" / "libdevice" / "libdevice.10.bc"
        if c.is_file():
            return str(c)
    return None


def nvjitlink_version() -> tuple[int, int] | None:
    """``(major, minor)`` of the loadable nvJitLink library, or ``None`` when it is unusable or
    ``knobs.nvidia.disable_nvjitlink`` (``TRITIUM_DISABLE_NVJITLINK=1``)."""
    if knobs.nvidia.disable_nvjitlink:
        return None
    return _nvjitlink_version()


@functools.lru_cache(maxsize=None)
def _nvjitlink_version() -> tuple[int, int] | None:
    try:
        from cuda.bindings import nvjitlink
        return tuple(nvjitlink.version())
    except Exception:  # missing module, missing libnvJitLink.so, too old a binding
        return None


@functools.lru_cache(maxsize=None)
def ptxas_version(ptxas: str) -> tuple[int, int]:
    out = subprocess.run([ptxas, "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"release (\d+)\.(\d+)", out)
    if not m:
        raise ToolchainError(f"cannot read the CUDA version from `{ptxas} --version`: {out!r}")
    return int(m.group(1)), int(m.group(2))


def cuda_version_to_ptx(major: int, minor: int) -> int:
    """The newest PTX ISA version (as 10*major+minor) a CUDA ``major.minor`` assembler accepts."""
    if major >= 13:
        return 90 + minor
    if major == 12:
        # 12.0..12.5 -> 8.0..8.5; 12.6 skipped a number: 12.6 -> 8.5, 12.8 -> 8.7, 12.9 -> 8.8.
        return 80 + minor if minor < 6 else 80 + minor - 1
    if major == 11:
        return 70 + minor
    raise ToolchainError(f"CUDA {major}.{minor} is too old for Tritium (need 11.0 or newer)")


def min_ptx_for_arch(arch: str) -> int:
    """Smallest PTX ISA version that knows ``sm_<arch>``."""
    cc = int(re.match(r"\d+", arch).group(0))
    if arch.endswith("a") or cc >= 100:
        return {90: 80, 100: 86, 101: 86, 120: 87}.get(cc, 86)
    return {80: 70, 86: 71, 87: 74, 89: 78, 90: 78}.get(cc, 70 if cc < 80 else 78)


def default_assembler() -> str | None:
    """The assembler :func:`ptx_to_cubin` uses when not told, ``"ptxas"``, ``"nvjitlink"`` or None
    when there is neither:

    * ``TRITIUM_ASSEMBLER`` (``ptxas`` or ``nvjitlink``) when set;
    * the ``ptxas`` ``TRITIUM_PTXAS_PATH`` names (the user asked for that binary);
    * a found ``ptxas`` unless nvJitLink loads and is of a newer CUDA major version (an old
      toolkit's ``ptxas`` knows fewer architectures and PTX versions than a new nvJitLink);
    * else nvJitLink, else nothing.

    A whole-program ``ptxas`` comes first because it sees the kernel whole: nvJitLink compiles
    PTX input as relocatable code and so keeps kernel parameters in vector registers where
    ``ptxas`` moves them to uniform ones (1-2% fewer cycles on the flash-attention kernels,
    bench NOTES run 31)."""
    forced, source = _knob("assembler")
    forced = (forced or "").strip().lower()
    if forced:
        if forced not in ("ptxas", "nvjitlink"):
            raise ToolchainError(f"{source} must be 'ptxas' or 'nvjitlink', got {forced!r}")
        return forced
    if _knob("ptxas")[0]:
        return "ptxas"
    ptxas, jit = find_ptxas(), nvjitlink_version()
    if ptxas is not None:
        try:
            major = ptxas_version(ptxas)[0]
        except (OSError, subprocess.CalledProcessError, ToolchainError):
            major = None  # a broken ptxas (a wrapper whose target is gone) is not a candidate
        if major is not None and (jit is None or major >= jit[0]):
            return "ptxas"
    return "nvjitlink" if jit is not None else None


def assembler_cuda_version() -> tuple[int, int] | None:
    """CUDA version of the assembler :func:`ptx_to_cubin` will use (:func:`default_assembler`)."""
    use = default_assembler()
    if use == "nvjitlink":
        return nvjitlink_version()
    ptxas = find_ptxas() if use == "ptxas" else None
    return ptxas_version(ptxas) if ptxas is not None else None


def assembler_identity() -> str:
    """Which assembler :func:`ptx_to_cubin` will use, with its version (and a ``ptxas``'s path):
    part of every kernel's cache key, since two assemblers (or two versions of one) make different
    machine code from the same PTX, and switching them (``TRITIUM_ASSEMBLER``,
    ``TRITIUM_DISABLE_NVJITLINK``, ``TRITIUM_PTXAS_PATH``, an upgraded wheel) must not reuse the
    other's cubins.  Not cached: it follows :func:`default_assembler`, which reads the environment
    at each compile (the tools' lookups and versions below it are cached)."""
    use = default_assembler()
    version = assembler_cuda_version()
    if version is None:  # none at all, or TRITIUM_ASSEMBLER names one that is missing
        return f"{use or 'none'} missing"
    major, minor = version
    return f"{use} {major}.{minor}" + (f" {find_ptxas()}" if use == "ptxas" else "")


def choose_ptx_version(arch: str, requested: int | None = None) -> int:
    """PTX ISA version to emit for ``arch``: ``requested`` if given, else the newest both LLVM and
    the installed assembler accept (at least what the architecture needs)."""
    if requested is not None:
        return int(requested)
    cuda = assembler_cuda_version()
    best = LLVM_MAX_PTX if cuda is None else min(LLVM_MAX_PTX, cuda_version_to_ptx(*cuda))
    return max(best, min_ptx_for_arch(arch))


def missing_assembler_message() -> str:
    return (
        "cannot assemble PTX to cubin: neither nvJitLink (cuda.bindings.nvjitlink with "
        "libnvJitLink.so) nor ptxas was found. Install one of them with "
        f"`pip install {NVJITLINK_PACKAGE}` (preferred) or `pip install {PTXAS_PACKAGE}`, "
        "or point TRITIUM_PTXAS_PATH at a ptxas binary."
    )


def missing_libdevice_message() -> str:
    return (
        "the kernel calls libdevice functions (__nv_*) but libdevice.10.bc was not found. "
        f"Install it with `pip install {LIBDEVICE_PACKAGE}`, or set TRITIUM_LIBDEVICE_PATH to "
        "the file (it lives in <CUDA>/nvvm/libdevice/)."
    )


# the cached searches behind the knob-reading entry points (tests and ``knobs.refresh_knobs`` clear them)
find_ptxas.cache_clear = _find_ptxas.cache_clear
find_libdevice.cache_clear = _find_libdevice.cache_clear
nvjitlink_version.cache_clear = _nvjitlink_version.cache_clear
