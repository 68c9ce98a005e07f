"""``tritonamdgpu-bound-epilogue-scratch``: keep a conversion after the loops from raising the
kernel's LDS above its buffers'.

A CU's 64 KiB of LDS is what bounds the workgroups it holds for most dot kernels, and the kernel's
LDS is the high-water mark of its buffers and conversions.  A conversion outside every loop (an
epilogue: the accumulator into the layout of its stores or atomics) is live after the pipeline's
buffers are dead and shares their bytes, but its padded scratch can be larger: a 128x128 fp32
accumulator goes through LDS in two 36 KiB slices where the split-K kernel's buffers take 32 KiB,
which leaves gfx942 one workgroup a CU instead of two.  This pass gives each such conversion a
scratch bound of its own (``ttg.convert-scratch-limit`` on the op, read by ``scratch_limit``): the
bytes of the module's ``ttg.local_alloc`` buffers (at least :data:`FLOOR_BYTES`), so that it moves
in as many more slices as it takes to fit in them (one barrier pair a slice).  Conversions inside loops keep the module's bound:
there every slice costs its barriers each iteration, and the buffers are live beside them."""
from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp

from tritium.ttgir.layouts import SCRATCH_LIMIT_ATTR
from tritium.ttgir.ops import ConvertLayoutOp, LocalAllocOp
from tritium.ttgir.passes.allocate_shared_memory import outermost_loop

from .shared_layout import convert_scratch

#: the least a bound may be: below the buffers of a kernel with little LDS, slices would multiply
#: (a barrier pair each) for workgroups the registers may not allow anyway; 16 KiB leaves four a CU
FLOOR_BYTES = 16 * 1024


class BoundEpilogueScratch:
    name = "tritonamdgpu-bound-epilogue-scratch"

    def run(self, module: ModuleOp) -> None:
        buffers = sum(op.result.type.size_in_bytes() for op in module.walk() if isinstance(op, LocalAllocOp))
        if buffers == 0:
            return
        bound = max(buffers, FLOOR_BYTES)
        for op in module.walk():
            if not isinstance(op, ConvertLayoutOp) or outermost_loop(op) is not op or convert_scratch(op) <= bound:
                continue
            op.attributes[SCRATCH_LIMIT_ATTR] = IntegerAttr(bound, IntegerType(32))
            if convert_scratch(op) > bound:  # not even one row a slice fits: as it was
                del op.attributes[SCRATCH_LIMIT_ATTR]
