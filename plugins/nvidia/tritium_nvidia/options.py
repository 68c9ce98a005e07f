"""NVIDIA targets and compilation options."""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

from tritium import knobs
from tritium.hooks import GPUTarget, Options


TARGET_KIND = "cuda"
#: compute capabilities Tritium generates code for (``cuda:90a`` selects the arch-specific Hopper
#: features, wgmma and setmaxnreg)
SUPPORTED_ARCHS = (80, 86, 87, 89, 90)
#: every target string the backend accepts: what `tritium backends` lists and errors name
TARGETS = tuple(f"cuda:{a}" for a in SUPPORTED_ARCHS) + ("cuda:90a",)
WARP_SIZE = 32


# os.environ encodes the key on every read; its mapping answers the same for a dict lookup
_ENV = getattr(os.environ, "_data", None)
_ENV_KEY = os.environ.encodekey("TRITIUM_TMA") if isinstance(_ENV, dict) else None


def tma_enabled() -> bool:
    """On unless ``knobs.nvidia.tma`` is False (``TRITIUM_TMA=0``).  Asked on every launch with a
    host descriptor: an assigned knob is found in the group's dict, else the variable is read
    through the environment's own mapping."""
    assigned = knobs.nvidia.__dict__.get("tma")
    if assigned is not None:
        return bool(assigned)
    if _ENV_KEY is not None:
        return _ENV.get(_ENV_KEY) != b"0"
    return os.environ.get("TRITIUM_TMA", "1") != "0"


def parse_target(text: str) -> GPUTarget | None:
    """``"cuda:90"`` -> ``GPUTarget("cuda", 90, 32)``; ``"cuda:90a"`` keeps the suffix as a string.
    ``None`` when ``text`` is not a CUDA target."""
    kind, sep, arch = str(text).strip().partition(":")
    if kind.strip().lower() != TARGET_KIND:
        return None
    accepted = ", ".join(TARGETS)
    m = re.fullmatch(r"(\d+)(a?)", arch.strip().lower())
    if not sep or not m:
        sm = re.fullmatch(r"sm_?(\d+a?)", arch.strip().lower())
        hint = f" (write cuda:{sm.group(1)})" if sm else ""
        raise ValueError(f"bad CUDA target {text!r}{hint}: expected one of {accepted}")
    cc = int(m.group(1))
    if cc not in SUPPORTED_ARCHS or (m.group(2) and cc != 90):
        raise ValueError(f"unsupported CUDA target {text!r}: accepted are {accepted}")
    return GPUTarget(TARGET_KIND, f"{cc}a" if m.group(2) else cc, WARP_SIZE)


def capability(target: GPUTarget) -> int:
    """Numeric compute capability of a CUDA target (``90`` for ``cuda:90a``)."""
    return _capability(target.arch)


@functools.lru_cache(maxsize=None)
def _capability(arch) -> int:  # asked on every launch with a host tensor descriptor
    return int(re.match(r"\d+", str(arch)).group(0))


@dataclass(frozen=True)
class CUDAOptions(Options):
    """Triton's NVIDIA options.  ``ptx_version=None`` picks the newest the toolchain accepts;
    ``maxnreg`` caps registers per thread; ``launch_cooperative_grid`` launches with grid-wide
    synchronisation allowed; ``num_ctas > 1`` launches thread-block clusters (sm_90+)."""

    maxnreg: int | None = None
    enable_fp_fusion: bool = True
    #: flush fp32 denormals to zero in the approximate math (``ex2.approx.ftz``) and in libdevice
    #: (its ``nvvm-reflect-ftz`` flag), Triton's default; False keeps denormals
    enable_reflect_ftz: bool = True
    launch_cooperative_grid: bool = False
    launch_pdl: bool = False
    ptx_version: int | None = None
    arch: str = "90"
    supported_fp8_dtypes: tuple[str, ...] = ("fp8e4b15", "fp8e4nv", "fp8e5")
    deprecated_fp8_dot_operand_dtypes: tuple[str, ...] = ()
    default_dot_input_precision: str = "tf32"
    allowed_dot_input_precisions: tuple[str, ...] = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")
    max_num_imprecise_acc_default: int = 0
    #: K covers at least one mma.sync step (32 bytes of 8-bit operands, 16 elements otherwise);
    #: M and N below an instruction's tile run on FMA
    min_dot_size: tuple = ((1, 1, 32), (1, 1, 16))
    extern_libs: tuple = ()
    #: a pipelined loop's 32- and 64-bit loads into registers are copied ahead by ``cp.async`` like
    #: its tensor-core operands (False: they stay ``tt.load`` in the loop)
    stream_loads: bool = True
    #: a loop-invariant tensor-core operand read by a pipelined loop (attention's Q) is loaded
    #: straight into shared memory by ``cp.async`` (False: through registers and ``st.shared``)
    async_operand_loads: bool = True
    #: a TMA store (``tt.descriptor_store``) waits for the copy engine to read its tile only before
    #: those bytes are written again and before returning (False: right after each store)
    defer_store_waits: bool = True
    #: with ``defer_store_waits``, a TMA store inside a persistent loop gets shared memory of its
    #: own across the loop where it fits, so the next tile's copies need not wait for its read
    own_store_tiles: bool = True
    #: tensor descriptors go through the Tensor Memory Accelerator on sm_90: a host descriptor's
    #: map is encoded at launch, a ``tl.make_tensor_descriptor`` builds its own in the kernel
    #: (False, or ``TRITIUM_TMA=0``: block-pointer loads and stores)
    tma: bool = True
    #: a loop of two wgmma where the second consumes the first through register work (attention)
    #: runs that work while the previous iteration's second dot computes (``passes/overlap_dots.py``)
    overlap_dots: bool = True
    #: a warp-specialized loop of two consumer warp groups with register work between its dots
    #: issues each group's first dots in turns (``passes/warp_specialize.py``, the ping-pong
    #: schedule). Off by default: on the H200 it measured 0.94-1.04 of the same loop without it
    #: (attention, d64 and d128, causal or not), the groups already drifting apart unforced
    pingpong: bool = False
    #: a kernel a few registers over an occupancy step (2 blocks an SM where 3 would fit the shared
    #: memory) is assembled again with its registers capped at that step, and the capped cubin kept
    #: if it spills nothing (32 bytes or fewer from two blocks to three: ``toolchain/occupancy.py``);
    #: a warp-specialized kernel of one consumer warp group is assembled the same way with its
    #: register split made for two blocks an SM (``passes/warp_specialize.shared_split``); a
    #: user's ``maxnreg`` turns both off
    occupancy_cap: bool = True
    #: a persistent kernel's tile loop keeps one ring of slots across its tiles and issues the next
    #: tile's first copies before this tile's epilogue (``passes/tile_prefetch.py``)
    tile_prefetch: bool = True
    #: a kernel whose loops run longer for larger ``program_id(0)`` (causal attention) numbers its
    #: programs from the other end, so the longest start first (``core/ttgir/passes/program_order.py``;
    #: never where the order can be seen: atomics, inline assembly, printing)
    longest_first: bool = True
    #: two programs next to each other along x run as one cluster of two CTAs where the grid
    #: allows, and a pipelined loop's TMA copies that come out the same in both are read once and
    #: multicast into both CTAs (``passes/cluster_pairs.py``; decided at run time)
    cluster_pairs: bool = False

    def __post_init__(self):
        if self.num_ctas not in (1, 2, 4, 8, 16):
            raise ValueError(f"num_ctas must be 1, 2, 4, 8 or 16, got {self.num_ctas!r}")
        if self.maxnreg is not None and not (isinstance(self.maxnreg, int) and 16 <= self.maxnreg <= 255):
            raise ValueError(f"maxnreg must be an integer in [16, 255], got {self.maxnreg!r}")
        if self.default_dot_input_precision not in self.allowed_dot_input_precisions:
            raise ValueError(f"default_dot_input_precision must be one of "
                             f"{self.allowed_dot_input_precisions}, got {self.default_dot_input_precision!r}")
        if self.num_warps * self.threads_per_warp > 1024:
            raise ValueError(f"num_warps={self.num_warps} gives more than 1024 threads per block")
        for name in ("stream_loads", "async_operand_loads", "defer_store_waits", "own_store_tiles", "tma", "overlap_dots",
                     "pingpong", "occupancy_cap", "tile_prefetch", "longest_first", "cluster_pairs"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")


def parse_options(target: GPUTarget, opts: dict) -> CUDAOptions:
    cc = capability(target)
    defaults = dict(threads_per_warp=target.warp_size, arch=str(target.arch))
    # Triton's rule: e5m2 and fp8e4b15 (converted in software, upcast to fp16 for dot) on every
    # arch, e4m3 from sm_89; AMD's FNUZ formats (fp8e4b8, fp8e5b16) are rejected on NVIDIA targets.
    # From sm_90 a dot of fp8e4b15 operands warns that the format is deprecated there.
    fp8 = ("fp8e4b15", "fp8e5") + (("fp8e4nv",) if cc >= 89 else ())
    defaults["supported_fp8_dtypes"] = tuple(sorted(fp8))
    defaults["deprecated_fp8_dot_operand_dtypes"] = ("fp8e4b15",) if cc >= 90 else ()
    # wgmma's fp8 accumulation is left unbounded by default on Hopper, as Triton does
    defaults["max_num_imprecise_acc_default"] = 2 ** 30 if cc == 90 else 0
    # the process-wide defaults: knobs.language.default_fp_fusion (TRITIUM_DEFAULT_FP_FUSION /
    # TRITON_DEFAULT_FP_FUSION) and fp32_default (TRITON_F32_DEFAULT); a launch's own
    # enable_fp_fusion= / default_dot_input_precision= still decides
    defaults["enable_fp_fusion"] = knobs.language.default_fp_fusion
    if knobs.language.fp32_default:
        defaults["default_dot_input_precision"] = knobs.language.fp32_default
    # TRITIUM_TMA=0 keeps descriptors off the copy engine; as an option, it is part of the cache key
    defaults["tma"] = tma_enabled()
    arch_opt = opts.get("arch")
    opts = {k: v for k, v in opts.items() if k not in ("threads_per_warp", "arch")}
    if isinstance(opts.get("extern_libs"), dict):
        opts["extern_libs"] = tuple(sorted(opts["extern_libs"].items()))
    # an ``arch=`` launch option ("sm80", "80") is checked as the architecture asked for
    asked = min(cc, _capability(str(arch_opt).removeprefix("sm").removeprefix("_"))) if arch_opt else cc
    if (opts.get("num_ctas") or 1) > 1 and asked < 90:
        raise ValueError(f"num_ctas > 1 requires NVIDIA SM90+ (Hopper). Current target is sm_{asked}. This "
                         f"configuration will fail. Please set num_ctas=1 or target an SM90+ GPU.")
    return CUDAOptions.from_dict(opts, **defaults)
