"""``tritonamdgpu-in-thread-transpose``: load an MFMA/WMMA operand that is contiguous along M or N
in global memory with several K rows per thread, so that its K-contiguous LDS layout
(``shared_layout.py``) is written with vectors.

An operand whose load layout walks N (B stored row-major, attention's V) gives each thread
consecutive N elements of one K row; written K-contiguous, each element would be a separate 16-bit
LDS store.  With ``sizePerThread`` along K raised to the LDS layout's vector, a thread holds a
``vec x n`` block and writes ``n`` vectors of ``vec`` K elements (``ds_write_b64`` for fp16).  The
global loads keep their width and count (each thread loads ``vec`` rows instead of one)."""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp, TensorType

from tritium.passes import PassManager
from tritium.ttgir.dialect import NUM_WARPS, THREADS_PER_WARP, module_int
from tritium.ttgir.encodings import BlockedEncodingAttr
from tritium.ttgir.layouts import blocked_encoding
from tritium.ttgir.ops import ConvertLayoutOp
from tritium.ttgir.passes._util import convert_before, set_type, with_encoding
from tritium.ttgir.passes.remove_layout_conversions import RemoveLayoutConversions
from tritium.ttir.passes.cse import CSE
from tritium.ttir.passes.dce import DCE

from .shared_layout import operand_shared_encoding


def _load_of(v):
    while isinstance(v.owner, ConvertLayoutOp):
        v = v.owner.operands[0]
    return v.owner if getattr(v.owner, "name", None) == "tt.load" else None


class InThreadTranspose:
    name = "tritonamdgpu-in-thread-transpose"

    def run(self, module: ModuleOp) -> None:
        in_thread_transpose(module)


def in_thread_transpose(module: ModuleOp) -> int:
    """Re-layout the loads described above; returns how many."""
    num_warps, tpw = module_int(module, NUM_WARPS), module_int(module, THREADS_PER_WARP)
    n = 0
    for cvt in [o for o in module.walk() if isinstance(o, ConvertLayoutOp)]:
        dst = cvt.results[0].type
        smem = operand_shared_encoding(dst) if isinstance(dst, TensorType) else None
        load = _load_of(cvt.operands[0])
        if smem is None or load is None or not isinstance(load.results[0].type, TensorType):
            continue
        enc = load.results[0].type.encoding
        k_dim = 1 if dst.encoding.op_idx == 0 else 0
        vec = smem.vec.data
        if not isinstance(enc, BlockedEncodingAttr) or enc.order[0] == k_dim or vec == 1:
            continue
        spt = list(enc.size_per_thread)
        if spt[k_dim] >= vec:
            continue  # already K runs
        shape = load.results[0].type.get_shape()
        new = None
        while vec > 1 and new is None:
            spt[k_dim] = vec
            new = blocked_encoding(shape, spt, enc.order, num_warps, tpw)
            if any(s * t * w > size for s, t, w, size in zip(new.size_per_thread, new.threads_per_warp,
                                                              new.warps_per_cta, shape)):
                new, vec = None, vec // 2  # the layout would hold copies: shorter K runs
        if new is None:
            continue
        for i, v in enumerate(load.operands):
            if isinstance(v.type, TensorType):
                load.operands[i] = convert_before(load, v, with_encoding(v.type, new))
        res = load.results[0]
        old = res.type
        set_type(res, with_encoding(old, new))
        back = ConvertLayoutOp(res, old)
        load.parent_block().insert_op_after(back, load)
        res.replace_uses_with_if(back.result, lambda use: use.operation is not back)
        n += 1
    if n:
        PassManager("amd-in-thread-transpose", [RemoveLayoutConversions(), CSE(), DCE()]).run(module)
    return n
