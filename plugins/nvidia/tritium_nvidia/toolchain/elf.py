"""A minimal reader for cubin files (64-bit little-endian ELF): section names, symbols and the
``sm_XX`` the file was built for.  Enough to check a cubin without ``cuobjdump``."""
from __future__ import annotations

from dataclasses import dataclass

from tritium.compiler.elf import read_elf

EM_CUDA = 190


@dataclass(frozen=True)
class CubinInfo:
    machine: int
    arch: int            # e.g. 90, read from e_flags
    sections: tuple[str, ...]
    functions: tuple[str, ...]   # STT_FUNC symbols
    symbols: tuple[str, ...]


def read_cubin(data: bytes) -> CubinInfo:
    elf = read_elf(data)
    symbols = list(elf.symbols())
    # CUDA ELF keeps the SM version in the low bits of e_flags (bits 0-7 before ABI v8, 8-15 after).
    arch = elf.flags & 0xFF if (elf.flags & 0xFF) >= 20 else (elf.flags >> 8) & 0xFF
    return CubinInfo(elf.machine, arch, tuple(s.name for s in elf.sections),
                     tuple(s.name for s in symbols if s.is_function), tuple(s.name for s in symbols))
