"""Shared TTGIR -> LLVM IR lowering, parameterised by a :class:`~tritium.conversion.target_info.TargetInfo`.

``lower_to_llvm(module, target_info, options) -> (llvm_ir_text, metadata)``; the op lowerings live in
the sibling modules, one per family (elementwise, casts, memory, reduce, scan, convert_layout,
dot_fma, control_flow, shape_ops, debug_ops)."""
from .lowering import LOWERINGS, FunctionLowering, LoweringError, lower_to_llvm, lowers

__all__ = ["LOWERINGS", "FunctionLowering", "LoweringError", "lower_to_llvm", "lowers"]
