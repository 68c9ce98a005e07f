"""``nvidia-accelerate-matmul``: put ``tt.dot`` on the tensor cores.

For each dot it picks, by target, dtypes, rank and tile shape, what Triton picks:

* **version 3** (sm_90, ``wgmma``): a 2-D dot with M a multiple of 64, N of 8, ``num_warps`` a
  multiple of 4 and K at least one instruction (32 bytes of operand), fp16/bf16/tf32/int8/fp8
  operands (not for the dot of a decomposed ``tt.dot_scaled``, which takes version 2 as Triton's
  does).  fp16 (and fp8) may accumulate in fp16.  The operands go to shared memory in the
  ``nvmma_shared`` layout (``ttg.local_alloc``, then ``ttng.fence_async_shared``): fp16/bf16 in
  either major order, the other types K-contiguous (wgmma reads them no other way: the
  ``local_alloc`` transposes them on the way in).  ``tf32x3`` becomes three tf32 dots of the high
  and low tf32 parts.  The dot becomes ``ttng.warp_group_dot`` + ``ttng.warp_group_dot_wait``;
* **version 2** (sm_80+, ``mma.sync``): every other tensor-core dot, 3-D (batched) dots included
  (warps split the batch), and tiles smaller than one instruction (M below 16, N below 8: the
  layouts wrap, rows and columns past the tile being copies).  Operands through shared memory into
  ``dot_op`` registers of the ``nvidia_mma`` parent (``ttg.local_alloc`` + ``ttg.local_load``),
  then ``tt.dot``; fp8 operands are upcast to fp16 there except on sm_89 and sm_120 (Triton's
  rule: sm_90 runs fp8 ``mma.sync`` as exactly that);
* otherwise it leaves the FMA dot and records why in ``tritium.fma_reason`` (visible in IR dumps).

The accumulator is converted into the mma layout and back; ``remove-layout-conversions`` (run
after this pass) carries a loop's accumulator in the mma layout.  The operand buffers are what the
software pipeliner turns into multi-buffered asynchronous copies.
"""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import Float16Type, ModuleOp, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue

from tritium.ttgir.encodings import BlockedEncodingAttr, DotOperandEncodingAttr, SwizzledSharedEncodingAttr
from tritium.ttgir.layouts import bit_width
from tritium.ttgir.ops import ConvertLayoutOp, LocalAllocOp, LocalLoadOp
from tritium.ttgir.passes._util import defined_in, set_type
from tritium.ttgir.passes.decompose_scaled_dot import FROM_DOT_SCALED
from tritium.ttgir.types import MemDescType
from tritium.ttir.arith import SubFOp
from tritium.ttir.descriptor_ops import DescriptorLoadOp
from tritium.ttir.memory_ops import LoadOp
from tritium.ttir.ops import DotOp, ElementwiseInlineAsmOp, FpToFpOp

from .dialect import FenceAsyncSharedOp, WarpGroupDotOp, WarpGroupDotWaitOp, element_kind
from .encodings import NvidiaMmaEncodingAttr, NVMMASharedEncodingAttr


REASON = "tritium.fma_reason"


#: operand kind -> (instruction K, elements per 32-bit register)
INSTR_K = {"f16": (16, 2), "bf16": (16, 2), "f32": (8, 1), "i8": (32, 4), "e4m3": (32, 4), "e5m2": (32, 4)}
#: operand kind -> accumulator kinds the tensor cores offer (fp16 for fp8 only through wgmma)
ACCUMULATORS = {"f16": ("f32", "f16"), "bf16": ("f32",), "f32": ("f32",), "i8": ("i32",),
                "e4m3": ("f32", "f16"), "e5m2": ("f32", "f16")}


def _source(v: SSAValue) -> SSAValue:
    while isinstance(v.owner, ConvertLayoutOp):
        v = v.owner.src
    return v


def _invariant_point(v: SSAValue, op: Operation) -> Operation:
    """Where a conversion of ``v`` for ``op`` goes: before ``op``, or before the outermost loop
    around ``op`` that does not make ``v`` (a loop-invariant operand converted once, not every
    iteration)."""
    point = op
    parent = op.parent_op()
    while isinstance(parent, scf.ForOp) and not defined_in(v, parent):
        point, parent = parent, parent.parent_op()
    return point


def _before(earlier: Operation, op: Operation) -> bool:
    """Whether ``earlier`` comes before ``op`` in ``op``'s block (so it dominates ``op``)."""
    block = op.parent_block()
    return earlier.parent_block() is block and block.get_operation_index(earlier) < block.get_operation_index(op)


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


def _mma_v2_fp8(capability: int) -> bool:
    """Whether mma.sync takes fp8 operands natively: sm_89 and sm_120 (Triton's rule).  Before sm_89
    there is no such instruction; on sm_90 the PTX exists but runs as fp16 upcasts and fp16 mma
    in SASS, so the operands are upcast to fp16 in registers instead."""
    return capability in (89, 120)


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
        ka, kb, kc = element_kind(a), element_kind(b), element_kind(c)
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
            # no fp8 instruction before sm_89: Triton's promotion, the operands upcast to fp16 (every
            # e4m3/e5m2 value is exact there, and so are the products in fp32) for fp16 mma.sync
            if kc != "f32":
                return 0, f"accumulator {kc} with {ka} operands before sm_89 (fp16 mma.sync of the upcast operands accumulates in fp32)"
            ka = "f16"
        if kc not in ACCUMULATORS[ka]:
            return 0, f"accumulator {kc} with {ka} operands (the tensor cores accumulate {ka} in " \
                      f"{' or '.join(ACCUMULATORS[ka])})"
        m, n = c.get_shape()[-2:]
        k = a.get_shape()[-1]
        instr_k = INSTR_K[ka][0]
        if k < instr_k:
            return 0, f"K = {k} is smaller than one mma instruction's ({instr_k})"
        # M below 16 or N below 8: mma.sync all the same, as Triton; the layouts wrap (rows and
        # columns past the shape are copies) and the lowering drops what the copies compute
        if self._v3_ok(op, ka, kc):
            return 3, ""
        # fp8 on mma.sync is upcast to fp16 in the operand registers where the GPU has no native
        # fp8 mma.sync (``_to_v2``): the same fp32 accumulator as the native instruction's
        if kc == "f16" and ka != "f16":
            return 0, f"an fp16 accumulator with {ka} operands needs wgmma (mma.sync accumulates them in fp32)"
        return 2, ""

    def _v3_ok(self, op: Operation, ka: str, kc: str) -> bool:
        """Triton's conditions for wgmma (``supportMMA`` version 3)."""
        shape = op.operands[2].type.get_shape()
        if self.capability != 90 or len(shape) != 2 or self.num_warps % 4:
            return False
        if FROM_DOT_SCALED in op.attributes:
            # a decomposed dot_scaled: both operands are upcast in registers, which mma.sync takes
            # (through dot_op registers) as Triton's scaled dot does on sm_90; wgmma would need B
            # written back to shared memory first
            return False
        m, n = shape
        if m % 64 or n % 8:
            return False
        if ka in ("e4m3", "e5m2") and kc == "f32" and 0 < op.maxNumImpreciseAcc.value.data < 32:
            return False  # asked to add the fp8 products into fp32 more often than wgmma can
        return all(shared_encoding_for(v.type, f) is not None for v, f in self._v3_operands(op, ka))

    @staticmethod
    def _v3_operands(op: Operation, ka: str) -> list[tuple[SSAValue, int]]:
        """The operands' register sources and the dimension each is made contiguous along in shared
        memory: their own for 16-bit types, K for the others."""
        a, b = _source(op.operands[0]), _source(op.operands[1])
        if ka in ("f16", "bf16"):
            return [(a, _fast_dim(a)), (b, _fast_dim(b))]
        return [(a, 1), (b, 0)]

    # -- the rewrite ------------------------------------------------------------------------------
    def run(self, module: ModuleOp) -> None:
        self._hoisted: dict[SSAValue, list[LocalAllocOp]] = {}
        for op in [o for o in module.walk() if isinstance(o, DotOp)]:
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

    def _alloc(self, op: Operation, v: SSAValue, fence: bool = False, fast_dim: int | None = None) -> SSAValue:
        """``v`` (or the register tensor it was converted from) written to a shared buffer before
        ``op``, contiguous along ``fast_dim`` (default: as ``v`` is in registers)."""
        src = _source(v)
        shape = src.type.get_shape()
        enc = shared_encoding_for(src.type, _fast_dim(src) if fast_dim is None else fast_dim)
        if enc is None:  # rows narrower than 32 bytes: plain row-major, unswizzled
            enc = SwizzledSharedEncodingAttr(1, 1, 1, tuple(range(len(shape) - 1, -1, -1)))
        mem_t = MemDescType(shape, src.type.element_type, enc)
        # a loop-invariant operand (attention's Q) is written to shared memory once, before the loop
        anchor = _invariant_point(src, op)
        if anchor is not op:
            # a second loop reading the same tile (causal attention's diagonal loop) reads the copy
            # written before the first: the registers are free after that write, not held across
            # the first loop to be written again
            for earlier in self._hoisted.get(src, ()):
                if earlier.result.type == mem_t and _before(earlier, anchor):
                    return earlier.result
        alloc = LocalAllocOp(mem_t, src)
        anchor.parent_block().insert_op_before(alloc, anchor)
        if anchor is not op:
            self._hoisted.setdefault(src, []).append(alloc)
            if fence:  # read by wgmma: its own proxy fence, once, before the loop
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
        shape = c.get_shape()
        kind = element_kind(op.operands[0].type)
        # see plan(): fp8 before sm_89 goes through shared memory as fp8 (the pipeliner's copies
        # move it as it is in memory) and is upcast to fp16 in the dot-operand registers
        upcast = kind in ("e4m3", "e5m2") and not _mma_v2_fp8(self.capability)
        if upcast:
            kind = "f16"
        if len(shape) == 3:  # batched: warps along the batch, each computing whole 2-D tiles (as Triton)
            enc = NvidiaMmaEncodingAttr(2, (self.num_warps, 1, 1), (1, 16, 8))
        else:
            enc = NvidiaMmaEncodingAttr(2, _warps_v2(*shape, self.num_warps), (16, 8))
        k_width = INSTR_K[kind][1]
        for i in (0, 1):
            buf = self._alloc(op, op.operands[i])
            t = op.operands[i].type
            load = LocalLoadOp(buf, TensorType(t.element_type, t.get_shape(), DotOperandEncodingAttr(i, enc, k_width)))
            op.parent_block().insert_op_before(load, op)
            op.operands[i] = load.result
            if upcast:
                up = FpToFpOp(load.result, TensorType(Float16Type(), t.get_shape(), load.result.type.encoding))
                op.parent_block().insert_op_before(up, op)
                op.operands[i] = up.result
        mma_t = self._mma_type(op, enc)
        op.operands[2] = self._accumulator(op, mma_t)
        set_type(op.results[0], mma_t)
        back = ConvertLayoutOp(op.results[0], c)
        op.parent_block().insert_op_after(back, op)
        for use in list(op.results[0].uses):
            if use.operation is not back:
                use.operation.operands[use.index] = back.result

    def _to_v3(self, op: Operation) -> None:
        c = op.operands[2].type
        m, n = c.get_shape()
        kind = element_kind(op.operands[0].type)
        wm, wn = _warps_v3(m, self.num_warps)
        instr_n = min(256, n // wn)
        enc = NvidiaMmaEncodingAttr(3, (wm, wn), (16, instr_n, INSTR_K[kind][0]))
        (a_src, a_fast), (b_src, b_fast) = self._v3_operands(op, kind)
        if op.input_precision == "tf32x3":
            # three tf32 products, small terms first: lo(a) hi(b) + hi(a) lo(b) + hi(a) hi(b)
            (a_hi, a_lo), (b_hi, b_lo) = _tf32_parts(op, a_src), _tf32_parts(op, b_src)
            pairs = [(a_lo, b_hi), (a_hi, b_lo), (a_hi, b_hi)]
        else:
            pairs = [(op.operands[0], op.operands[1])]
        acc = self._accumulator(op, self._mma_type(op, enc))
        for x, y in pairs:
            if kind != "f32" and not isinstance(_source(x).owner, (LoadOp, DescriptorLoadOp)):
                # A computed in registers (attention's P, fp16/bf16 or 8-bit): wgmma reads it from
                # there, no shared memory trip (Triton's rule); 32 bits a register: 2 or 4 elements
                t = x.type
                cvt = ConvertLayoutOp(_source(x), TensorType(t.element_type, t.get_shape(),
                                                             DotOperandEncodingAttr(0, enc, INSTR_K[kind][1])))
                point = _invariant_point(_source(x), op)
                point.parent_block().insert_op_before(cvt, point)
                a = cvt.result
            else:
                a = self._alloc(op, x, fence=True, fast_dim=a_fast)
            b = self._alloc(op, y, fence=True, fast_dim=b_fast)
            op.parent_block().insert_op_before(FenceAsyncSharedOp(), op)
            dot = WarpGroupDotOp(a, b, acc, "tf32" if op.input_precision == "tf32x3" else op.input_precision,
                                 max_num_imprecise_acc=op.maxNumImpreciseAcc.value.data)
            wait = WarpGroupDotWaitOp([dot.d], 0)
            op.parent_block().insert_op_before(dot, op)
            op.parent_block().insert_op_before(wait, op)
            acc = wait.outputs[0]
        self._replace(op, acc, acc.owner)


def _tf32_parts(op: Operation, v: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(high, low) parts of fp32 tensor ``v``, computed before ``op``: ``high`` is ``v`` rounded to
    tf32 (to nearest, ties away), ``low = v - high`` (exact), so ``v = high + low`` and a tf32
    product of the parts loses only the low part's own rounding."""
    hi = ElementwiseInlineAsmOp([v], [v.type], "cvt.rna.tf32.f32 $0, $1;", "=r,r", True, 1)
    lo = SubFOp(v, hi.res[0])
    op.parent_block().insert_op_before(hi, op)
    op.parent_block().insert_op_before(lo, op)
    return hi.res[0], lo.result


__all__ = ["AccelerateMatmul", "shared_encoding_for", "REASON"]
