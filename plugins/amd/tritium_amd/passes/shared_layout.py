"""The LDS layout of an MFMA/WMMA operand on its way from the global-load layout to the ``dot_op``
layout.

Each lane of an MFMA/WMMA operand holds ``kWidth`` consecutive K elements of one row (A) or
column (B), so the operand is placed in LDS with K as the fastest dimension for both operands (B
included: it is stored transposed when its global layout walks N) and read with one
``ds_read_b64``/``b128`` per K run.  The K runs of a row are XOR-swizzled by the row
(``#ttg.swizzled_shared`` with ``vec = kWidth``): the lanes of one read walk M (or N) at the same K,
so without the swizzle they would all hit the same banks.  The parameters are Triton's AMD choice:
``perPhase`` rows share a phase when a row is shorter than one pass over the banks, and the phases
span at most the 16 lanes that one LDS cycle serves."""
from __future__ import annotations

from xdsl.dialects.builtin import TensorType

from tritium.ttgir.encodings import DotOperandEncodingAttr, SwizzledSharedEncodingAttr
from tritium.ttgir.layouts import bit_width, convert_chunks, scratch_limit
from tritium.ttgir.scratch import convert_scratch_in_warp, tensor_bytes
from tritium.ttir.types import PointerType

from .encodings import AMDMatrixEncoding

#: LDS banks (32 bits each) on gfx9 and gfx11
NUM_BANKS = 32
#: lanes an LDS access serves per cycle
SIMD_WIDTH = 16


def operand_shared_encoding(t: TensorType) -> SwizzledSharedEncodingAttr | None:
    """The swizzled LDS layout for tensor type ``t`` whose encoding is the ``dot_op`` operand of an
    ``amd_mfma``/``amd_wmma`` layout; None for any other type (and for element types narrower than
    a byte)."""
    enc = t.encoding
    if not isinstance(enc, DotOperandEncodingAttr) or not isinstance(enc.parent, AMDMatrixEncoding):
        return None
    shape = t.get_shape()
    bits = bit_width(t.element_type)
    if len(shape) != 2 or bits < 8 or bits > 64 or enc.k_width <= 0:
        return None
    ebytes = bits // 8
    k_dim = 1 if enc.op_idx == 0 else 0
    order = (k_dim, 1 - k_dim)
    inner = shape[k_dim]
    vec = max(1, min(enc.k_width, 16 // ebytes, inner))
    per_phase = max(1, NUM_BANKS * 32 // bits // inner)
    max_phase = max(1, min(SIMD_WIDTH // per_phase, inner // vec))
    out = SwizzledSharedEncodingAttr(vec, per_phase, max_phase, order)
    return out if out.is_linear(shape) else None


def convert_scratch(op) -> int:
    """The AMD rule for ``ttg.convert_layout``'s LDS (``tritium_scratch_sizes``): none for a
    conversion inside each wavefront (lane exchanges: ``AMDTargetInfo.warp_exchange``); the
    tensor's own bytes, unpadded, where the lowering places an MFMA/WMMA operand swizzled
    (:func:`operand_shared_encoding`, what ``AMDTargetInfo.convert_scratch_encoding`` gives it);
    else the core's padded round trip."""
    n = convert_scratch_in_warp(op)
    if n == 0:
        return 0
    src, dst = op.operands[0].type, op.results[0].type
    if isinstance(src.element_type, PointerType) or convert_chunks(src, dst, scratch_limit(op)) != 1 or \
            operand_shared_encoding(dst) is None:
        return n
    return tensor_bytes(src)
