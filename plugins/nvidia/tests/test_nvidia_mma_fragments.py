"""CPU-only: what each tensor-core instruction the lowering issues reads and writes, against the PTX
ISA's fragment tables ("Matrix Fragments for mma.m16n8k8/k16/k32", "Register Fragments" of
``wgmma.mma_async.m64nNk8/k16/k32``), written out below independently of the plugin.

For every warp and every instruction the lowering's loops issue (its own fragment helpers and the
layouts' register maps, as ``lowering_tc`` walks them), each lane's registers must hold exactly the
elements the ISA says, all operands of one instruction must agree on the batch, rows, columns and
K slice, each output tile must see every K slice once, and every accumulator register a warp holds
must be written.  Covered: mma.sync with fp16/bf16 (k16), tf32 (k8) and 8-bit (k32) operands,
fp32/int32/fp16 accumulators (fp16 packs column pairs), 2-D and batched 3-D layouts; wgmma's
fp32 and fp16 accumulators over 64xN tiles, with A in registers; and the shared-memory matrix
descriptors of K-major 8-bit, fp16 and tf32 operands against the buffers' layout."""
from functools import partial

import numpy as np
import pytest

from tritium.ttgir.dialect import ensure_plugin_encodings
from tritium_nvidia.passes.encodings import NvidiaMmaEncodingAttr
from tritium_nvidia.lowering.tensor_cores import _batch_origins, a_fragment, acc_fragment, b_fragment

ensure_plugin_encodings()


# --- the PTX ISA's tables (g = lane >> 2, t = lane % 4) --------------------------------------------
def ptx_a(kw: int, lane: int, i: int) -> tuple[int, int]:
    """Element ``a_i`` of mma.m16n8k{8*kw} (and of wgmma's A in registers, per warp): (row, k)."""
    g, t = lane >> 2, lane & 3
    if kw == 1:   # .tf32, k8: a0..a3
        return g + 8 * (i & 1), t + 4 * (i >> 1)
    if kw == 2:   # .f16/.bf16, k16: a0..a7
        return g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)
    # .s8/.e4m3/.e5m2, k32: a0..a15
    return g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >> 3)


def ptx_b(kw: int, lane: int, i: int) -> tuple[int, int]:
    """Element ``b_i`` of mma.m16n8k{8*kw}: (k, column)."""
    g, t = lane >> 2, lane & 3
    if kw == 1:   # b0, b1
        return t + 4 * i, g
    if kw == 2:   # b0..b3
        return 2 * t + (i & 1) + 8 * (i >> 1), g
    return 4 * t + (i & 3) + 16 * (i >> 2), g   # b0..b7


def ptx_acc(lane: int, i: int) -> tuple[int, int]:
    """Element ``c_i``/``d_i`` of the mma.m16n8 accumulator (i < 4) and of a warp's 16 rows of the
    wgmma m64nN accumulator (i < N/2): (row, column).  fp16 holds ``2j, 2j+1`` in register ``j``."""
    g, t = lane >> 2, lane & 3
    return g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)


# --- the layouts as the lowering reads them ---------------------------------------------------------
class Layout:
    def __init__(self, ll):
        self.table = ll.table()                               # [warp, lane, register, dim]
        self.index = {}
        for r, off in enumerate(ll.reg_offsets()):
            self.index.setdefault(tuple(int(x) for x in off), r)

    def at(self, warp, lane, coords):
        """Coordinates the register at thread-0 offset ``coords`` holds in (warp, lane)."""
        return tuple(int(x) for x in self.table[warp, lane, self.index[tuple(coords)]])


def _check_operand(lay, frag, ptx, warp, lead, origin, expect_origin=None):
    """Every lane's registers of one instruction's operand hold ``ptx(lane, i)`` of their element
    index (register ``r``, element ``e``: ``i = len(register)*r + e``, low element first) around one
    common origin; returns that origin."""
    *_, r0, c0 = origin
    found = None
    for lane in range(32):
        for r, reg in enumerate(frag):
            for e, (dr, dc) in enumerate(reg):
                got = lay.at(warp, lane, (*lead, r0 + dr, c0 + dc))
                pr, pc = ptx(lane, len(reg) * r + e)
                base = (*got[:-2], got[-2] - pr, got[-1] - pc)
                if found is None:
                    found = base
                assert base == found, (warp, lane, r, e, got, base, found)
    if expect_origin is not None:
        assert found == expect_origin, (found, expect_origin)
    return found


V2_CASES = [
    # (warpsPerCTA, C shape, kw, accumulator)
    ((2, 2), (64, 32), 2, "f32"), ((4, 1), (64, 64), 2, "f16"), ((1, 4), (16, 64), 2, "f32"),
    ((2, 2), (64, 32), 1, "f32"), ((2, 2), (32, 64), 4, "s32"), ((8, 1), (128, 32), 4, "s32"),
    ((1, 1, 1), (1, 32, 32), 2, "f16"), ((4, 1, 1), (2, 32, 32), 2, "f16"), ((4, 1, 1), (8, 32, 32), 4, "s32"),
    ((16, 1, 1), (4, 64, 64), 2, "f32"), ((2, 1, 1), (8, 32, 32), 1, "f32"), ((8, 1, 1), (8, 32, 32), 2, "f16"),
]


@pytest.mark.parametrize("warps,c_shape,kw,acc", V2_CASES)
def test_mma_sync_instructions_read_and_write_the_ptx_fragments(warps, c_shape, kw, acc):
    rank = len(c_shape)
    enc = NvidiaMmaEncodingAttr(2, warps, (1,) * (rank - 2) + (16, 8))
    *batch, m, n = c_shape
    k = 8 * kw * 4                                            # four K steps
    a_shape, b_shape = (*batch, m, k), (*batch, k, n)
    la = Layout(enc.dot_operand_linear_layout(0, kw, a_shape))
    lb = Layout(enc.dot_operand_linear_layout(1, kw, b_shape))
    lc = Layout(enc.linear_layout(c_shape))
    wb, wm, wn = (1,) * (3 - rank) + warps
    c_frag = acc_fragment(8, acc)
    assert [len(r) for r in c_frag] == ([2, 2] if acc == "f16" else [1, 1, 1, 1])
    for warp in range(int(np.prod(warps))):
        written, k_slices = set(), {}
        for lead in _batch_origins(list(batch), wb):
            for m0 in range(0, m, 16 * wm):
                for n0 in range(0, n, 8 * wn):
                    tile = _check_operand(lc, c_frag, ptx_acc, warp, lead, (*lead, m0, n0))
                    for k0 in range(0, k, 8 * kw):
                        a0 = _check_operand(la, a_fragment(kw), partial(ptx_a, kw), warp, lead, (*lead, m0, k0))
                        b0 = _check_operand(lb, b_fragment(kw), partial(ptx_b, kw), warp, lead, (*lead, k0, n0))
                        # one instruction: same batch, A's rows are D's, B's columns are D's, one K slice
                        assert a0[:-1] == tile[:-1] and b0[:-2] == tile[:-2] and b0[-1] == tile[-1]
                        assert a0[-1] == b0[-2]
                        k_slices.setdefault(tile, []).append(a0[-1])
                    for lane in range(32):
                        for reg in c_frag:
                            for dr, dc in reg:
                                written.add(lc.at(warp, lane, (*lead, m0 + dr, n0 + dc)))
        assert all(sorted(ks) == list(range(0, k, 8 * kw)) for ks in k_slices.values())
        held = {tuple(int(x) for x in c) for c in lc.table[warp].reshape(-1, rank)}
        assert written == held                                # every register of the warp's result
    # and the warps together cover the whole output
    assert {tuple(int(x) for x in c) for c in lc.table.reshape(-1, rank)} == {
        tuple(int(x) for x in idx) for idx in np.ndindex(*c_shape)}


V3_CASES = [
    # (warpsPerCTA, instrShape, C shape, accumulator)
    ((4, 1), (16, 64, 16), (64, 64), "f16"), ((4, 1), (16, 64, 16), (64, 64), "f32"),
    ((8, 1), (16, 256, 16), (128, 256), "f16"), ((4, 2), (16, 64, 16), (128, 128), "f32"),
    ((4, 1), (16, 128, 16), (128, 128), "f16"), ((4, 2), (16, 8, 16), (64, 16), "f16"),
]


@pytest.mark.parametrize("warps,instr,c_shape,acc", V3_CASES)
def test_wgmma_registers_follow_the_ptx_fragments(warps, instr, c_shape, acc):
    """The accumulator registers of each wgmma (and A when it is in registers) as the lowering
    passes them: warp ``w`` is rank ``w % 4`` of warpgroup ``(w % wm) // 4`` along M and column
    block ``w // wm`` along N (where its shared-memory descriptors point)."""
    enc = NvidiaMmaEncodingAttr(3, warps, instr)
    m, n = c_shape
    inst_n = enc.instr_n
    k = 64
    wm, wn = warps
    lc = Layout(enc.linear_layout(c_shape))
    la = Layout(enc.dot_operand_linear_layout(0, 2, (m, k)))
    c_frag = acc_fragment(inst_n, acc)
    assert len(c_frag) == (inst_n // 4 if acc == "f16" else inst_n // 2)
    for warp in range(wm * wn):
        rank, group, col_block = warp % 4, (warp % wm) // 4, warp // wm
        written = set()
        for mr in range(0, m, 16 * wm):
            for nr in range(0, n, inst_n * wn):
                # the descriptors read A's rows mr + 64*group.. and B's columns nr + inst_n*col_block..
                origin = (mr + 64 * group + 16 * rank, nr + inst_n * col_block)
                _check_operand(lc, c_frag, ptx_acc, warp, (), (mr, nr), expect_origin=origin)
                for k0 in range(0, k, 16):
                    _check_operand(la, a_fragment(2), partial(ptx_a, 2), warp, (), (mr, k0), expect_origin=(origin[0], k0))
                for lane in range(32):
                    for reg in c_frag:
                        for dr, dc in reg:
                            written.add(lc.at(warp, lane, (mr + dr, nr + dc)))
        assert written == {tuple(int(x) for x in c) for c in lc.table[warp].reshape(-1, 2)}


@pytest.mark.parametrize("kw", [1, 2, 4])
def test_a_fragment_in_registers_matches_the_wgmma_tables_per_warp(kw):
    """wgmma's A in registers (k8 tf32, k16 fp16, k32 8-bit) is mma.sync's A fragment per warp:
    the helper's element order is the ISA's register order (low element first)."""
    frag = a_fragment(kw)
    assert [len(r) for r in frag] == [kw] * 4
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for r, reg in enumerate(frag):
            for e, (dr, dc) in enumerate(reg):
                assert (g + dr, kw * t + dc) == ptx_a(kw, lane, kw * r + e)


# --- shared-memory matrix descriptors -------------------------------------------------------------
def _hardware_address(desc: int, start: int, row: int, kbyte: int) -> int:
    """Where wgmma reads byte ``kbyte`` (along K) of row ``row`` (along M of A / N of B) of a
    K-major operand, per the ISA's matrix-descriptor format: 8-row core groups ``stride byte
    offset`` apart, the rows of a group one swizzle width apart, and the swizzle (16-byte chunk
    bits XOR the row-in-atom bits) applied to the final address."""
    sbo = ((desc >> 32) & 0x3FFF) << 4
    width = {1: 128, 2: 64, 3: 32}[desc >> 62]
    addr = start + (row // 8) * sbo + (row % 8) * width + kbyte
    return addr ^ (((addr >> 7) & (width // 16 - 1)) << 4)


@pytest.mark.parametrize("bits,shape,operand", [
    (8, (64, 64), "a"), (8, (128, 128), "a"), (8, (64, 32), "b"), (8, (256, 64), "b"),
    (32, (64, 32), "a"), (32, (64, 8), "a"), (32, (16, 128), "b"), (32, (64, 64), "b"),
    (16, (64, 64), "a"), (16, (32, 128), "b"),
])
def test_k_major_descriptors_address_the_nvmma_shared_buffer(bits, shape, operand):
    """8-bit and tf32 operands are read K-major only: one instruction takes 32 bytes of K (32
    elements, 8 tf32, 16 fp16) from each row, and successive K steps move the descriptor's start
    address by 32 bytes (to the next column block of the buffer once a swizzle row is used up).
    Every byte wgmma fetches that way, for 64 rows of A or of B, is the element the ``nvmma_shared``
    layout put there."""
    from tritium_nvidia.passes.accelerate_matmul import shared_encoding_for
    from tritium_nvidia.lowering.tensor_cores import _descriptor_base
    from xdsl.dialects.builtin import Float16Type, Float32Type, IntegerType, TensorType

    elem = {8: IntegerType(8), 16: Float16Type(), 32: Float32Type()}[bits]
    k_dim = 1 if operand == "a" else 0          # A is M x K, B is K x N
    enc = shared_encoding_for(TensorType(elem, shape), k_dim)
    assert enc.transposed == (operand == "b") and enc.element_bits == bits
    desc = _descriptor_base(enc, shape)
    ebytes = bits // 8
    instr_k = 32 // ebytes
    k, rows = shape[k_dim], shape[1 - k_dim]

    def coords(row, kk):
        return (row, kk) if operand == "a" else (kk, row)
    for r0 in range(0, rows, 64):
        for k0 in range(0, k, instr_k):
            start = enc.plain_byte_offset(coords(r0, k0), shape)    # what the lowering puts in the descriptor
            for row in range(min(64, rows - r0)):
                for kk in range(instr_k):
                    assert _hardware_address(desc, start, row, kk * ebytes) == \
                        enc.byte_offset(coords(r0 + row, k0 + kk), shape), (r0, k0, row, kk)
