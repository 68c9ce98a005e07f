"""Conformance cases the AMD backend knows it cannot pass, each with its reason.

Every one is rejected at compile time (with that reason, at the kernel's line), so they are
excluded in compile-only runs too."""
from __future__ import annotations

from tritium.hooks.types import ConformanceExclusion

_OCML = ("fp64 {fn} needs ROCm's device math library (ocml), which the AMD backend does not link "
         "yet; LLVM's AMDGPU target has no fp64 {fn} of its own, so the kernel is rejected at compile time")
_LIBDEVICE = ("device-library calls (tl.extra.libdevice, extern functions) need ROCm's ocml, which the "
              "AMD backend does not link yet; the kernel is rejected at compile time")
_ASM = ("the cases' inline assembly is PTX; and llvmlite's LLVM has no AMDGPU assembly parser, so no "
        "inline assembly can be put in a code object here")
_LDS = "needs more than the 64 KiB of LDS a gfx9/gfx11 workgroup has (OutOfResources at compile time)"

_CASES: list[tuple[str, str]] = [
    *((f"math/{fn}-fp64", _OCML.format(fn=fn)) for fn in ("exp", "exp2", "log", "log2", "sin", "cos", "erf")),
    ("math/sigmoid-fp64", _OCML.format(fn="exp")),
    ("compat/math-exp-fp64", _OCML.format(fn="exp")),
    # every libdevice case but the error-* ones (which expect a rejection and pass)
    ("libdevice/[!e]*", _LIBDEVICE), ("libdevice/e[!r]*", _LIBDEVICE), ("libdevice/er[!r]*", _LIBDEVICE),
    ("inline_asm/*", _ASM),
    ("dot/tiles-fp16-256x256x192-128x128x64-w4-s2", _LDS),
    ("dot/tiles-fp16-256x512x128-128x256x64-w8-s3", _LDS),
    # the 128x128 fp32 result's conversion out of the MFMA layout takes 66 KiB of LDS in one piece
    # (a plain 128x128x128 tl.dot does the same)
    ("dot_scaled/*-128x128x128-*", _LDS),
    ("dot/tiles-int8-256x256x128-128x128x64-w8-s3", _LDS),
    ("dot/tiles-fp32-tf32x3-256x128x128-128x128x64-w8-s2", _LDS),
    # batched dots run on FMA here, their operands converted through LDS: 8 entries of 32x64 fp32
    # tiles (or of 32x128 fp16 ones) do not fit
    ("dot3d/fp32-fp32-tf32-b8-64x64x64-*", _LDS),
    ("dot3d/fp16-fp16-b8-64x64x128-*", _LDS),
]


# IR cases written for another warp size: rejected when the module is read
_WAVE64_FOREIGN = ("ir_files/nvidia-*", "NVIDIA's tensor-core layouts (nvidia_mma and its dot operands) are laid "
                   "out for 32-lane warps; this target's wavefronts have 64 lanes, so the module is rejected when "
                   "it is read")
_WAVE32_FOREIGN = ("ir_files/amd-*", "the cases' amd_mfma layouts are CDNA's, for 64-lane wavefronts; this target "
                   "runs 32-lane wavefronts, so the module is rejected when it is read")


def exclusions(target) -> list[ConformanceExclusion]:
    out = [ConformanceExclusion(case, reason) for case, reason in _CASES]
    foreign = _WAVE64_FOREIGN if getattr(target, "warp_size", 64) == 64 else _WAVE32_FOREIGN
    return out + [ConformanceExclusion(*foreign)]
