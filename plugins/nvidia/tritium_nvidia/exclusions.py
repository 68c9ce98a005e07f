"""Conformance cases the NVIDIA backend knows it cannot pass, each with its reason.

Every entry concerns results computed on the device; compiling these cases works.  A compile-only
run counts a compiled excluded case as an unexpected pass, so the list is only returned when a CUDA
device is present (where the cases run)."""
from __future__ import annotations

from tritium.hooks.manager import layout_encodings
from tritium.hooks.types import ConformanceExclusion

# shapes/outer-none-index-fp16 is not listed: with enable_fp_fusion=True (Triton's default) ptxas may
# contract the fp16 x*10 + y into one fma while the reference rounds the product first, so it fails
# for some seeds and passes for others -- an exclusion would turn the passing seeds into failures.
_RUNTIME: list[tuple[str, str]] = []


# rejected at compile time by design (Triton's rule): e4m3 "fp8e4nv" needs sm_89+
_TARGET: list[tuple[str, str, tuple[str, ...]]] = [
    ("casts/*fp8e4nv*", "fp8e4nv is not a supported fp8 type before sm_89 (options.supported_fp8_dtypes, "
     "as in Triton); the kernel is rejected at compile time", ("cuda:80", "cuda:86")),
    ("dot/*fp8e4nv*", "fp8e4nv is not a supported fp8 type before sm_89 (options.supported_fp8_dtypes, "
     "as in Triton); the kernel is rejected at compile time", ("cuda:80", "cuda:86")),
    ("dot_scaled/*-fp8-dtypes", "its lhs is a float8e4nv pointer, not a supported fp8 type before sm_89 "
     "(e4m3 given as uint8 bits compiles everywhere); the kernel is rejected at compile time", ("cuda:80", "cuda:86")),
    ("fp8_storage/*fp8e4nv*", "fp8e4nv is not a supported fp8 type before sm_89 (options.supported_fp8_dtypes, "
     "as in Triton); the kernel is rejected at compile time", ("cuda:80", "cuda:86")),
    ("tensor_map/*fp8e4nv*", "fp8e4nv is not a supported fp8 type before sm_89 (options.supported_fp8_dtypes, "
     "as in Triton); the kernel is rejected at compile time", ("cuda:80", "cuda:86")),
    ("loops_options/dot-*fp8e4nv*", "fp8e4nv is not a supported fp8 type before sm_89 "
     "(options.supported_fp8_dtypes, as in Triton); the kernel is rejected at compile time", ("cuda:80", "cuda:86")),
    ("dot_scaled/*e4m3*", "an e4m3 operand is taken as fp8e4nv, not a supported fp8 type before sm_89 (as in "
     "Triton, whose dot_scaled bitcasts it to float8e4nv); the kernel is rejected at compile time",
     ("cuda:80", "cuda:86")),
    *[(f"dot_scaled/error-{e}", "its e4m3 operand is rejected before sm_89 (fp8e4nv, as in Triton), ahead of the "
       "error the case expects", ("cuda:80", "cuda:86")) for e in ("scale-shape", "k-mismatch", "out-dtype")],
    ("clusters/*", "thread-block clusters (num_ctas > 1) need sm_90 or newer, as in Triton; the kernel is "
     "rejected at compile time", ("cuda:80", "cuda:86", "cuda:89")),
]


# IR cases written in another vendor's layouts: rejected when the module is read, on every target
_FNUZ = ("AMD's FNUZ fp8 format is not a supported fp8 type on NVIDIA targets (options.supported_fp8_dtypes, "
         "as in Triton); the kernel is rejected at compile time")
_FOREIGN: list[tuple[str, str]] = [
    ("casts/*fp8e4b8*", _FNUZ), ("casts/*fp8e5b16*", _FNUZ),
    ("fp8_storage/*fp8e4b8*", _FNUZ), ("fp8_storage/*fp8e5b16*", _FNUZ),
    ("ir_files/amd-*", "AMD's matrix-core layouts (amd_mfma) are laid out for 64-lane wavefronts; NVIDIA warps "
     "have 32 lanes, so the module is rejected when it is read"),
    ("inline_asm_amdgcn/*", "the cases' inline assembly is AMDGCN (AMD's instruction set), which ptxas does not "
     "assemble"),
]


def exclusions(target, get_driver) -> list[ConformanceExclusion]:
    try:
        present = get_driver().is_active()
    except Exception:  # noqa: BLE001 - no driver means no device
        present = False
    out = [ConformanceExclusion(p, r, t) for p, r, t in _TARGET if str(target) in t]
    out += [ConformanceExclusion(p, r) for p, r in _FOREIGN]
    if not _has_encoding("ttg.amd_wmma"):
        # RDNA3's layouts are 32-lane ones: they compile and run here wherever the AMD plugin
        # registered them, and are rejected when the module is read where it did not
        out.append(ConformanceExclusion("ir_files/rdna-*", "AMD's RDNA3 matrix layouts (amd_wmma) parse only "
                                        "where the AMD plugin is installed"))
    return out + ([ConformanceExclusion(p, r) for p, r in _RUNTIME] if present else [])


def _has_encoding(name: str) -> bool:
    return any(getattr(enc, "name", "") == name for enc in layout_encodings())
