"""Shared TTGIR -> LLVM IR lowering, parameterised by a :class:`~tritium.conversion.target_info.TargetInfo`.

``lower_to_llvm(module, target_info, options) -> (llvm_ir_text, metadata)``; the op lowerings live in
the sibling modules, one per family (elementwise, casts, memory, reduce, scan, convert_layout,
dot_fma, control_flow, shape_ops, debug_ops)."""
from .lowering import LOWERINGS, FunctionLowering, LoweringError, lower_to_llvm, lowers

# every op family registers its lowerings with ``lowers`` when its module is imported: the package
# imports them all, so any import of the lowering finds every family
from . import (casts, control_flow, convert_layout, debug_ops, dot_fma, elementwise, gather,  # noqa: F401,E402
               global_memory, mx_decode, reduce, scan, shape_ops, shared_ops)

__all__ = ["LOWERINGS", "FunctionLowering", "LoweringError", "lower_to_llvm", "lowers"]
