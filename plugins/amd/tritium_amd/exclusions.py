"""Conformance cases the AMD backend knows it cannot pass, each with its reason.

Every one but ``errors/dot-too-small`` is rejected at compile time (with that reason, at the
kernel's line), so they are excluded in compile-only runs too; that one is accepted and computed
(AMD has no smallest dot)."""
from __future__ import annotations

from tritium.hooks.types import ConformanceExclusion

_ASM = ("the cases' inline assembly is PTX (NVIDIA's); AMD kernels take AMDGCN text, which the "
        "inline_asm_amdgcn/* cases use")

_CASES: list[tuple[str, str]] = [
    ("inline_asm/*", _ASM),
    ("clusters/*", "AMD GPUs have no thread-block clusters: num_ctas must be 1 (as in Triton); the kernel is "
     "rejected at compile time"),
    ("errors/dot-too-small", "AMD has no smallest dot (min_dot_size (1, 1, 1), as in Triton: dots below a matrix "
     "instruction's tile run on FMA), so the 8x8x8 fp16 dot is accepted and computed"),
]


# IR cases written for another warp size: rejected when the module is read
_WAVE64_FOREIGN = ("ir_files/nvidia-*", "NVIDIA's tensor-core layouts (nvidia_mma and its dot operands) are laid "
                   "out for 32-lane warps; this target's wavefronts have 64 lanes, so the module is rejected when "
                   "it is read")
_WAVE64_RDNA = ("ir_files/rdna-*", "the cases' amd_wmma layouts are RDNA3's, for 32-lane wavefronts; this "
                "target's wavefronts have 64 lanes, so the module is rejected when it is read")
_WAVE32_FOREIGN = ("ir_files/amd-*", "the cases' amd_mfma layouts are CDNA's, for 64-lane wavefronts; this target "
                   "runs 32-lane wavefronts, so the module is rejected when it is read")


def exclusions(target) -> list[ConformanceExclusion]:
    out = [ConformanceExclusion(case, reason) for case, reason in _CASES]
    foreign = [_WAVE64_FOREIGN, _WAVE64_RDNA] if getattr(target, "warp_size", 64) == 64 else [_WAVE32_FOREIGN]
    return out + [ConformanceExclusion(*f) for f in foreign]
