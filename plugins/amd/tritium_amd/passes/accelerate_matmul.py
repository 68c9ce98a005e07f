"""``tritonamdgpu-accelerate-matmul``: put each ``tt.dot`` that AMD's matrix instructions can
compute onto them.

The dot's accumulator gets an ``amd_mfma`` (CDNA, wave64) or ``amd_wmma`` (RDNA3, wave32) layout,
its operands ``dot_op`` layouts with that parent and the instruction's ``kWidth``; conversions are
inserted around it (``remove-layout-conversions`` then carries the accumulator of a loop in the new
layout).  A dot that cannot use them keeps its blocked layout and runs on FMAs; the reason is
returned (the ``ttgir`` stage records it as ``metadata["dot_lowering"]``)."""
from __future__ import annotations

from xdsl.dialects.builtin import (BFloat16Type, Float8E4M3FNUZType, Float8E5M2FNUZType, Float16Type, Float32Type,
                                   Float64Type, IntegerType, ModuleOp, TensorType, f16)
from xdsl.dialects import scf
from xdsl.ir import Operation

from tritium.passes import PassManager
from tritium.ttgir.encodings import BlockedEncodingAttr, DotOperandEncodingAttr
from tritium.ttgir.ops import ConvertLayoutOp
from tritium.ttgir.passes.remove_layout_conversions import RemoveLayoutConversions
from tritium.ttir.ops import DotOp, FpToFpOp
from tritium.ttir.passes.cse import CSE
from tritium.ttir.passes.dce import DCE

from ..options import Arch
from .encodings import AMDMatrixEncoding, AMDMfmaEncodingAttr, AMDWmmaEncodingAttr
from .instructions import _MFMA, _WMMA, Instr, choose, operand_key, warps_per_cta


_VERSION = {"cdna2": 2, "cdna3": 3}


def type_name(t) -> str:
    """``f16``, ``bf16``, ``f32``, ``f64``, ``i8``, ``i32``... of a tensor's element type."""
    e = t.element_type if isinstance(t, TensorType) else t
    if isinstance(e, Float16Type):
        return "f16"
    if isinstance(e, BFloat16Type):
        return "bf16"
    if isinstance(e, Float32Type):
        return "f32"
    if isinstance(e, Float64Type):
        return "f64"
    if isinstance(e, IntegerType):
        return f"i{e.width.data}"
    if isinstance(e, Float8E4M3FNUZType):
        return "fp8e4b8"
    if isinstance(e, Float8E5M2FNUZType):
        return "fp8e5b16"
    return type(e).__name__


def instr_of(op) -> Instr | None:
    """The instruction a ``tt.dot`` whose accumulator has an AMD matrix layout lowers to."""
    enc = op.c.type.encoding
    if not isinstance(enc, AMDMatrixEncoding):
        return None
    a_t = type_name(op.a.type)
    if isinstance(enc, AMDWmmaEncodingAttr):
        return _WMMA[a_t]
    family = {v: k for k, v in _VERSION.items()}[enc.versionMajor.data]
    a_t = operand_key(family, a_t, type_name(op.b.type)) or a_t
    kw = op.a.type.encoding.k_width
    for ins in _MFMA[(family, a_t)]:
        if ins.m == enc.instr_shape[0] and ins.k_width == kw:
            return ins
    raise ValueError(f"no MFMA instruction for {a_t} operands, tile {enc.instr_shape}, kWidth {kw}")


def _with(t: TensorType, enc) -> TensorType:
    return TensorType(t.element_type, t.get_shape(), enc)


def _with_element(t: TensorType, element) -> TensorType:
    return TensorType(element, t.get_shape(), t.encoding)


def _is_fp8(t) -> bool:
    return type(t.element_type).__name__.startswith("Float8")


def _insert(block, before, new_op):
    block.insert_op_before(new_op, before)
    return new_op


def _insert_hoisted(block, op, cvt, v) -> None:
    """Insert ``cvt`` (a conversion of ``v`` for ``op``) before ``op``, or, when ``v`` is an operand
    defined outside the loops around ``op`` (attention's Q), right after its definition: it is
    converted once, not in every iteration (from before any conversions the loop applies to it)."""
    src = v
    while isinstance(src.owner, ConvertLayoutOp):
        src = src.owner.operands[0]
    owner = src.owner
    if v is not op.c and isinstance(owner, Operation) and owner.parent_block() is not block:
        anc = op.parent_op()
        while isinstance(anc, (scf.ForOp, scf.WhileOp, scf.IfOp)):
            if anc.parent_block() is owner.parent_block():
                cvt.operands = [src]
                owner.parent_block().insert_op_after(cvt, owner)
                return
            anc = anc.parent_op()
    block.insert_op_before(cvt, op)


def _in_chain(dot, depth: int = 12) -> bool:
    """Whether ``dot``'s result reaches another dot's A operand, or its A operand comes from a
    dot's result, through at most ``depth`` ops of the same block."""
    work, seen = [(dot.results[0], 0)], set()
    while work:
        v, d = work.pop()
        for use in v.uses:
            user = use.operation
            if isinstance(user, DotOp) and use.index == 0:
                return True
            if d < depth and user.results and user not in seen and user.parent_block() is dot.parent_block():
                seen.add(user)
                work.extend((r, d + 1) for r in user.results)
    work = [(dot.operands[0], 0)]
    while work:
        v, d = work.pop()
        owner = v.owner
        if getattr(owner, "name", None) == "tt.dot":
            return True
        if d < depth and hasattr(owner, "operands") and owner not in seen:
            seen.add(owner)
            work.extend((o, d + 1) for o in owner.operands)
    return False


def _accelerate(op, arch: Arch, num_warps: int, nonkdim: int) -> str:
    a_t, b_t, c_t = op.a.type, op.b.type, op.c.type
    if len(c_t.get_shape()) != 2:
        return "fma: batched (rank-3) dot"
    if not isinstance(c_t.encoding, BlockedEncodingAttr):
        return f"fma: accumulator layout {c_t.encoding.name} is not blocked"
    (m, n), k = c_t.get_shape(), a_t.get_shape()[1]
    a, b = op.a, op.b
    # gfx942 multiplies the FNUZ formats natively; every other fp8 dot (OCP e4m3/e5m2 anywhere,
    # FNUZ on gfx90a/gfx11) upcasts
    upcast = _is_fp8(a_t) and _is_fp8(b_t) and operand_key(arch.family, type_name(a_t), type_name(b_t)) is None
    if upcast:
        # every fp8 value (e4m3, e5m2, e4m3 bias 11, FNUZ) is exact in fp16, and so are the MFMA/WMMA
        # products in fp32: the fp16 instruction computes the fp8 dot exactly as an fp8 one would
        a_t, b_t = _with_element(a_t, f16), _with_element(b_t, f16)
    ins, reason = choose(arch, type_name(a_t), type_name(b_t), type_name(c_t), m, n, k, nonkdim)
    if ins is None and _is_fp8(a_t) and _is_fp8(b_t):
        # no fp8 tile fits (K = 16, an fp16 accumulator): the fp16 instruction may
        upcast, a_t, b_t = True, _with_element(a_t, f16), _with_element(b_t, f16)
        ins, reason = choose(arch, "f16", "f16", type_name(c_t), m, n, k, nonkdim)
    if ins is None:
        return f"fma: {reason}"
    block = op.parent_block()
    if upcast:
        a, b = (_insert(block, op, FpToFpOp(v, t)).result for v, t in ((op.a, a_t), (op.b, b_t)))
    wm, wn = warps_per_cta(num_warps, m, n, ins)
    if _in_chain(op) and m >= num_warps * ins.m:
        # chained dots (attention's S = Q K^T feeding P V) keep every warp on its own rows, as
        # Triton does: the row statistics and P then stay in the warps that computed them
        wm, wn = num_warps, 1
    # MFMA accumulators are transposed (Triton's choice too): each lane holds 4 consecutive
    # columns of a row, so row reductions stay mostly in registers, a result feeding the next dot
    # as its A operand (attention's P) is already in the dot_op layout, and stores are vectors.
    # WMMA ones too (Triton's as well): a lane holds every other column of a row, so a row
    # reduction and P's move into the A operand are exchanges between the wavefront's halves
    enc = (AMDMfmaEncodingAttr(_VERSION[arch.family], [wm, wn], [ins.m, ins.n], True) if ins.kind == "mfma"
           else AMDWmmaEncodingAttr(1, [wm, wn], True))
    operands = []
    for i, (v, t) in enumerate(((a, _with(a_t, DotOperandEncodingAttr(0, enc, ins.k_width))),
                                (b, _with(b_t, DotOperandEncodingAttr(1, enc, ins.k_width))),
                                (op.c, _with(c_t, enc)))):
        cvt = ConvertLayoutOp(v, t)
        _insert_hoisted(block, op, cvt, v)
        operands.append(cvt.result)
    dot = DotOp(*operands, op.input_precision, op.maxNumImpreciseAcc.value.data)
    back = ConvertLayoutOp(dot.d, c_t)
    block.insert_op_before(dot, op)
    block.insert_op_before(back, op)
    op.d.replace_all_uses_with(back.result)
    block.erase_op(op)
    via = ", fp8 operands upcast to fp16" if upcast else ""
    return f"{ins.kind}: {ins.intrinsic} ({ins.m}x{ins.n}x{ins.k}, warpsPerCTA [{wm}, {wn}]{via})"


class AccelerateMatmul:
    """The pass form of :func:`accelerate_matmul` for a pass list; ``dot_lowering`` then holds its
    lines (the stage records them in the kernel's metadata)."""

    name = "tritonamdgpu-accelerate-matmul"

    def __init__(self, arch: Arch, options):
        self.arch, self.options = arch, options
        self.dot_lowering: list[str] = []

    def run(self, module: ModuleOp) -> None:
        self.dot_lowering = accelerate_matmul(module, self.arch, self.options)


def accelerate_matmul(module: ModuleOp, arch: Arch, options) -> list[str]:
    """Rewrite every eligible ``tt.dot`` of ``module``; returns one line per dot saying how it
    will be computed (``mfma: ...``, ``wmma: ...`` or ``fma: <reason>``)."""
    num_warps = module.attributes["ttg.num-warps"].value.data
    dots = [op for op in module.walk() if isinstance(op, DotOp)]
    out = [_accelerate(op, arch, num_warps, getattr(options, "matrix_instr_nonkdim", 0)) for op in dots]
    if any(not line.startswith("fma") for line in out):
        PassManager("amd-accelerate-matmul", [RemoveLayoutConversions(), CSE(), DCE()]).run(module)
    return out
