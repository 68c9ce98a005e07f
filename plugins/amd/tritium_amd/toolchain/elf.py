"""A reader and checker for HSA code objects (hsaco: 64-bit little-endian AMDGPU ELF): machine, target ``gfx``
from ``e_flags``, symbols, and the ``amdhsa`` metadata note (MessagePack) that the HIP runtime reads
to launch a kernel: name, kernarg segment size and arguments, wavefront size, LDS size.  Enough to
check a code object without ROCm's tools."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from tritium.compiler.elf import SHT_NOTE, read_elf

from ..options import ARCHS

EM_AMDGPU = 224
NT_AMDGPU_METADATA = 32
EF_AMDGPU_MACH = 0x0FF
#: ``EF_AMDGPU_MACH_AMDGCN_*`` values (LLVM's ELF.h) of the targets Tritium knows
MACH = {0x03F: "gfx90a", 0x04C: "gfx942", 0x041: "gfx1100", 0x046: "gfx1101", 0x047: "gfx1102"}


@dataclass(frozen=True)
class HsacoKernel:
    """One entry of ``amdhsa.kernels``."""

    name: str
    symbol: str
    kernarg_segment_size: int
    wavefront_size: int
    group_segment_fixed_size: int      # LDS bytes
    private_segment_fixed_size: int    # scratch bytes per work-item
    sgpr_count: int
    vgpr_count: int
    max_flat_workgroup_size: int
    args: tuple[dict, ...]             # ``.args``: offset, size, value_kind...

    @property
    def explicit_args(self) -> tuple[dict, ...]:
        return tuple(a for a in self.args if not str(a.get(".value_kind", "")).startswith("hidden_"))


@dataclass(frozen=True)
class HsacoInfo:
    machine: int
    arch: str | None               # from e_flags, e.g. "gfx942"
    sections: tuple[str, ...]
    functions: tuple[str, ...]     # STT_FUNC symbols
    undefined: tuple[str, ...]     # global symbols the code object uses but does not define
    target: str                    # ``amdhsa.target``, e.g. "amdgcn-amd-amdhsa--gfx942"
    kernels: tuple[HsacoKernel, ...] = field(default_factory=tuple)
    metadata: dict = field(default_factory=dict)

    def kernel(self, name: str) -> HsacoKernel:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(f"no kernel {name!r} in the code object (has {[k.name for k in self.kernels]})")


def _notes(blob: bytes):
    """``(name, type, desc)`` of each note in a SHT_NOTE section's bytes (4-byte aligned)."""
    off = 0
    while off + 12 <= len(blob):
        namesz, descsz, ntype = struct.unpack_from("<III", blob, off)
        off += 12
        name = blob[off:off + namesz].rstrip(b"\0").decode(errors="replace")
        off += (namesz + 3) & ~3
        desc = blob[off:off + descsz]
        off += (descsz + 3) & ~3
        yield name, ntype, desc


def _decode_metadata(desc: bytes) -> dict:
    import msgpack
    return msgpack.unpackb(desc, raw=False, strict_map_key=False)


def read_hsaco(data: bytes) -> HsacoInfo:
    elf = read_elf(data)
    symbols = list(elf.symbols())
    meta: dict = {}
    for s in elf.sections:
        if s.type == SHT_NOTE:
            for name, ntype, desc in _notes(elf.contents(s)):
                if name == "AMDGPU" and ntype == NT_AMDGPU_METADATA:
                    meta = _decode_metadata(desc)
    kernels = tuple(HsacoKernel(
        name=k.get(".name", ""), symbol=k.get(".symbol", ""),
        kernarg_segment_size=int(k.get(".kernarg_segment_size", 0)),
        wavefront_size=int(k.get(".wavefront_size", 0)),
        group_segment_fixed_size=int(k.get(".group_segment_fixed_size", 0)),
        private_segment_fixed_size=int(k.get(".private_segment_fixed_size", 0)),
        sgpr_count=int(k.get(".sgpr_count", 0)), vgpr_count=int(k.get(".vgpr_count", 0)),
        max_flat_workgroup_size=int(k.get(".max_flat_workgroup_size", 0)),
        args=tuple(k.get(".args", ()))) for k in meta.get("amdhsa.kernels", ()))
    return HsacoInfo(elf.machine, MACH.get(elf.flags & EF_AMDGPU_MACH), tuple(s.name for s in elf.sections),
                     tuple(s.name for s in symbols if s.is_function),
                     tuple(sorted({s.name for s in symbols if s.is_undefined_global})),
                     str(meta.get("amdhsa.target", "")), kernels, meta)


# --- the kernel argument layout a signature implies --------------------------------------------
_ARG_BYTES = {"i1": 1, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "fp16": 2, "bf16": 2, "i32": 4, "u32": 4,
              "fp32": 4, "i64": 8, "u64": 8, "fp64": 8}


def arg_size(ty: str) -> int:
    """Bytes of one kernel argument of Triton type ``ty`` (pointers are 8)."""
    if ty.startswith("*"):
        return 8
    try:
        return _ARG_BYTES[ty]
    except KeyError:
        raise ValueError(f"unsupported kernel argument type {ty!r}") from None


def leaf_type(signature: dict, name: str) -> str:
    """The type of run-time parameter ``name`` in a kernel's ``signature``: a parameter's own, or
    for a leaf of a tuple argument (``ptrs[1][0]``) the entry at that path of its nested types."""
    base, _, rest = name.partition("[")
    ty = signature[base]
    for index in rest.rstrip("]").split("][") if rest else ():
        ty = ty[int(index)]
    return ty


def explicit_kernarg_layout(types: list[str]) -> list[tuple[int, int]]:
    """``(offset, size)`` of each argument: naturally aligned, in order (the AMDGPU ABI)."""
    out, off = [], 0
    for t in types:
        size = arg_size(t)
        off = (off + size - 1) // size * size
        out.append((off, size))
        off += size
    return out


# --- the checks a compile-only run makes of a code object ------------------------------------
def check_hsaco(binary: bytes, metadata: dict) -> None:
    """Raise ``ValueError`` saying what is wrong with ``binary`` for the kernel ``metadata``
    describes (what ``HipDriver.check_binary`` checks)."""
    name = metadata.get("name")
    info = read_hsaco(bytes(binary))
    if info.machine != EM_AMDGPU:
        raise ValueError(f"ELF machine is {info.machine}, expected EM_AMDGPU ({EM_AMDGPU})")
    target = str(metadata.get("target", ""))
    arch = target.partition(":")[2]
    if arch and info.arch != arch:
        raise ValueError(f"code object is for {info.arch}, the kernel was compiled for {arch}")
    if arch and not info.target.endswith(arch) and f"--{arch}" not in info.target:
        raise ValueError(f"amdhsa.target is {info.target!r}, expected the {arch} target")
    if info.undefined:
        raise ValueError(f"the code object needs symbols it does not define: {', '.join(info.undefined)} "
                         "(the HIP runtime cannot load it)")
    try:
        k = info.kernel(name)
    except KeyError as e:
        raise ValueError(str(e.args[0])) from None
    if k.symbol != f"{name}.kd":
        raise ValueError(f"kernel descriptor symbol is {k.symbol!r}, expected {name + '.kd'!r}")
    types = [leaf_type(metadata["signature"], n) for n in metadata.get("arg_names", ())]
    want = explicit_kernarg_layout(types)
    got = [(int(a[".offset"]), int(a[".size"])) for a in k.explicit_args]
    if got != want:
        raise ValueError(f"kernel arguments (offset, size) are {got}, the signature {types} needs {want}")
    end = max([o + n for o, n in want] + [int(a[".offset"]) + int(a[".size"]) for a in k.args])
    hidden = len(k.args) > len(k.explicit_args)
    # without hidden arguments the segment is the signature's, rounded up to 4 bytes (LLVM's
    # kernarg segment alignment); with them LLVM reserves the whole implicit-argument block after
    # the explicit ones
    if k.kernarg_segment_size < end or (not hidden and k.kernarg_segment_size != (end + 3) // 4 * 4):
        raise ValueError(f"kernarg segment is {k.kernarg_segment_size} bytes, the arguments need {end}")
    wave = int(metadata.get("threads_per_warp", 0) or 0)
    if arch in ARCHS:
        wave = wave or ARCHS[arch].warp_size
        if wave != ARCHS[arch].warp_size:
            raise ValueError(f"compiled for {wave}-lane wavefronts, {arch} runs {ARCHS[arch].warp_size}")
    if wave and k.wavefront_size != wave:
        raise ValueError(f"wavefront size is {k.wavefront_size}, expected {wave}")
    shared = int(metadata.get("shared", 0) or 0)
    if k.group_segment_fixed_size != shared:
        raise ValueError(f"LDS size is {k.group_segment_fixed_size} bytes, the allocation pass reserved {shared}")
    threads = int(metadata.get("num_warps", 0) or 0) * wave
    if threads and k.max_flat_workgroup_size < threads:
        raise ValueError(f"max flat workgroup size is {k.max_flat_workgroup_size}, the launch uses {threads}")
