"""A minimal reader for cubin files (64-bit little-endian ELF): section names, symbols and the
``sm_XX`` the file was built for.  Enough to check a cubin without ``cuobjdump``."""
from __future__ import annotations

import struct
from dataclasses import dataclass

EM_CUDA = 190


@dataclass(frozen=True)
class CubinInfo:
    machine: int
    arch: int            # e.g. 90, read from e_flags
    sections: tuple[str, ...]
    functions: tuple[str, ...]   # STT_FUNC symbols
    symbols: tuple[str, ...]


def _cstr(blob: bytes, off: int) -> str:
    end = blob.index(b"\0", off)
    return blob[off:end].decode()


def read_cubin(data: bytes) -> CubinInfo:
    if data[:4] != b"\x7fELF":
        raise ValueError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ValueError("expected a 64-bit little-endian ELF")
    (e_type, e_machine, _ver, _entry, _phoff, e_shoff, e_flags, _ehsize, _phentsize, _phnum,
     e_shentsize, e_shnum, e_shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
    sections = []
    for i in range(e_shnum):
        sections.append(struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize))
    shstr_off = sections[e_shstrndx][4]
    names = [_cstr(data, shstr_off + s[0]) for s in sections]
    functions, symbols = [], []
    for s in sections:
        if s[1] != 2:  # SHT_SYMTAB
            continue
        _name, _type, _flags, _addr, off, size, link, _info, _align, entsize = s
        strtab_off = sections[link][4]
        for j in range(size // entsize):
            st_name, st_info, _other, _shndx, _value, _size = struct.unpack_from("<IBBHQQ", data, off + j * entsize)
            if not st_name:
                continue
            sym = _cstr(data, strtab_off + st_name)
            symbols.append(sym)
            if st_info & 0xF == 2:  # STT_FUNC
                functions.append(sym)
    # CUDA ELF keeps the SM version in the low bits of e_flags (bits 0-7 before ABI v8, 8-15 after).
    arch = e_flags & 0xFF if (e_flags & 0xFF) >= 20 else (e_flags >> 8) & 0xFF
    return CubinInfo(e_machine, arch, tuple(names), tuple(functions), tuple(symbols))
