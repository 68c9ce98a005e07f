"""TTGIR passes, one module per pass (the ``tritium.passes`` interface: ``name``, ``run(module)``)."""
from .allocate_shared_memory import AllocateSharedMemory, allocate_shared_memory, scratch_size
from .coalesce import Coalesce, coalesce
from .convert_to_ttgir import ConvertToTTGIR, convert_to_ttgir
from .decompose_bf16_dot import DecomposeBf16Dot, decompose_bf16_dot
from .decompose_scaled_dot import DecomposeScaledDot, decompose_scaled_dot
from .membar import Membar, membar
from .optimize_thread_locality import OptimizeThreadLocality, optimize_thread_locality
from .remove_layout_conversions import RemoveLayoutConversions, remove_layout_conversions
