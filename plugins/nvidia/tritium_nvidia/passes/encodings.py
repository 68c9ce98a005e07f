"""NVIDIA's layout encodings, registered in the ``ttg`` dialect through ``tritium_layout_encodings``::

    #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
    #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1, 1], instrShape = [1, 16, 8]}>
    #ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [8, 1], instrShape = [16, 256, 16]}>
    #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>

``nvidia_mma`` is the accumulator of the tensor-core instructions: version 2 is ``mma.sync.m16n8kK``
(sm_80+, one warp per 16x8 tile), version 3 is ``wgmma.mma_async.m64nNkK`` (sm_90, a warpgroup of four
consecutive warps per 64xN tile).  Both place an accumulator element the same way inside a warp's
16-row slab: lane ``l`` holds rows ``l/4`` and ``l/4 + 8`` and columns ``2*(l%4) + {0, 1}`` of each
8-column block (an fp16 accumulator packs each such column pair into one 32-bit register).  A
version-2 layout may be 3-D (a batched dot): warps then split the leading batch dimension, each
holding whole 2-D tiles.  ``dot_op`` operands of a version-2 parent hold the ``mma.sync`` A/B
fragments; version 3 reads B (and A, unless it was computed in registers) from shared memory.

``nvmma_shared`` is the shared-memory layout the tensor cores (wgmma descriptors) and 16-byte
``cp.async`` copies agree on: the contiguous dimension is cut into rows of ``swizzlingByteWidth``
bytes, rows are stacked along the other dimension, and inside each group of 8 rows the 16-byte chunks
are XOR-swizzled by the row number (``transposed`` = the contiguous dimension is dim 0).  Every piece
of it is a power-of-two bit field or an XOR, so the byte offset is linear over GF(2) in the
coordinate bits: ``offset_bases`` gives one byte offset per coordinate bit and the offset of any
element is the XOR of those of its set bits.
"""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.ir import ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tritium.ttgir.encodings import (DistributedEncoding, SharedEncoding, ints, parse_fields,
                                     print_fields)
from tritium.ttgir.linear_layout import LinearLayout, log2

Basis = tuple[int, ...]

#: lane bases of every mma accumulator/operand tile (per 16x8 warp tile): lane bits 0-1 pick the
#: column pair, bits 2-4 the row
_ACC_LANES = ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0))


def _tuple(a: ArrayAttr) -> tuple[int, ...]:
    return tuple(x.data for x in a.data)


def _repeat(base: Basis, extent: int, limit: int) -> list[Basis]:
    """Bases ``base * 2**i`` along one dimension while the coordinate stays below ``limit``."""
    d = next(i for i, v in enumerate(base) if v)
    out, step = [], base[d]
    while step < limit:
        out.append(tuple(step if e == d else 0 for e in range(len(base))))
        step *= 2
    return out


def _clip(bases: Sequence[Basis], shape: Sequence[int]) -> tuple[Basis, ...]:
    """Lane/warp bases reaching past the shape hold duplicates (basis zero)."""
    return tuple(tuple(v if v < shape[d] else 0 for d, v in enumerate(b)) for b in bases)


def _batched(tile: LinearLayout, shape: Sequence[int], warps: int) -> LinearLayout:
    """A 2-D tile layout repeated over a leading batch dimension: ``warps`` warps take consecutive
    batch indices (warps beyond the batch hold duplicates), and the registers
    wrap along the batch beyond them."""
    batch = shape[0]
    reg = [(0, *b) for b in tile.register] + _repeat((warps, 0, 0), 0, batch)
    lane = [(0, *b) for b in tile.lane]
    warp = [(0, *b) for b in tile.warp] + [((1 << i) if (1 << i) < batch else 0, 0, 0) for i in range(log2(warps))]
    return LinearLayout(tuple(shape), tuple(reg), tuple(lane), tuple(warp))


@irdl_attr_definition
class NvidiaMmaEncodingAttr(ParametrizedAttribute, DistributedEncoding):
    """The tensor-core accumulator layout (see the module docstring)."""

    name = "ttg.nvidia_mma"

    versionMajor: IntAttr
    versionMinor: IntAttr
    warpsPerCTA: ArrayAttr
    instrShape: ArrayAttr

    def __init__(self, version: int, warps_per_cta: Sequence[int], instr_shape: Sequence[int], minor: int = 0):
        super().__init__(IntAttr(version), IntAttr(minor), ints(warps_per_cta), ints(instr_shape))

    version = property(lambda self: self.versionMajor.data)
    warps_per_cta = property(lambda self: _tuple(self.warpsPerCTA))
    instr_shape = property(lambda self: _tuple(self.instrShape))

    @property
    def order(self) -> tuple[int, ...]:
        return tuple(range(len(self.warps_per_cta) - 1, -1, -1))

    @property
    def size_per_thread(self) -> tuple[int, ...]:
        return (1,) * (len(self.warps_per_cta) - 2) + (2, 2)

    @property
    def threads_per_warp(self) -> tuple[int, ...]:
        return (1,) * (len(self.warps_per_cta) - 2) + (8, 4)

    @property
    def instr_n(self) -> int:
        """Columns one warp's instruction covers (8 for mma.sync, N of m64nNk for wgmma)."""
        return self.instr_shape[1] if self.version == 3 else 8

    def verify(self) -> None:
        if self.version not in (2, 3):
            raise VerifyException(f"#ttg.nvidia_mma versionMajor must be 2 or 3, got {self.version}")
        warps = self.warps_per_cta
        ranks = (2, 3) if self.version == 2 else (2,)
        if len(warps) not in ranks or not all(warps):
            raise VerifyException(f"#ttg.nvidia_mma version {self.version} needs {' or '.join(map(str, ranks))} "
                                  f"warpsPerCTA entries, got {list(warps)}")
        # (version 3 with warpsPerCTA[0] not a multiple of 4 is a valid layout -- Triton's layout tests
        # convert through it -- but no wgmma can produce it: ttng.warp_group_dot checks that)
        for w in warps:
            log2(w)

    def linear_layout(self, shape: Sequence[int]) -> LinearLayout:
        if len(shape) == 3:
            return _batched(self._tile_layout(shape[1:]), shape, self.warps_per_cta[0])
        return self._tile_layout(shape)

    def _tile_layout(self, shape: Sequence[int]) -> LinearLayout:
        m, n = shape
        wm, wn = self.warps_per_cta[-2:]
        inst_n = self.instr_n
        reg: list[Basis] = [(0, 1), (8, 0)]
        reg += _repeat((0, 8), 8, inst_n)                                   # 8-column blocks of one wgmma
        reg += _repeat((0, inst_n * wn), 0, n)                              # wrap along N
        reg += _repeat((16 * wm, 0), 0, m)                                  # wrap along M
        reg = [b for b in reg if b[0] < m and b[1] < n]  # a dimension smaller than the tile (a row of
        # a reduction broadcast back) keeps no registers along it
        warp = [(16 << i, 0) for i in range(log2(wm))] + [(0, inst_n << i) for i in range(log2(wn))]
        return LinearLayout((m, n), tuple(reg), _clip(_ACC_LANES, shape), _clip(warp, shape))

    def dot_operand_linear_layout(self, op_idx: int, k_width: int, shape: Sequence[int]) -> LinearLayout:
        """``mma.sync`` fragments: with ``g = lane/4``, ``t = lane%4`` and ``kw = k_width`` elements
        per 32-bit register, A's register ``r`` holds row ``g + 8*(r&1)``, columns
        ``kw*t + 4*kw*(r>>1) + [0, kw)``; B's holds column ``g``, rows ``kw*t + 4*kw*r + [0, kw)``.
        A 3-D (batched) operand holds these tiles per batch index, warps split along the batch."""
        if self.version == 3 and op_idx != 0:
            raise NotImplementedError("#ttg.nvidia_mma version 3 reads its B operand from shared memory")
        if len(shape) == 3:
            return _batched(self._operand_tile_layout(op_idx, k_width, shape[1:]), shape, self.warps_per_cta[0])
        return self._operand_tile_layout(op_idx, k_width, shape)

    def _operand_tile_layout(self, op_idx: int, k_width: int, shape: Sequence[int]) -> LinearLayout:
        # wgmma's A operand in registers is laid out per warp exactly like mma.sync's
        kw = k_width or 2
        wm, wn = self.warps_per_cta[-2:]
        if op_idx == 0:
            m, k = shape
            reg = [(0, 1 << i) for i in range(log2(kw))] + [(8, 0), (0, 4 * kw)]
            reg += _repeat((0, 8 * kw), 0, k) + _repeat((16 * wm, 0), 0, m)
            lanes = [(0, kw), (0, 2 * kw), (1, 0), (2, 0), (4, 0)]
            warp = [(16 << i, 0) for i in range(log2(wm))] + [(0, 0)] * log2(wn)
        else:
            k, n = shape
            reg = [(1 << i, 0) for i in range(log2(kw))] + [(4 * kw, 0)]
            reg += _repeat((8 * kw, 0), 0, k) + _repeat((0, 8 * wn), 0, n)
            lanes = [(kw, 0), (2 * kw, 0), (0, 1), (0, 2), (0, 4)]
            warp = [(0, 0)] * log2(wm) + [(0, 8 << i) for i in range(log2(wn))]
        # an operand smaller than the instruction (M below 16, N below 8) keeps no registers past
        # it: the lowering reads the rows or columns it wraps onto
        reg = [b for b in reg if b[0] < shape[0] and b[1] < shape[1]]
        return LinearLayout(tuple(shape), tuple(reg), _clip(lanes, shape), _clip(warp, shape))

    def print_parameters(self, printer: Printer) -> None:
        print_fields(printer, [("versionMajor", self.version), ("versionMinor", self.versionMinor.data),
                               ("warpsPerCTA", self.warps_per_cta), ("instrShape", self.instr_shape)])

    @classmethod
    def parse_parameters(cls, parser: AttrParser):
        f = parse_fields(parser, {"versionMajor": "int", "versionMinor": "int", "warpsPerCTA": "ints",
                                  "instrShape": "ints", "CTAsPerCGA": "ints", "CTASplitNum": "ints",
                                  "CTAOrder": "ints"})
        return (IntAttr(f["versionMajor"]), IntAttr(f.get("versionMinor", 0)), ints(f["warpsPerCTA"]),
                ints(f["instrShape"]))


@irdl_attr_definition
class NVMMASharedEncodingAttr(ParametrizedAttribute, SharedEncoding):
    """The tensor cores' swizzled shared-memory layout (see the module docstring)."""

    name = "ttg.nvmma_shared"

    swizzlingByteWidth: IntAttr
    transposed_: IntAttr
    elementBitWidth: IntAttr

    def __init__(self, swizzle_bytes: int, transposed: bool, element_bits: int):
        super().__init__(IntAttr(swizzle_bytes), IntAttr(int(transposed)), IntAttr(element_bits))

    swizzle_bytes = property(lambda self: self.swizzlingByteWidth.data)
    transposed = property(lambda self: bool(self.transposed_.data))
    element_bits = property(lambda self: self.elementBitWidth.data)

    @property
    def order(self) -> tuple[int, ...]:
        return (0, 1) if self.transposed else (1, 0)

    @property
    def alignment(self) -> int:
        """The hardware applies the swizzle on address bits: buffers start on a whole pattern."""
        return 1024

    def verify(self) -> None:
        if self.swizzle_bytes not in (32, 64, 128):
            raise VerifyException(f"#ttg.nvmma_shared swizzlingByteWidth must be 32, 64 or 128, "
                                  f"got {self.swizzle_bytes}")

    @property
    def row_elems(self) -> int:
        """Elements of the contiguous dimension in one swizzled row."""
        return self.swizzle_bytes * 8 // self.element_bits

    def _tile(self, shape: Sequence[int]) -> tuple[int, int]:
        """(slow extent, fast extent) of the last two dimensions."""
        r, c = shape[-2], shape[-1]
        return (c, r) if self.transposed else (r, c)

    def plain_byte_offset(self, coords: Sequence[int], shape: Sequence[int]) -> int:
        """Byte offset of ``coords`` before the swizzle: what a wgmma descriptor's start address
        holds (the hardware swizzles the addresses it derives from it)."""
        slow_n, _ = self._tile(shape)
        x, y = coords[-2], coords[-1]
        slow, fast = (y, x) if self.transposed else (x, y)
        e = self.row_elems
        return ((fast // e) * (slow_n * e) + slow * e + fast % e) * self.element_bits // 8

    def byte_offset(self, coords: Sequence[int], shape: Sequence[int]) -> int:
        """Byte offset of element ``coords`` of a buffer of ``shape`` (leading dims: whole slots)."""
        slow_n, fast_n = self._tile(shape)
        b = self.plain_byte_offset(coords, shape)
        swz = log2(self.swizzle_bytes // 16)
        b ^= ((b >> 7) & ((1 << swz) - 1)) << 4
        slot = 0
        for c, s in zip(coords[:-2], shape[:-2]):
            slot = slot * s + c
        return b + slot * (slow_n * fast_n * self.element_bits // 8)

    def offset(self, coords: Sequence[int], shape: Sequence[int]) -> int:
        return self.byte_offset(coords, shape) * 8 // self.element_bits

    def offset_bases(self, shape: Sequence[int]) -> list[list[int]]:
        """Per dimension of ``shape``, the byte offset of each coordinate bit on its own."""
        out = []
        for d, n in enumerate(shape):
            row = []
            for bit in range(log2(n)):
                c = [0] * len(shape)
                c[d] = 1 << bit
                row.append(self.byte_offset(c, shape))
            out.append(row)
        return out

    def descriptor_strides(self, shape: Sequence[int]) -> tuple[int, int]:
        """(leading, stride) byte offsets of a wgmma matrix descriptor over this buffer: the distance
        between swizzled column blocks along the contiguous dimension, and between 8-row groups."""
        slow_n, _ = self._tile(shape)
        return self.swizzle_bytes * slow_n, 8 * self.swizzle_bytes

    def print_parameters(self, printer: Printer) -> None:
        print_fields(printer, [("swizzlingByteWidth", self.swizzle_bytes),
                               ("transposed", "true" if self.transposed else "false"),
                               ("elementBitWidth", self.element_bits)])

    @classmethod
    def parse_parameters(cls, parser: AttrParser):
        f = parse_fields(parser, {"swizzlingByteWidth": "int", "transposed": "bool", "elementBitWidth": "int",
                                  "CTAsPerCGA": "ints", "CTASplitNum": "ints", "CTAOrder": "ints"})
        return (IntAttr(f["swizzlingByteWidth"]), IntAttr(int(f.get("transposed", False))),
                IntAttr(f["elementBitWidth"]))


ENCODINGS = [NvidiaMmaEncodingAttr, NVMMASharedEncodingAttr]
