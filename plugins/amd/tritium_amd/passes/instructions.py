"""The matrix instructions Tritium uses on AMD GPUs and how it picks one for a ``tt.dot``.

An :class:`Instr` names the LLVM intrinsic, the tile it computes (``m x n x k`` per wavefront),
how many K elements of each operand a lane holds (``k_width``) and the LLVM types of its operands
and accumulator.  :func:`choose` returns the instruction for a dot, or the reason there is none
(the dot then runs on FMAs, and the reason is recorded in the compile metadata)."""
from __future__ import annotations

from dataclasses import dataclass

from ..options import Arch


@dataclass(frozen=True)
class Instr:
    kind: str            # "mfma" or "wmma"
    intrinsic: str       # LLVM intrinsic name
    m: int
    n: int
    k: int
    k_width: int         # K elements of each operand per lane
    a_type: str          # "f16", "bf16" (passed as i16), "i8"; fp8 pairs: "fp8.fp8", "fp8.bf8"...
    acc: str             # "f32" or "i32"
    acc_regs: int        # accumulator registers per lane
    pack: int = 0        # i8 and fp8 operands: bits of the packed integer (32 or 64); 0: a vector


def _mfma(name, m, k, kw, a, acc, pack=0):
    return Instr("mfma", f"llvm.amdgcn.mfma.{name}", m, m, k, kw, a, acc, m * m // 64, pack)


# CDNA2 (gfx90a) and CDNA3 (gfx942).  gfx942 dropped the 4-byte int8 forms for 8-byte ones.
_MFMA = {
    ("cdna2", "f16"): [_mfma("f32.32x32x8f16", 32, 8, 4, "f16", "f32"), _mfma("f32.16x16x16f16", 16, 16, 4, "f16", "f32")],
    ("cdna3", "f16"): [_mfma("f32.32x32x8f16", 32, 8, 4, "f16", "f32"), _mfma("f32.16x16x16f16", 16, 16, 4, "f16", "f32")],
    ("cdna2", "bf16"): [_mfma("f32.32x32x8bf16.1k", 32, 8, 4, "bf16", "f32"),
                        _mfma("f32.16x16x16bf16.1k", 16, 16, 4, "bf16", "f32")],
    ("cdna3", "bf16"): [_mfma("f32.32x32x8bf16.1k", 32, 8, 4, "bf16", "f32"),
                        _mfma("f32.16x16x16bf16.1k", 16, 16, 4, "bf16", "f32")],
    ("cdna2", "i8"): [_mfma("i32.32x32x8i8", 32, 8, 4, "i8", "i32", 32), _mfma("i32.16x16x16i8", 16, 16, 4, "i8", "i32", 32)],
    ("cdna3", "i8"): [_mfma("i32.32x32x16.i8", 32, 16, 8, "i8", "i32", 64),
                      _mfma("i32.16x16x32.i8", 16, 32, 8, "i8", "i32", 64)],
}

# gfx942's fp8 MFMA takes the FNUZ formats: fp8 = e4m3 with bias 8 (tl.float8e4b8), bf8 = e5m2 with
# bias 16 (tl.float8e5b16), eight of them per lane packed in an i64, in any pairing of A and B
FNUZ_FP8 = {"fp8e4b8": "fp8", "fp8e5b16": "bf8"}
for _a in ("fp8", "bf8"):
    for _b in ("fp8", "bf8"):
        _MFMA[("cdna3", f"{_a}.{_b}")] = [_mfma(f"f32.32x32x16.{_a}.{_b}", 32, 16, 8, f"{_a}.{_b}", "f32", 64),
                                          _mfma(f"f32.16x16x32.{_a}.{_b}", 16, 32, 8, f"{_a}.{_b}", "f32", 64)]


def operand_key(family: str, a_type: str, b_type: str) -> str | None:
    """The instruction family of a native fp8 dot (``"fp8.bf8"``...) on ``family``, or None."""
    if family == "cdna3" and a_type in FNUZ_FP8 and b_type in FNUZ_FP8:
        return f"{FNUZ_FP8[a_type]}.{FNUZ_FP8[b_type]}"
    return None


_WMMA = {
    "f16": Instr("wmma", "llvm.amdgcn.wmma.f32.16x16x16.f16", 16, 16, 16, 16, "f16", "f32", 8),
    "bf16": Instr("wmma", "llvm.amdgcn.wmma.f32.16x16x16.bf16", 16, 16, 16, 16, "bf16", "f32", 8),
    "i8": Instr("wmma", "llvm.amdgcn.wmma.i32.16x16x16.iu8", 16, 16, 16, 16, "i8", "i32", 8, 32),
}


def choose(arch: Arch, a_type: str, b_type: str, acc: str, m: int, n: int, k: int,
           nonkdim: int = 0) -> tuple[Instr | None, str]:
    """The instruction for an ``m x n x k`` dot of ``a_type`` x ``b_type`` into ``acc`` on
    ``arch`` (``nonkdim`` forces the MFMA tile, 16 or 32), or ``(None, reason)``."""
    if not arch.matrix:
        return None, f"{arch.name} has no matrix instructions"
    key = operand_key(arch.family, a_type, b_type)
    if key is not None:
        a_type = b_type = key
    elif a_type != b_type:
        return None, f"operand types differ ({a_type} x {b_type})"
    want = "f32" if key else {"f16": "f32", "bf16": "f32", "i8": "i32"}.get(a_type)
    if want is None:
        kinds = "fp16, bf16, int8 and FNUZ fp8" if arch.family == "cdna3" else "fp16, bf16 and int8"
        return None, f"{a_type} operands: only {kinds} dots use {arch.matrix.upper()}"
    if acc != want:
        return None, f"{a_type} operands with a {acc} accumulator ({arch.matrix.upper()} accumulates in {want})"
    if arch.matrix == "wmma":
        cands = [_WMMA[a_type]]
    else:
        cands = [i for i in _MFMA[(arch.family, a_type)] if not nonkdim or i.m == nonkdim]
    for ins in cands:
        if m >= ins.m and n >= ins.n and k % ins.k == 0:
            return ins, ""
    sizes = " or ".join(f"{i.m}x{i.n}x{i.k}" for i in cands)
    return None, f"the {m}x{n}x{k} dot is smaller than (or not a multiple in K of) the {sizes} tile"


def warps_per_cta(num_warps: int, m: int, n: int, ins: Instr) -> tuple[int, int]:
    """Spread ``num_warps`` over the instruction tiles, along the dimension with more tiles left;
    warps beyond the tiles hold copies (the layout broadcasts them)."""
    wm, wn = 1, 1
    while wm * wn < num_warps:
        tiles_m, tiles_n = m // (ins.m * wm), n // (ins.n * wn)
        if tiles_m >= 2 and tiles_m >= tiles_n:
            wm *= 2
        elif tiles_n >= 2:
            wn *= 2
        else:
            wm *= 2
    return wm, wn
