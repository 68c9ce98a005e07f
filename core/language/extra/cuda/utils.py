"""Utilities CUDA kernels import from ``triton.language.extra.cuda``: the launch's warp and thread
counts (compile-time constants) and reads of PTX special registers (``%globaltimer``, ``%smid``)
through inline assembly, as Triton defines them; backends without PTX reject the latter at the
call's line."""
from ... import dtypes
from ...core import builtin, constexpr
from ...functions import inline_asm_elementwise

#: threads per CUDA warp
WARP_THREADS = 32


@builtin
def num_warps(_builder=None):
    """The kernel's ``num_warps`` (a constexpr)."""
    return constexpr(_builder.options.num_warps)


@builtin
def num_threads(_builder=None):
    """Threads per program: ``num_warps`` CUDA warps of 32 (a constexpr)."""
    return constexpr(_builder.options.num_warps * WARP_THREADS)


@builtin
def globaltimer(_builder=None):
    """The GPU's nanosecond timer (``%globaltimer``, int64); read anew at every call."""
    return inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=dtypes.int64, is_pure=False, pack=1,
                                  _builder=_builder)


@builtin
def smid(_builder=None):
    """The index of the streaming multiprocessor running the program (``%smid``, int32)."""
    return inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=dtypes.int32, is_pure=True, pack=1,
                                  _builder=_builder)
