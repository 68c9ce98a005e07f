"""Elementwise decoding of the OCP microscaling formats, for lowering ``tt.dot_scaled`` without
native support (``decompose-scaled-dot``)::

    %lo = ttg.e2m1_to_fp %packed {high = false} : tensor<64x32xi8, #b> -> tensor<64x32xbf16, #b>
    %s = ttg.e8m0_to_fp %scale {fastMath = false} : tensor<64x2xi8, #b> -> tensor<64x2xbf16, #b>

``ttg.e2m1_to_fp`` decodes the e2m1 code in the low (``high = false``) or high nibble of each
byte; ``ttg.e8m0_to_fp`` gives ``2^(code - 127)``, NaN for 0xFF (``fastMath``: the plain exponent
bits, so 0xFF reads as inf and 0 as zero).  Results are bf16, f16 or f32; both keep the shape and
layout of their operand, and both LLVM backends share their lowering.
"""
from __future__ import annotations

from xdsl.dialects.builtin import BoolAttr, IntegerType, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (IRDLOperation, ParsePropInAttrDict, irdl_op_definition, operand_def, prop_def, result_def,
                       traits_def)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from ..ttir.types import element_type, shape_of


def _bool(v: bool) -> BoolAttr:
    return BoolAttr(v, IntegerType(1))


class _Decode(IRDLOperation):
    src = operand_def()
    result = result_def()
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def verify_(self) -> None:
        s, r = self.src.type, self.result.type
        elt = element_type(s)
        if not (isinstance(elt, IntegerType) and elt.width.data == 8):
            raise VerifyException(f"{self.name} decodes i8 codes, got {s}")
        if shape_of(s) != shape_of(r) or (isinstance(s, TensorType) and s.encoding != r.encoding):
            raise VerifyException(f"{self.name} keeps its operand's shape and layout: {s} -> {r}")
        if type(element_type(r)).__name__ not in ("BFloat16Type", "Float16Type", "Float32Type"):
            raise VerifyException(f"{self.name} produces bf16, f16 or f32, got {r}")


@irdl_op_definition
class E2M1ToFpOp(_Decode):
    name = "ttg.e2m1_to_fp"
    high = prop_def(BoolAttr)

    def __init__(self, src: SSAValue, result_type: Attribute, high: bool):
        super().__init__(operands=[src], result_types=[result_type], properties={"high": _bool(high)})

    @property
    def is_high(self) -> bool:
        return bool(self.high.value.data)


@irdl_op_definition
class E8M0ToFpOp(_Decode):
    name = "ttg.e8m0_to_fp"
    fastMath = prop_def(BoolAttr)

    def __init__(self, src: SSAValue, result_type: Attribute, fast_math: bool = False):
        super().__init__(operands=[src], result_types=[result_type], properties={"fastMath": _bool(fast_math)})

    @property
    def fast_math(self) -> bool:
        return bool(self.fastMath.value.data)


MX_OPS = [E2M1ToFpOp, E8M0ToFpOp]

__all__ = ["E2M1ToFpOp", "E8M0ToFpOp", "MX_OPS"]
