"""``tritonamdgpu-stream-pipeline``: software pipelining on AMD, the core ``pipeline`` pass with
Triton's stream-pipeliner schedule (``copy="registers"``).

AMD GPUs have no asynchronous global-to-LDS copy that the lowering uses, so with ``num_stages=2``
the loads of iteration ``i + 1`` go into registers at the top of the loop, before the MFMA/WMMA of
iteration ``i`` read their operands from LDS, and are stored into the one-slot LDS buffer after
them (``num_stages=S``: loads ``S - 1`` iterations ahead, ``S - 1`` slots).  The plugin chooses
what is pipelined:

* loads that feed a ``ttg.convert_layout`` to an MFMA/WMMA dot operand get an LDS buffer of
  :func:`operand_buffer_encoding`, read by ``ttg.local_load``;
* as Triton's pipeliner does, a load that moves less than 32 bits per access stays where it is
  (holding a tile of single 16-bit loads in registers across the dot costs more registers than the
  latency it hides)."""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from tritium.ttgir.analysis.axis_info import AxisInfoAnalysis, vector_width
from tritium.ttgir.encodings import BlockedEncodingAttr, DotOperandEncodingAttr, SwizzledSharedEncodingAttr
from tritium.ttgir.layouts import bit_width
from tritium.ttgir.ops import LocalStoreOp
from tritium.ttgir.passes.software_pipeline import Pipeline

from .encodings import AMDMatrixEncoding
from .shared_layout import operand_shared_encoding


#: bits one access of a pipelined load must move at least (Triton's AMD pipeliner's rule)
MIN_LOAD_BITS = 32


def operand_buffer_encoding(convert):
    """The LDS buffer of a loaded tile that a ``ttg.convert_layout`` takes to an MFMA/WMMA operand:
    the operand's swizzled K-contiguous layout (``shared_layout.py``), else row-major in the order
    of the tile's blocked layout (None: not a matrix-instruction operand)."""
    src, dst = convert.src.type.encoding, convert.result.type.encoding
    if not (isinstance(dst, DotOperandEncodingAttr) and isinstance(dst.parent, AMDMatrixEncoding)):
        return None
    if not isinstance(src, BlockedEncodingAttr):
        return None
    # the operand's own LDS layout (K-contiguous, swizzled), as the conversion would use; row-major
    # where it has none
    placed = operand_shared_encoding(convert.result.type)
    return placed if placed is not None else SwizzledSharedEncodingAttr(1, 1, 1, src.order)


class StreamPipeline:
    """``StreamPipeline(num_stages)``: the core pass, AMD's schedule and choices (module docstring)."""

    name = "tritonamdgpu-stream-pipeline"

    def __init__(self, num_stages: int):
        self.num_stages = num_stages
        self.skipped: dict = {}
        self.pipelined = False

    def run(self, module: ModuleOp) -> None:
        analysis = AxisInfoAnalysis(module)

        def wide_enough(load) -> bool:
            bits = bit_width(load.result.type.element_type)
            return vector_width(analysis, load.ptr, bits, load.mask) * bits >= MIN_LOAD_BITS

        p = Pipeline(self.num_stages, copy="registers", operand_buffer=operand_buffer_encoding,
                     load_filter=wide_enough)
        before = sum(1 for op in module.walk() if isinstance(op, LocalStoreOp))
        p.run(module)
        self.skipped = p.skipped
        self.pipelined = sum(1 for op in module.walk() if isinstance(op, LocalStoreOp)) > before
