"""``nvidia-accelerate-matmul``: put ``tt.dot`` on the tensor cores.

For each dot it picks, by target, dtypes and tile shape:

* **version 3** (sm_90, ``wgmma``): M a multiple of 64, ``num_warps`` a multiple of 4, fp16/bf16
  operands in either major order, tf32/fp8/int8 with both operands K-contiguous (not for the dot
  of a decomposed ``tt.dot_scaled``, which takes version 2 as Triton's does).  The operands go to
  shared memory in the ``nvmma_shared`` layout (``ttg.local_alloc``, then ``ttng.fence_async_shared``)
  and the dot becomes ``ttng.warp_group_dot`` + ``ttng.warp_group_dot_wait``;
* **version 2** (sm_80+, ``mma.sync``): operands through shared memory into ``dot_op`` registers of
  the ``nvidia_mma`` parent (``ttg.local_alloc`` + ``ttg.local_load``), then ``tt.dot``;
* otherwise it leaves the FMA dot and records why in ``tritium.fma_reason`` (visible in IR dumps).

The accumulator is converted into the mma layout and back; ``remove-layout-conversions`` (run
after this pass) carries a loop's accumulator in the mma layout.  The operand buffers are what the
software pipeliner turns into multi-buffered asynchronous copies.
"""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import Float16Type, Float32Type, IntegerType, ModuleOp, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue

from tritium.ttgir.encodings import BlockedEncodingAttr, DotOperandEncodingAttr
from tritium.ttgir.layouts import bit_width
from tritium.ttgir.ops import ConvertLayoutOp, LocalAllocOp, LocalLoadOp
from tritium.ttgir.passes.decompose_scaled_dot import FROM_DOT_SCALED
from tritium.ttgir.types import MemDescType
from tritium.ttir.memory_ops import LoadOp

from .dialect import FenceAsyncSharedOp, WarpGroupDotOp, WarpGroupDotWaitOp
from .encodings import NVMMASharedEncodingAttr, NvidiaMmaEncodingAttr

REASON = "tritium.fma_reason"


def _kind(t) -> str:
    """``f16``, ``bf16``, ``f32``, ``f64``, ``i8``, ``e4m3``, ``e5m2`` or another name."""
    e = t.element_type
    name = type(e).__name__
    if isinstance(e, Float16Type):
        return "f16"
    if name == "BFloat16Type":
        return "bf16"
    if isinstance(e, Float32Type):
        return "f32"
    if isinstance(e, IntegerType):
        return f"i{e.width.data}"
    # the tensor cores' fp8 formats only: the FNUZ variants and fp8e4b15 have other biases
    if name == "Float8E4M3FNType":
        return "e4m3"
    if name == "Float8E5M2Type":
        return "e5m2"
    return name


#: operand kind -> (instruction K, elements per 32-bit register)
INSTR_K = {"f16": (16, 2), "bf16": (16, 2), "f32": (8, 1), "i8": (32, 4), "e4m3": (32, 4), "e5m2": (32, 4)}


def _defined_in(v: SSAValue, loop: Operation) -> bool:
    owner = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op()
    return owner is not None and loop.is_ancestor(owner)


def _source(v: SSAValue) -> SSAValue:
    while isinstance(v.owner, ConvertLayoutOp):
        v = v.owner.src
    return v


def _fast_dim(v: SSAValue) -> int:
    enc = v.type.encoding
    return enc.order[0] if isinstance(enc, BlockedEncodingAttr) else len(v.type.get_shape()) - 1


def shared_encoding_for(t, fast_dim: int) -> NVMMASharedEncodingAttr | None:
    """The widest swizzle whose rows fit the contiguous dimension (None below 32 bytes)."""
    shape = t.get_shape()
    bits = bit_width(t.element_type)
    row_bytes = shape[fast_dim] * bits // 8
    swizzle = min(128, row_bytes)
    if swizzle < 32:
        return None
    return NVMMASharedEncodingAttr(swizzle, fast_dim == len(shape) - 2, bits)


def _warps_v3(m: int, num_warps: int) -> tuple[int, int]:
    wm, wn = 4, 1
    while wm * wn < num_warps:
        if m > 16 * wm:
            wm *= 2
        else:
            wn *= 2
    return wm, wn


def _warps_v2(m: int, n: int, num_warps: int) -> tuple[int, int]:
    wm, wn = 1, 1
    while wm * wn < num_warps:
        if m // (16 * wm) >= n // (8 * wn) and m > 16 * wm:
            wm *= 2
        elif n > 8 * wn:
            wn *= 2
        else:
            wm *= 2
    return wm, wn


class AccelerateMatmul:
    name = "nvidia-accelerate-matmul"

    def __init__(self, capability: int, num_warps: int):
        self.capability, self.num_warps = capability, num_warps

    # -- the decision ----------------------------------------------------------------------------
    def plan(self, op: Operation) -> tuple[int, str]:
        """(mma version, "") or (0, reason for staying on FMA)."""
        a, b, c = op.operands[0].type, op.operands[1].type, op.operands[2].type
        if len(c.get_shape()) != 2:
            return 0, "batched (3-D) dots run on FMA"
        ka, kb, kc = _kind(a), _kind(b), _kind(c)
        precision = op.input_precision
        if ka != kb:
            return 0, f"mixed operand types {ka} x {kb}"
        if ka == "f32" and precision == "ieee":
            return 0, "input_precision='ieee' keeps fp32 exact on FMA"
        if ka == "f32" and precision not in ("tf32", "tf32x3"):
            return 0, f"input_precision={precision!r} is not supported on the tensor cores"
        if ka not in INSTR_K:
            return 0, f"no tensor-core instruction for {ka} operands"
        if ka in ("e4m3", "e5m2") and self.capability < 89:
            return 0, "fp8 tensor-core instructions need sm_89+"
        if ka == "i8" and kc != "i32" or ka != "i8" and kc != "f32":
            return 0, f"accumulator {kc} with {ka} operands (the tensor cores accumulate in fp32 / int32)"
        m, n = c.get_shape()
        k = a.get_shape()[-1]
        instr_k = INSTR_K[ka][0]
        if m < 16 or n < 8 or k < instr_k:
            return 0, f"tile {m}x{n}x{k} is smaller than one mma instruction (16x8x{instr_k})"
        if self._v3_ok(op, ka, m, n):
            return 3, ""
        return 2, ""

    def _v3_ok(self, op: Operation, ka: str, m: int, n: int) -> bool:
        if self.capability != 90 or m % 64 or self.num_warps % 4 or n % 8 or op.input_precision == "tf32x3":
            return False
        if FROM_DOT_SCALED in op.attributes:
            # a decomposed dot_scaled: both operands are upcast in registers, which mma.sync takes
            # (through dot_op registers) as Triton's scaled dot does on sm_90; wgmma would need B
            # written back to shared memory first
            return False
        a, b = _source(op.operands[0]), _source(op.operands[1])
        a_fast, b_fast = _fast_dim(a), _fast_dim(b)
        if ka not in ("f16", "bf16") and (a_fast != 1 or b_fast != 0):
            return False  # only 16-bit types may be read transposed by wgmma
        return all(shared_encoding_for(v.type, f) is not None for v, f in ((a, a_fast), (b, b_fast)))

    # -- the rewrite ------------------------------------------------------------------------------
    def run(self, module: ModuleOp) -> None:
        for op in [o for o in module.walk() if o.name == "tt.dot"]:
            version, reason = self.plan(op)
            if not version:
                op.attributes[REASON] = StringAttr(reason)
            elif version == 3:
                self._to_v3(op)
            else:
                self._to_v2(op)

    def _mma_type(self, op, enc) -> TensorType:
        c = op.operands[2].type
        return TensorType(c.element_type, c.get_shape(), enc)

    def _alloc(self, op: Operation, v: SSAValue, fence: bool = False) -> SSAValue:
        src = _source(v)
        enc = shared_encoding_for(src.type, _fast_dim(src))
        if enc is None:  # rows narrower than 32 bytes: plain row-major, unswizzled
            from tritium.ttgir.encodings import SwizzledSharedEncodingAttr
            enc = SwizzledSharedEncodingAttr(1, 1, 1, (1, 0))
        alloc = LocalAllocOp(MemDescType(src.type.get_shape(), src.type.element_type, enc), src)
        # a loop-invariant operand (attention's Q) is written to shared memory once, before the loop
        anchor = op
        while isinstance(anchor.parent_op(), scf.ForOp) and not _defined_in(src, anchor.parent_op()):
            anchor = anchor.parent_op()
        anchor.parent_block().insert_op_before(alloc, anchor)
        if fence and anchor is not op:  # hoisted, read by wgmma: its own proxy fence, once, before the loop
            anchor.parent_block().insert_op_before(FenceAsyncSharedOp(), anchor)
        return alloc.result

    def _accumulator(self, op: Operation, mma_t) -> SSAValue:
        cvt = ConvertLayoutOp(op.operands[2], mma_t)
        op.parent_block().insert_op_before(cvt, op)
        return cvt.result

    def _replace(self, op: Operation, new_result: SSAValue, after: Operation) -> None:
        back = ConvertLayoutOp(new_result, op.results[0].type)
        after.parent_block().insert_op_after(back, after)
        op.results[0].replace_all_uses_with(back.result)
        op.detach()
        op.erase()

    def _to_v2(self, op: Operation) -> None:
        c = op.operands[2].type
        m, n = c.get_shape()
        kind = _kind(op.operands[0].type)
        wm, wn = _warps_v2(m, n, self.num_warps)
        enc = NvidiaMmaEncodingAttr(2, (wm, wn), (16, 8))
        k_width = INSTR_K[kind][1]
        for i in (0, 1):
            buf = self._alloc(op, op.operands[i])
            t = op.operands[i].type
            load = LocalLoadOp(buf, TensorType(t.element_type, t.get_shape(), DotOperandEncodingAttr(i, enc, k_width)))
            op.parent_block().insert_op_before(load, op)
            op.operands[i] = load.result
        mma_t = self._mma_type(op, enc)
        op.operands[2] = self._accumulator(op, mma_t)
        from tritium.ttgir.passes._util import set_type
        set_type(op.results[0], mma_t)
        back = ConvertLayoutOp(op.results[0], c)
        op.parent_block().insert_op_after(back, op)
        for use in list(op.results[0].uses):
            if use.operation is not back:
                use.operation.operands[use.index] = back.result

    def _to_v3(self, op: Operation) -> None:
        c = op.operands[2].type
        m, n = c.get_shape()
        kind = _kind(op.operands[0].type)
        wm, wn = _warps_v3(m, self.num_warps)
        instr_n = min(256, n // wn)
        enc = NvidiaMmaEncodingAttr(3, (wm, wn), (16, instr_n, INSTR_K[kind][0]))
        a_src = _source(op.operands[0])
        if kind in ("f16", "bf16") and not isinstance(a_src.owner, LoadOp):
            # A computed in registers (attention's P): wgmma reads it from there, no shared memory trip
            t = op.operands[0].type
            cvt = ConvertLayoutOp(a_src, TensorType(t.element_type, t.get_shape(), DotOperandEncodingAttr(0, enc, 2)))
            op.parent_block().insert_op_before(cvt, op)
            a = cvt.result
        else:
            a = self._alloc(op, op.operands[0], fence=True)
        b = self._alloc(op, op.operands[1], fence=True)
        fence = FenceAsyncSharedOp()
        op.parent_block().insert_op_before(fence, op)
        acc = self._accumulator(op, self._mma_type(op, enc))
        dot = WarpGroupDotOp(a, b, acc, op.input_precision)
        wait = WarpGroupDotWaitOp([dot.d], 0)
        op.parent_block().insert_op_before(dot, op)
        op.parent_block().insert_op_before(wait, op)
        self._replace(op, wait.outputs[0], wait)


__all__ = ["AccelerateMatmul", "shared_encoding_for", "REASON"]
