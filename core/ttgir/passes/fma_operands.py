"""``fma-operands-through-shared``: the operands of an FMA dot reach it through their own shared
buffers, written together and then read, instead of one layout conversion after the other.

An FMA dot (``tt.dot`` whose result layout is ``#ttg.blocked``) needs each operand in a
``#ttg.dot_op`` layout that gives every thread whole rows of A and whole columns of B, so the
operands are redistributed through shared memory.  As two ``ttg.convert_layout`` ops they share
one scratch buffer: A is written, read back whole, and only then may B overwrite it, with a
barrier between.  Every A value is then in a register before B's first read, and the loads cannot
move past the barriers to sit beside the FMAs that use them (a 32x32x32 fp32 dot on 4 warps took
163 registers, a 64x64x32 one spilled).

This pass rewrites the two conversions into ``ttg.local_alloc`` of each source (two live buffers,
so one barrier after both writes) followed by ``ttg.local_load`` of each, placed just before the
dot.  No barrier separates the reads from the FMAs, so the machine's scheduler brings each load
next to its first use (Triton's ``reduce-data-duplication`` makes the same rewrite).  Loops whose
operands the software pipeliner already stages in shared memory read them with ``local_load``
and are left alone, and so are operands whose two buffers together would exceed the module's
conversion scratch bound (``scratch_limit``: 64 KiB on AMD): conversions can move a large operand in
row slices, a buffer cannot.  The buffers' layout is row-major along the source's order,
unswizzled."""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp, TensorType

from ...ttir.ops import DotOp
from ..encodings import BlockedEncodingAttr, DotOperandEncodingAttr, SwizzledSharedEncodingAttr
from ..layouts import scratch_limit
from ..ops import ConvertLayoutOp, LocalAllocOp, LocalLoadOp
from ..scratch import tensor_bytes
from ..types import MemDescType
from ._util import encoding


def fma_operand_buffer(convert: ConvertLayoutOp) -> SwizzledSharedEncodingAttr | None:
    """The shared layout an FMA dot operand is staged in when it is loaded in a pipelined loop
    (the software pipeliner's ``operand_buffer`` rule): ``convert`` takes a loaded tile from a
    blocked layout to a ``#ttg.dot_op`` of a blocked dot; the slots are row-major along the tile's
    order, unswizzled, as this pass's buffers (an FMA read takes a thread's rows or columns along
    K, so a swizzle buys nothing).  None for any other conversion."""
    enc = encoding(convert.results[0].type)
    src = encoding(convert.operands[0].type)
    if not (isinstance(enc, DotOperandEncodingAttr) and isinstance(enc.parent, BlockedEncodingAttr)
            and isinstance(src, BlockedEncodingAttr)):
        return None
    return SwizzledSharedEncodingAttr(1, 1, 1, src.order)


def _fma_operand_conversion(dot: DotOp, value) -> ConvertLayoutOp | None:
    """The conversion producing ``value`` when it is one this pass rewrites: into an FMA dot
    operand layout, in the dot's block, used by the dot alone, from a distributed tensor."""
    cvt = value.owner
    if not isinstance(cvt, ConvertLayoutOp) or cvt.parent_block() is not dot.parent_block() \
            or not isinstance(cvt.operands[0].type, TensorType) or fma_operand_buffer(cvt) is None:
        return None
    if sum(1 for _ in cvt.results[0].uses) != 1:
        return None
    return cvt


class FmaOperandsThroughShared:
    name = "fma-operands-through-shared"

    def run(self, module: ModuleOp) -> None:
        for dot in [op for op in module.walk() if isinstance(op, DotOp)]:
            if not isinstance(encoding(dot.results[0].type), BlockedEncodingAttr):
                continue
            converts = [c for c in (_fma_operand_conversion(dot, v) for v in (dot.a, dot.b)) if c is not None]
            if not converts or sum(tensor_bytes(c.operands[0].type) for c in converts) > scratch_limit(dot):
                continue
            block = dot.parent_block()
            allocs = []
            for cvt in converts:
                src = cvt.operands[0]
                buf_t = MemDescType(src.type.get_shape(), src.type.element_type, fma_operand_buffer(cvt))
                alloc = LocalAllocOp(buf_t, src)
                block.insert_op_before(alloc, dot)
                allocs.append(alloc)
            for cvt, alloc in zip(converts, allocs):
                load = LocalLoadOp(alloc.results[0], cvt.results[0].type)
                block.insert_op_before(load, dot)
                cvt.results[0].replace_all_uses_with(load.results[0])
                cvt.detach()
                cvt.erase()
