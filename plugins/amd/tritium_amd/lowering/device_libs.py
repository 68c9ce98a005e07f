"""ROCm's device libraries (ocml, ockl) linked into AMD kernels, or the plain-IR fallback.

Device-library calls (``tl.extra.libdevice``, extern functions, fp64 ``tl.math``) are lowered
to calls of ocml's functions (``__nv_tanhf`` -> ``__ocml_tanh_f32``, through
:func:`tritium.conversion.extern_names.ocml_name`, as Triton's AMD backend maps libdevice names).
After lowering, :func:`link` gives every such call a definition:

* when ROCm's bitcode is installed (``ocml.bc`` and ``ockl.bc`` in ``amdgcn/bitcode`` under
  ``$ROCM_PATH``, ``$ROCM_HOME``, ``$HIP_PATH`` or ``/opt/rocm``), the libraries are parsed and
  linked with llvmlite, with the ``oclc_*`` control-constant libraries for the target (ISA
  version, wavefront size, ABI version, finite-only/DAZ/unsafe-math off, correctly rounded
  sqrt); a control constant whose library is missing is defined directly;
* otherwise, and for the libdevice functions ocml lacks, :mod:`ocml_fallback` writes the function
  in plain LLVM IR.

Everything linked becomes internal, so the optimiser keeps only what the kernel uses and the code
object has no undefined symbol.  A function neither provides is refused at the kernel's line by
the lowering (``map_extern`` answers None)."""
from __future__ import annotations

import functools
import os
from pathlib import Path

import llvmlite.binding as llvm
import llvmlite.ir as ir

from tritium.conversion.extern_names import ocml_name

from ..toolchain.binary import TRIPLE, data_layout
from ..toolchain.tools import _rocm_roots
from . import ocml_fallback


LIBRARIES = ("ocml.bc", "ockl.bc")
_LIB_PREFIXES = ("__ocml_", "__ockl_")


def bitcode_dir() -> Path | None:
    """The directory holding ROCm's ``ocml.bc`` and ``ockl.bc``, or None."""
    for root in _rocm_roots():
        d = root / "amdgcn" / "bitcode"
        if all((d / name).is_file() for name in LIBRARIES):
            return d
    return None


def _control_constants(arch) -> list[tuple[str, str, int, int]]:
    """``(library file, constant, bits, value)`` of the oclc control constants for ``arch``."""
    # major * 1000 + minor * 100 + stepping: gfx942 -> 9402, gfx90a -> 9010, gfx1100 -> 11000
    version = int(arch.name[3:-2]) * 1000 + int(arch.name[-2], 16) * 100 + int(arch.name[-1], 16)
    wave64 = int(arch.warp_size == 64)
    return [(f"oclc_isa_version_{arch.name[3:]}.bc", "__oclc_ISA_version", 32, version),
            ("oclc_abi_version_500.bc", "__oclc_ABI_version", 32, 500),
            (f"oclc_wavefrontsize64_{'on' if wave64 else 'off'}.bc", "__oclc_wavefrontsize64", 8, wave64),
            ("oclc_finite_only_off.bc", "__oclc_finite_only_opt", 8, 0),
            ("oclc_unsafe_math_off.bc", "__oclc_unsafe_math_opt", 8, 0),
            ("oclc_daz_opt_off.bc", "__oclc_daz_opt", 8, 0),
            ("oclc_correctly_rounded_sqrt_on.bc", "__oclc_correctly_rounded_sqrt32", 8, 1)]


@functools.lru_cache(maxsize=16)
def _bitcode(path: str, mtime: float) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _parse_bitcode(path: Path):
    return llvm.parse_bitcode(_bitcode(str(path), path.stat().st_mtime))


def resolve(symbol: str) -> str | None:
    """The symbol a call of ``symbol`` (a libdevice ``__nv_*`` name, an ocml/ockl name, or any
    other extern) becomes on AMD, or None when neither ROCm's libraries nor the fallback has it."""
    ocml = ocml_name(symbol)
    if ocml is not None and ocml.startswith(_LIB_PREFIXES):
        if bitcode_dir() is not None or ocml_fallback.provides(ocml):
            return ocml
    if ocml_fallback.provides(symbol):
        return symbol
    return None


def _library_functions(module) -> set[str]:
    return {f.name for f in module.functions if not f.is_declaration}


def link(llir: str, externs: dict[str, ir.FunctionType], arch) -> tuple[str, list[str]]:
    """``llir`` with a definition for every device-library function in ``externs`` (the calls the
    lowering declared, with their types); returns the module text and what was linked
    (``ocml.bc``... and ``fallback: <symbols>``)."""
    if not externs:
        return llir, []
    module = llvm.parse_assembly(llir)
    linked: set[str] = set()
    used: list[str] = []
    d = bitcode_dir()
    if d is not None and any(s.startswith(_LIB_PREFIXES) for s in externs):
        for name in LIBRARIES:
            lib = _parse_bitcode(d / name)
            linked |= _library_functions(lib)
            module.link_in(lib)
            used.append(name)
        constants = []
        for fname, const, bits, value in _control_constants(arch):
            if (d / fname).is_file():
                module.link_in(_parse_bitcode(d / fname))
                used.append(fname)
            else:
                constants.append((const, bits, value))
        _define_constants(module, constants)
    missing = {s: t for s, t in externs.items() if _undefined(module, s)}
    if missing:
        fallback = ir.Module(name="tritium_device_lib")
        fallback.triple, fallback.data_layout = TRIPLE, data_layout()
        done = [s for s, t in sorted(missing.items()) if ocml_fallback.define(fallback, s, t)]
        if done:
            module.link_in(llvm.parse_assembly(str(fallback)))
            linked |= set(done)
            used.append("fallback: " + " ".join(done))
    for f in module.functions:
        if f.name in linked and not f.is_declaration:
            f.linkage = llvm.Linkage.internal
    for g in module.global_variables:
        if g.name.startswith("__oclc_") and not g.is_declaration:
            g.linkage = llvm.Linkage.internal
    return str(module), used


def _undefined(module, symbol: str) -> bool:
    try:
        return module.get_function(symbol).is_declaration
    except NameError:
        return False


def _define_constants(module, constants) -> None:
    """The oclc control constants whose library files are missing, written as ocml reads them
    (``addrspace(4)`` constants)."""
    existing = {g.name for g in module.global_variables if not g.is_declaration}
    text = "".join(f"@{name} = linkonce_odr hidden addrspace(4) constant i{bits} {value}\n"
                   for name, bits, value in constants if name not in existing)
    if text:
        m = llvm.parse_assembly(f'target triple = "{TRIPLE}"\ntarget datalayout = "{data_layout()}"\n{text}')
        module.link_in(m)
