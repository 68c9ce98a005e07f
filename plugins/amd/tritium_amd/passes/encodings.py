"""AMD's layout encodings, registered in the ``ttg`` dialect through ``tritium_layout_encodings``::

    #ttg.amd_mfma<{versionMajor = 3, warpsPerCTA = [2, 2], instrShape = [32, 32], isTransposed = false}>
    #ttg.amd_wmma<{version = 1, warpsPerCTA = [2, 2], isTranspose = true}>

Each is the accumulator layout of one matrix instruction (CDNA's MFMA on 64-lane wavefronts, RDNA3's
WMMA on 32-lane ones) tiled over the warps, and the parent of the ``dot_op`` layouts of its
operands.  Both reduce to a linear layout over (register, lane, warp) bits, so the core's passes
and its generic ``convert_layout`` lowering move data in and out of them like any other layout.

The bases follow AMD's documented register layouts (the AMD matrix instruction calculator; LLVM's
AMDGPU usage notes), for an ``M x N`` accumulator tile and ``M x K`` / ``K x N`` operands, with
``kWidth`` consecutive K elements per lane in each operand:

* MFMA 32x32 (64 lanes): ``D[i][j]`` in lane ``j + 32 * ((i // 4) % 2)``, register
  ``i % 4 + 4 * (i // 8)``; ``A[i][k]`` in lane ``i + 32 * (k // kWidth)``, element ``k % kWidth``
  (B symmetric with ``j`` for ``i``).
* MFMA 16x16 (64 lanes): ``D[i][j]`` in lane ``j + 16 * (i // 4)``, register ``i % 4``;
  ``A[i][k]`` in lane ``i + 16 * (k // kWidth)``, element ``k % kWidth``.
* WMMA 16x16x16 (32 lanes, gfx11): ``D[i][j]`` in lane ``j + 16 * (i % 2)``, register ``i // 2``;
  ``A[i][k]`` in lane ``i`` and again in lane ``i + 16`` (both halves hold the whole row), element
  ``k``.
* Transposed accumulators (``isTransposed`` / ``isTranspose``) trade ``i`` and ``j`` in the lane
  and register of ``D[i][j]``: the instruction computes ``D^T = B^T A^T`` with its sources swapped.

Warps tile the instruction grid: the first ``log2(warpsPerCTA[1])`` warp bits step along N, the
next ones along M; an operand is broadcast over the warps of the dimension it does not have.
Repetitions (a tensor larger than the warps' tiles) are further register bits, instruction
registers first."""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.irdl import irdl_attr_definition
from xdsl.ir import ParametrizedAttribute
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tritium.ttgir.encodings import DistributedEncoding, ints, parse_fields, print_fields
from tritium.ttgir.linear_layout import LinearLayout, fit_to_shape, is_pow2, log2


def _tuple(a: ArrayAttr) -> tuple[int, ...]:
    return tuple(x.data for x in a.data)


def _axis(d: int, v: int) -> tuple[int, int]:
    return (v, 0) if d == 0 else (0, v)


def _warp_bases(warps: tuple[int, int], tile: tuple[int, int], keep: tuple[bool, bool]) -> list:
    """Warp bits: N first, then M; a dimension not in ``keep`` gets zero bases (broadcast)."""
    out = []
    for d in (1, 0):
        for b in range(log2(warps[d])):
            out.append(_axis(d, tile[d] << b) if keep[d] else (0, 0))
    return out


class AMDMatrixEncoding(DistributedEncoding):
    """What the MFMA and WMMA encodings share: rank 2, ``[M, N]`` instruction tiles per warp."""

    @property
    def wave(self) -> int:
        """Lanes per wavefront the instruction runs on."""
        return 64

    @property
    def warps_per_cta(self) -> tuple[int, ...]:
        return _tuple(self.warpsPerCTA)

    @property
    def order(self) -> tuple[int, ...]:
        return (1, 0)

    @property
    def instr_shape(self) -> tuple[int, int]:
        raise NotImplementedError

    @property
    def threads_per_warp(self) -> tuple[int, ...]:
        m, n = self.instr_shape
        return (self.wave // n, n)

    def acc_bases(self) -> tuple[list, list]:
        """(register, lane) bases of one instruction's accumulator tile."""
        raise NotImplementedError

    def operand_bases(self, op_idx: int, k_width: int) -> tuple[list, list, int]:
        """(register, lane) bases of one instruction's operand tile, in ``(non-K, K)``
        coordinates, and the K extent one instruction consumes."""
        raise NotImplementedError

    def verify(self) -> None:
        w = self.warps_per_cta
        if len(w) != 2 or not all(is_pow2(x) for x in w):
            raise VerifyException(f"#{self.name} warpsPerCTA must be two powers of two, got {list(w)}")

    def linear_layout(self, shape: Sequence[int]) -> LinearLayout:
        if len(shape) != 2:
            raise ValueError(f"#{self.name} is a rank-2 layout, got shape {tuple(shape)}")
        reg, lane = self.acc_bases()
        warp = _warp_bases(self.warps_per_cta, self.instr_shape, (True, True))
        return fit_to_shape(reg, lane, warp, tuple(shape), (1, 0))

    def dot_operand_linear_layout(self, op_idx: int, k_width: int, shape: Sequence[int]) -> LinearLayout:
        if len(shape) != 2:
            raise ValueError(f"dot operands of #{self.name} are rank 2, got shape {tuple(shape)}")
        reg, lane, _k = self.operand_bases(op_idx, k_width)
        # (non-K, K) -> (M, K) for A, (K, N) for B
        swap = (lambda v: v) if op_idx == 0 else (lambda v: (v[1], v[0]))
        reg, lane = [swap(v) for v in reg], [swap(v) for v in lane]
        keep = (True, False) if op_idx == 0 else (False, True)
        m, n = self.instr_shape
        warp = _warp_bases(self.warps_per_cta, (m, n), keep)
        order = (1, 0) if op_idx == 0 else (0, 1)  # K repeats first, then the other dimension
        return fit_to_shape(reg, lane, warp, tuple(shape), order)


@irdl_attr_definition
class AMDMfmaEncodingAttr(ParametrizedAttribute, AMDMatrixEncoding):
    """The accumulator of CDNA's ``v_mfma_*`` instructions (64-lane wavefronts), ``instrShape``
    ``[32, 32]`` or ``[16, 16]``; ``versionMajor`` is the CDNA generation (2: gfx90a, 3: gfx942).
    ``isTransposed`` swaps rows and columns inside each warp's tile: the compiler's MFMA dots
    produce it (the instruction fed B then A computes the transposed tile), as Triton's do."""

    name = "ttg.amd_mfma"

    versionMajor: IntAttr
    warpsPerCTA: ArrayAttr
    instrShape: ArrayAttr
    isTransposed: IntAttr

    def __init__(self, version_major: int, warps_per_cta: Sequence[int], instr_shape: Sequence[int],
                 is_transposed: bool = False):
        super().__init__(IntAttr(version_major), ints(warps_per_cta), ints(instr_shape), IntAttr(int(is_transposed)))

    @property
    def instr_shape(self) -> tuple[int, int]:
        s = _tuple(self.instrShape)
        return s[0], s[1]

    @property
    def size_per_thread(self) -> tuple[int, ...]:
        return (4, 1)

    def verify(self) -> None:
        super().verify()
        if self.instr_shape not in ((32, 32), (16, 16)):
            raise VerifyException(f"#ttg.amd_mfma instrShape must be [32, 32] or [16, 16], got "
                                  f"{list(self.instr_shape)}")

    @property
    def is_transposed(self) -> bool:
        return bool(self.isTransposed.data)

    def acc_bases(self):
        m, _n = self.instr_shape
        groups = 64 // m                                     # lane groups of m lanes
        reg = [(1, 0), (2, 0)] + [(4 * groups << b, 0) for b in range(log2(m // (4 * groups)))]
        lane = [(0, 1 << b) for b in range(log2(m))] + [(4 << b, 0) for b in range(log2(groups))]
        if self.is_transposed:
            # the transposed accumulator (what Triton's isTransposed = true means): within a warp,
            # rows and columns trade places -- lanes walk M, registers walk N; warps are unchanged
            reg, lane = [(c, r) for r, c in reg], [(c, r) for r, c in lane]
        return reg, lane

    def operand_bases(self, op_idx, k_width):
        m, _n = self.instr_shape
        groups = 64 // m
        reg = [(0, 1 << b) for b in range(log2(k_width))]
        lane = [(1 << b, 0) for b in range(log2(m))] + [(0, k_width << b) for b in range(log2(groups))]
        return reg, lane, k_width * groups

    def print_parameters(self, printer: Printer) -> None:
        print_fields(printer, [("versionMajor", self.versionMajor.data), ("warpsPerCTA", self.warps_per_cta),
                               ("instrShape", self.instr_shape),
                               ("isTransposed", "true" if self.isTransposed.data else "false")])

    @classmethod
    def parse_parameters(cls, parser: AttrParser):
        # `versionMajor`/`versionMinor` (Triton 3.0-3.2) or `version` (later); instrShape [M, N] or
        # [M, N, K] (later Triton adds K); the CTA fields of one CTA
        f = parse_fields(parser, {"versionMajor": "int", "versionMinor": "int", "version": "int",
                                  "warpsPerCTA": "ints", "instrShape": "ints", "isTransposed": "bool",
                                  "CTAsPerCGA": "ints", "CTASplitNum": "ints", "CTAOrder": "ints"})
        version = f.get("versionMajor", f.get("version"))
        if version is None:
            parser.raise_error("#ttg.amd_mfma needs versionMajor (or version)")
        return (IntAttr(version), ints(f["warpsPerCTA"]), ints(f.get("instrShape", (32, 32))[:2]),
                IntAttr(int(f.get("isTransposed", False))))


@irdl_attr_definition
class AMDWmmaEncodingAttr(ParametrizedAttribute, AMDMatrixEncoding):
    """The accumulator of RDNA3's ``v_wmma_*_16x16x16`` instructions (32-lane wavefronts);
    ``version`` 1 is gfx11's layout.  ``isTranspose`` (Triton's spelling) swaps rows and columns
    inside each tile, as ``amd_mfma``'s ``isTransposed``: a lane then holds half of one row (every
    other column), so a row reduction is one exchange between the wavefront's halves and a 16-bit
    result feeding the next dot as its A operand (attention's P) moves between the halves in
    registers instead of through LDS."""

    name = "ttg.amd_wmma"

    version: IntAttr
    warpsPerCTA: ArrayAttr
    isTranspose: IntAttr

    def __init__(self, version: int, warps_per_cta: Sequence[int], is_transposed: bool = False):
        super().__init__(IntAttr(version), ints(warps_per_cta), IntAttr(int(is_transposed)))

    @property
    def instr_shape(self) -> tuple[int, int]:
        return 16, 16

    @property
    def wave(self) -> int:
        return 32

    @property
    def size_per_thread(self) -> tuple[int, ...]:
        return (1, 1)

    @property
    def is_transposed(self) -> bool:
        return bool(self.isTranspose.data)

    def verify(self) -> None:
        super().verify()
        if self.version.data != 1:
            raise VerifyException(f"#ttg.amd_wmma version must be 1 (gfx11), got {self.version.data}")

    def acc_bases(self):
        reg = [(2, 0), (4, 0), (8, 0)]
        lane = [(0, 1), (0, 2), (0, 4), (0, 8), (1, 0)]
        if self.is_transposed:
            reg, lane = [(c, r) for r, c in reg], [(c, r) for r, c in lane]
        return reg, lane

    def operand_bases(self, op_idx, k_width):
        if k_width != 16:
            raise ValueError(f"WMMA operands hold 16 K elements per lane, got kWidth={k_width}")
        reg = [(0, 1 << b) for b in range(4)]
        lane = [(1 << b, 0) for b in range(4)] + [(0, 0)]    # lanes 16-31 replicate lanes 0-15
        return reg, lane, 16

    def print_parameters(self, printer: Printer) -> None:
        fields = [("version", self.version.data), ("warpsPerCTA", self.warps_per_cta)]
        if self.is_transposed:
            fields.append(("isTranspose", "true"))
        print_fields(printer, fields)

    @classmethod
    def parse_parameters(cls, parser: AttrParser):
        f = parse_fields(parser, {"version": "int", "warpsPerCTA": "ints", "isTranspose": "bool"})
        return (IntAttr(f["version"]), ints(f["warpsPerCTA"]), IntAttr(int(f.get("isTranspose", False))))


AMD_ENCODINGS: list[type] = [AMDMfmaEncodingAttr, AMDWmmaEncodingAttr]
