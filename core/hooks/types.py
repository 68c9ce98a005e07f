"""Plain data that crosses the plugin boundary: targets, backend descriptions, options."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GPUTarget:
    """What code is generated for: ``GPUTarget("cuda", 90, 32)``, ``GPUTarget("hip", "gfx942", 64)``.

    ``backend`` is the target kind a plugin claims (``cuda``, ``hip``, ``interpreter``), ``arch`` the
    architecture within it and ``warp_size`` the threads per warp/wavefront.  Text form: ``cuda:90``.
    """

    backend: str
    arch: int | str
    warp_size: int

    def __str__(self) -> str:
        return f"{self.backend}:{self.arch}"


@dataclass(frozen=True)
class BackendInfo:
    """A backend plugin's self-description, returned by ``tritium_backend_info``.

    ``name`` is what users type (``TRITIUM_BACKEND=nvidia``); ``target_kinds`` are the
    ``GPUTarget.backend`` values it compiles for; ``targets`` lists example target strings it
    supports (``("cuda:80", "cuda:90")``); ``stages`` names its compilation stages in order
    (``("ttir", "ttgir", "llir", "ptx", "cubin")``); ``binary_ext`` the final stage.
    """

    name: str
    api_version: int
    version: str
    target_kinds: tuple[str, ...]
    targets: tuple[str, ...]
    default_target: str
    stages: tuple[str, ...]
    binary_ext: str
    description: str = ""


class InvalidOption(ValueError, AssertionError):
    """A launch or compile option out of its domain.  Also an ``AssertionError``: Triton asserts
    these (``num_warps must be a power of 2``) and its users catch that."""


@dataclass(frozen=True)
class Options:
    """Compilation options common to every backend.  Plugins subclass it (frozen dataclass) to add
    their own; every field takes part in the cache key, so keep them hashable."""

    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    threads_per_warp: int = 32
    debug: bool = False
    sanitize_overflow: bool = False
    extern_libs: tuple = ()
    supported_fp8_dtypes: tuple[str, ...] = ("fp8e5", "fp8e4nv")
    allowed_dot_input_precisions: tuple[str, ...] = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")
    default_dot_input_precision: str = "tf32"
    max_num_imprecise_acc_default: int = 0
    #: the smallest ``(M, N, K)`` of a ``tt.dot``: for 8-bit operands, then for wider ones
    min_dot_size: tuple = ((1, 1, 1), (1, 1, 1))
    rewrite_tensor_pointer: bool = True
    #: the backend's ``ttgir`` stage lowers ``tt.dot_scaled`` itself; when False the shared TTGIR
    #: pipeline decomposes it into an upcast and an ordinary ``tt.dot`` (``decompose-scaled-dot``)
    native_dot_scaled: bool = False

    def hash_key(self) -> str:
        return repr(sorted(dataclasses.asdict(self).items()))

    @classmethod
    def from_dict(cls, opts: dict[str, Any], **defaults: Any) -> "Options":
        """Build from user keywords, ignoring keys this class does not know (they belong to
        another backend) but rejecting wrong types with a clear message."""
        names = {f.name for f in dataclasses.fields(cls)}
        args = dict(defaults)
        args.update({k: v for k, v in opts.items() if k in names and v is not None})
        for key in ("num_warps", "num_stages", "num_ctas", "threads_per_warp"):
            if key in args and (not isinstance(args[key], int) or isinstance(args[key], bool) or args[key] < 1):
                raise InvalidOption(f"{key} must be a positive integer, got {args[key]!r}")
        nw = args.get("num_warps", cls.num_warps)
        if nw & (nw - 1):
            raise InvalidOption(f"num_warps must be a power of 2, got {nw}")
        return cls(**args)


@dataclass
class ConformanceExclusion:
    """A conformance case a backend declares it cannot pass: ``case`` is a case id or an
    ``fnmatch`` pattern over case ids (``"dot/fp64-*"``), ``reason`` is shown in the report."""

    case: str
    reason: str
    targets: tuple[str, ...] = field(default_factory=tuple)  # empty: all of the backend's targets
