"""A reader of 64-bit little-endian ELF files: the header's machine and flags, the sections by
name and the symbols of the symbol tables.  What the GPU plugins' binary checks (cubin, hsaco)
start from, without ``readelf`` or a vendor's tools."""
from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

SHT_SYMTAB = 2
SHT_NOTE = 7
STT_FUNC = 2


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    offset: int
    size: int
    link: int
    entsize: int


@dataclass(frozen=True)
class Symbol:
    name: str
    info: int   # binding << 4 | type
    shndx: int  # 0: undefined here

    @property
    def is_function(self) -> bool:
        return self.info & 0xF == STT_FUNC

    @property
    def is_undefined_global(self) -> bool:
        """Needed from elsewhere: undefined, with global or weak binding."""
        return self.shndx == 0 and self.info >> 4 in (1, 2)


@dataclass(frozen=True)
class Elf:
    data: bytes
    machine: int
    flags: int
    sections: tuple[Section, ...]

    def contents(self, section: Section) -> bytes:
        return self.data[section.offset:section.offset + section.size]

    def symbols(self) -> Iterator[Symbol]:
        """Every named entry of every symbol table, in order."""
        for s in self.sections:
            if s.type != SHT_SYMTAB or not s.entsize:
                continue
            strtab = self.sections[s.link].offset
            for j in range(s.size // s.entsize):
                st_name, st_info, _other, shndx, _value, _size = struct.unpack_from(
                    "<IBBHQQ", self.data, s.offset + j * s.entsize)
                if st_name:
                    yield Symbol(_cstr(self.data, strtab + st_name), st_info, shndx)


def _cstr(blob: bytes, off: int) -> str:
    return blob[off:blob.index(b"\0", off)].decode()


def read_elf(data: bytes) -> Elf:
    """Parse ``data``; ``ValueError`` when it is not a 64-bit little-endian ELF file."""
    data = bytes(data)
    if data[:4] != b"\x7fELF":
        raise ValueError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ValueError("expected a 64-bit little-endian ELF")
    (_type, machine, _ver, _entry, _phoff, shoff, flags, _ehsize, _phentsize, _phnum,
     shentsize, shnum, shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
    raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = raw[shstrndx][4] if raw else 0
    sections = tuple(Section(_cstr(data, names_at + r[0]), r[1], r[4], r[5], r[6], r[9]) for r in raw)
    return Elf(data, machine, flags, sections)
