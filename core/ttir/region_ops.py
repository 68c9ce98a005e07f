"""Region ops of the ``tt`` dialect: ``tt.reduce`` and ``tt.scan`` with their combine regions, and
``tt.map_elementwise`` with its scalar region.
Like Triton, they print in the generic form::

    %r = "tt.reduce"(%x) <{axis = 1 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      tt.reduce.return %s : f32
    }) : (tensor<64x128xf32>) -> tensor<64xf32>
"""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import BoolAttr, IntegerAttr, IntegerType, i32
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (IRDLOperation, irdl_op_definition, prop_def, region_def, traits_def,
                       var_operand_def, var_result_def)
from xdsl.traits import HasParent, IsTerminator, Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException

from .types import shape_of


class _Combine(IRDLOperation):
    srcs = var_operand_def()
    axis = prop_def(IntegerAttr)
    result = var_result_def()
    combineOp = region_def("single_block")

    @property
    def combine_block(self) -> Block:
        return self.combineOp.blocks[0]

    def verify_(self) -> None:
        n = len(self.srcs)
        if len(self.combine_block.args) != 2 * n:
            raise VerifyException(f"{self.name} combine region needs {2 * n} arguments, has {len(self.combine_block.args)}")
        rank = len(shape_of(self.srcs[0].type))
        if not 0 <= self.axis.value.data < max(rank, 1):
            raise VerifyException(f"{self.name} axis {self.axis.value.data} out of range for rank {rank}")


@irdl_op_definition
class ReduceOp(_Combine):
    name = "tt.reduce"
    traits = traits_def(Pure())

    def __init__(self, srcs: Sequence[SSAValue], axis: int, result_types: Sequence[Attribute], region: Region):
        super().__init__(operands=[list(srcs)], result_types=[list(result_types)], regions=[region],
                         properties={"axis": IntegerAttr(axis, i32)})


@irdl_op_definition
class ReduceReturnOp(IRDLOperation):
    name = "tt.reduce.return"
    result = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(ReduceOp), Pure())
    assembly_format = "$result attr-dict `:` type($result)"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class ScanOp(_Combine):
    name = "tt.scan"
    reverse = prop_def(BoolAttr)
    traits = traits_def(Pure())

    def __init__(self, srcs: Sequence[SSAValue], axis: int, reverse: bool, region: Region):
        super().__init__(operands=[list(srcs)], result_types=[[SSAValue.get(s).type for s in srcs]],
                         regions=[region], properties={"axis": IntegerAttr(axis, i32),
                                                       "reverse": BoolAttr(reverse, IntegerType(1))})


@irdl_op_definition
class ScanReturnOp(IRDLOperation):
    name = "tt.scan.return"
    result = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(ScanOp), Pure())
    assembly_format = "$result attr-dict `:` type($result)"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class MapElementwiseOp(IRDLOperation):
    """``tt.map_elementwise``: the scalar region runs once per group of ``pack`` consecutive
    elements (in each thread's register order on a GPU); its arguments are the ``pack`` elements
    of the first operand, then those of the second, ...; it returns the ``pack`` elements of the
    first result, then those of the second, ...  Operands and results share one shape."""
    name = "tt.map_elementwise"
    srcs = var_operand_def()
    pack = prop_def(IntegerAttr)
    result = var_result_def()
    scalarOp = region_def()
    traits = traits_def(RecursiveMemoryEffect())

    def __init__(self, srcs: Sequence[SSAValue], result_types: Sequence[Attribute], pack: int, region: Region):
        super().__init__(operands=[list(srcs)], result_types=[list(result_types)], regions=[region],
                         properties={"pack": IntegerAttr(pack, i32)})

    @property
    def scalar_block(self) -> Block:
        return self.scalarOp.blocks[0]

    def verify_(self) -> None:
        pack = self.pack.value.data
        if not self.srcs:
            raise VerifyException("tt.map_elementwise needs at least one operand")
        if pack < 1 or pack & (pack - 1):
            raise VerifyException(f"tt.map_elementwise pack must be a power of 2, got {pack}")
        shape = shape_of(self.srcs[0].type)
        for v in list(self.srcs) + list(self.result):
            if shape_of(v.type) != shape:
                raise VerifyException("tt.map_elementwise operands and results must have one shape")
        n_args = len(self.scalar_block.args)
        if n_args != len(self.srcs) * pack:
            raise VerifyException(f"tt.map_elementwise region needs {len(self.srcs) * pack} arguments, has {n_args}")


@irdl_op_definition
class MapElementwiseReturnOp(IRDLOperation):
    name = "tt.map_elementwise.return"
    result = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(MapElementwiseOp), Pure())
    assembly_format = "attr-dict ($result^ `:` type($result))?"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])
