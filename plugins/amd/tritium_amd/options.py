"""AMD targets (``hip:gfx942``) and compilation options."""
from __future__ import annotations

from dataclasses import dataclass

from tritium.hooks import GPUTarget, Options

TARGET_KIND = "hip"


@dataclass(frozen=True)
class Arch:
    """What the compiler needs to know of one ``gfx`` architecture."""

    name: str
    family: str          # "cdna2", "cdna3", "rdna3"
    warp_size: int       # lanes per wavefront
    matrix: str          # "mfma", "wmma" or "" (FMA dots only)
    lds_bytes: int       # LDS (shared memory) per workgroup


ARCHS: dict[str, Arch] = {a.name: a for a in (
    Arch("gfx90a", "cdna2", 64, "mfma", 64 * 1024),
    Arch("gfx942", "cdna3", 64, "mfma", 64 * 1024),
    Arch("gfx1100", "rdna3", 32, "wmma", 64 * 1024),
    Arch("gfx1101", "rdna3", 32, "wmma", 64 * 1024),
    Arch("gfx1102", "rdna3", 32, "wmma", 64 * 1024),
)}


def arch_of(target: GPUTarget) -> Arch:
    return ARCHS[str(target.arch)]


def parse_target(text: str) -> GPUTarget | None:
    """``"hip:gfx942"`` -> ``GPUTarget("hip", "gfx942", 64)``; ``None`` when not a HIP target.
    Feature suffixes (``gfx90a:sramecc+:xnack-``) are accepted and dropped."""
    kind, sep, arch = str(text).strip().partition(":")
    if kind.strip().lower() != TARGET_KIND:
        return None
    name = arch.strip().lower().split(":", 1)[0]
    if not sep or name not in ARCHS:
        accepted = ", ".join(f"hip:{a}" for a in ARCHS)
        raise ValueError(f"unsupported AMD target {text!r}: accepted are {accepted}")
    return GPUTarget(TARGET_KIND, name, ARCHS[name].warp_size)


@dataclass(frozen=True)
class HIPOptions(Options):
    """Triton's AMD options.  ``waves_per_eu`` hints occupancy to the register allocator (0: none);
    ``matrix_instr_nonkdim`` picks the MFMA tile (0: automatic, 16 or 32); ``enable_fp_fusion``
    allows contracting multiplies and adds; ``arch`` is the ``gfx`` name."""

    arch: str = "gfx942"
    waves_per_eu: int = 0
    matrix_instr_nonkdim: int = 0
    kpack: int = 1
    enable_fp_fusion: bool = True
    #: fp32 denormals flushed in the whole kernel (``"denormal-fp-math-f32"="preserve-sign"``): then
    #: ``tl.exp`` and ``tl.log2`` are ``v_exp_f32`` / ``v_log_f32`` alone too (``tl.exp2`` always is)
    allow_flush_denorm: bool = False
    default_dot_input_precision: str = "ieee"
    allowed_dot_input_precisions: tuple[str, ...] = ("ieee", "tf32", "tf32x3", "bf16x3", "bf16x6")
    supported_fp8_dtypes: tuple[str, ...] = ("fp8e5", "fp8e4nv", "fp8e4b15", "fp8e4b8", "fp8e5b16")
    #: fp8 formats that reach ``tt.dot`` as they are (the frontend upcasts the others): gfx942's
    #: MFMA takes the FNUZ ones natively; OCP e4m3/e5m2 upcast later, in accelerate-matmul
    dot_fp8_dtypes: tuple[str, ...] = ("fp8e4nv", "fp8e5")
    max_num_imprecise_acc_default: int = 0
    extern_libs: tuple = ()

    @property
    def convert_scratch_limit(self) -> int:
        """64 KiB of LDS: a layout conversion that would not fit in it whole goes through it in
        row slices (a 128x128 fp32 accumulator leaving the MFMA/WMMA layout, 66 KiB padded)."""
        return ARCHS[self.arch].lds_bytes

    def __post_init__(self):
        if isinstance(self.num_ctas, int) and self.num_ctas > 1:
            raise ValueError(f"num_ctas > 1 not supported on {self.arch} (AMD GPUs have no thread-block "
                             f"clusters: num_ctas must be 1, got {self.num_ctas})")
        if self.num_ctas != 1:
            raise ValueError(f"num_ctas must be 1 on AMD GPUs, got {self.num_ctas!r}")
        if self.matrix_instr_nonkdim not in (0, 16, 32):
            raise ValueError(f"matrix_instr_nonkdim must be 0, 16 or 32, got {self.matrix_instr_nonkdim!r}")
        if not isinstance(self.waves_per_eu, int) or self.waves_per_eu < 0:
            raise ValueError(f"waves_per_eu must be a non-negative integer, got {self.waves_per_eu!r}")
        if self.default_dot_input_precision not in self.allowed_dot_input_precisions:
            raise ValueError(f"default_dot_input_precision must be one of "
                             f"{self.allowed_dot_input_precisions}, got {self.default_dot_input_precision!r}")
        if self.num_warps * self.threads_per_warp > 1024:
            raise ValueError(f"num_warps={self.num_warps} gives more than 1024 work-items per workgroup "
                             f"({self.threads_per_warp} lanes per wavefront)")


def parse_options(target: GPUTarget, opts: dict) -> HIPOptions:
    defaults = dict(threads_per_warp=target.warp_size, arch=str(target.arch))
    if ARCHS[str(target.arch)].family == "cdna3":
        defaults["dot_fp8_dtypes"] = ("fp8e4nv", "fp8e5", "fp8e4b8", "fp8e5b16")
    from tritium import knobs  # process-wide defaults; a launch's own options still decide
    defaults["enable_fp_fusion"] = knobs.language.default_fp_fusion
    if knobs.language.fp32_default:
        defaults["default_dot_input_precision"] = knobs.language.fp32_default
    opts = {k: v for k, v in opts.items() if k not in ("threads_per_warp", "arch")}
    if isinstance(opts.get("extern_libs"), dict):
        opts["extern_libs"] = tuple(sorted(opts["extern_libs"].items()))
    return HIPOptions.from_dict(opts, **defaults)
