"""``tritonamdgpu-optimize-epilogue``: store a dot's result from its ``amd_mfma``/``amd_wmma`` layout.

A ``tt.store`` of ``convert_layout(x)`` where ``x`` has an AMD matrix layout takes ``x`` itself, its
pointers and mask converted to ``x``'s layout instead (``remove-layout-conversions`` then computes
them in that layout from their ``make_range``s).  The accumulator then leaves the registers
straight to global memory: no LDS round trip, no barrier pair, and none of the waits for the LDS
reads that fed each (predicated) store.  Each lane stores the 4 consecutive rows of a column it
holds; the 32 or 16 lanes of a row still write consecutive addresses."""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp, TensorType

from tritium.passes import PassManager
from tritium.ttgir.ops import ConvertLayoutOp
from tritium.ttgir.passes.remove_layout_conversions import RemoveLayoutConversions
from tritium.ttir.memory_ops import StoreOp
from tritium.ttir.passes.cse import CSE
from tritium.ttir.passes.dce import DCE

from .encodings import AMDMatrixEncoding


def _with(t: TensorType, enc) -> TensorType:
    return TensorType(t.element_type, t.get_shape(), enc)


class OptimizeEpilogue:
    name = "tritonamdgpu-optimize-epilogue"

    def run(self, module: ModuleOp) -> None:
        optimize_epilogue(module)


def optimize_epilogue(module: ModuleOp) -> int:
    """Rewrite the stores described above; returns how many."""
    n = 0
    for op in list(module.walk()):
        if not isinstance(op, StoreOp) or not isinstance(op.value.owner, ConvertLayoutOp):
            continue
        src = op.value.owner.operands[0]
        enc = getattr(src.type, "encoding", None)
        if not isinstance(enc, AMDMatrixEncoding) or not isinstance(op.ptr.type, TensorType):
            continue
        block = op.parent_block()
        new = []
        for v in (op.ptr, op.mask):
            if v is None:
                continue
            cvt = ConvertLayoutOp(v, _with(v.type, enc))
            block.insert_op_before(cvt, op)
            new.append(cvt.result)
        op.operands = [new[0], src, *new[1:]]
        n += 1
    if n:
        PassManager("amd-optimize-epilogue", [RemoveLayoutConversions(), CSE(), DCE()]).run(module)
    return n
