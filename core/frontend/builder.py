"""The IR builder the frontend emits TTIR through: an insertion point, the current source
location, and conversions from language types to IR types."""
from __future__ import annotations

from contextlib import contextmanager

from xdsl.dialects.builtin import (BFloat16Type, DenseIntOrFPElementsAttr, FileLineColLoc, Float16Type,
                                   Float32Type, Float64Type, Float8E4M3B11FNUZType, Float8E4M3FNType,
                                   Float8E4M3FNUZType, Float8E5M2FNUZType, Float8E5M2Type, FloatAttr,
                                   IntAttr, IntegerAttr, IntegerType, ModuleOp, StringAttr, TensorType)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ..language import dtypes as tl
from ..ttir import arith
from ..ttir.types import PointerType

_SCALAR_IR = {
    "int1": IntegerType(1), "int8": IntegerType(8), "int16": IntegerType(16), "int32": IntegerType(32),
    "int64": IntegerType(64), "uint8": IntegerType(8), "uint16": IntegerType(16), "uint32": IntegerType(32),
    "uint64": IntegerType(64), "fp16": Float16Type(), "bf16": BFloat16Type(), "fp32": Float32Type(),
    "fp64": Float64Type(), "fp8e4nv": Float8E4M3FNType(), "fp8e5": Float8E5M2Type(),
    # Triton's IR types for these (fp8e4b15's values are not the MLIR type's: see ttir.float_formats)
    "fp8e4b15": Float8E4M3B11FNUZType(), "fp8e4b8": Float8E4M3FNUZType(), "fp8e5b16": Float8E5M2FNUZType(),
}


def ir_type(ty: tl.dtype) -> Attribute:
    if ty.is_block():
        return TensorType(ir_type(ty.element_ty), ty.shape)
    if ty.is_ptr():
        return PointerType(ir_type(ty.element_ty), ty.address_space)
    try:
        return _SCALAR_IR[ty.name]
    except KeyError:
        raise TypeError(f"dtype {ty} is not supported by the compiler") from None


class Builder:
    """Creates ops at the insertion point, each tagged with the current location."""

    def __init__(self, filename: str, module: ModuleOp | None = None):
        self.filename = filename
        self.module = module if module is not None else ModuleOp([])
        self.block: Block | None = None
        self.loc: FileLineColLoc = FileLineColLoc(StringAttr(filename), IntAttr(0), IntAttr(0))
        self.codegen = None  # the CodeGenerator using this builder (for combine regions)
        self.options = None
        self.target = None

    # -- locations -----------------------------------------------------------------------------
    def set_loc(self, line: int, col: int) -> None:
        self.loc = FileLineColLoc(StringAttr(self.filename), IntAttr(line), IntAttr(col))

    # -- insertion -------------------------------------------------------------------------------
    def insert(self, op: Operation) -> Operation:
        op.location = self.loc
        self.block.add_op(op)
        return op

    def create(self, op: Operation) -> SSAValue | Operation:
        """Insert ``op``; return its single result, or the op when it has none/several."""
        self.insert(op)
        return op.results[0] if len(op.results) == 1 else op

    @contextmanager
    def at(self, block: Block):
        saved = self.block
        self.block = block
        try:
            yield block
        finally:
            self.block = saved

    # -- constants -------------------------------------------------------------------------------
    def constant(self, value, ty: tl.dtype) -> SSAValue:
        t = ir_type(ty)
        elt = t.element_type if isinstance(t, TensorType) else t
        if isinstance(elt, IntegerType):
            w = elt.width.data
            v = int(value)
            # store as the signed value of the same bits (IntegerAttr checks the signed range)
            v &= (1 << w) - 1
            if w > 1 and v >= 1 << (w - 1):
                v -= 1 << w
            if w == 1:
                v = -1 if v else 0
            attr = IntegerAttr(v, elt) if not isinstance(t, TensorType) else DenseIntOrFPElementsAttr.from_list(t, [v])
        else:
            v = float(value)
            attr = FloatAttr(v, elt) if not isinstance(t, TensorType) else DenseIntOrFPElementsAttr.from_list(t, [v])
        return self.create(arith.ConstantOp(attr))
