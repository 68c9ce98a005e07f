"""Enum-valued properties of ``tt`` ops.  As in Triton they are stored as ``i32`` integer
attributes (so the generic form is what MLIR's Triton dialect reads) and printed by keyword in
the custom form."""
from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, IntegerType

I32 = IntegerType(32)


class Enum:
    """A two-way table between an integer code and its keyword."""

    def __init__(self, name: str, cases: dict[str, int]):
        self.name = name
        self.by_kw = dict(cases)
        self.by_code = {v: k for k, v in cases.items()}

    def attr(self, kw_or_code: str | int) -> IntegerAttr:
        code = self.by_kw[kw_or_code] if isinstance(kw_or_code, str) else kw_or_code
        return IntegerAttr(code, I32)

    def keyword(self, attr: IntegerAttr) -> str:
        return self.by_code[attr.value.data]

    def __contains__(self, kw: str) -> bool:
        return kw in self.by_kw


CACHE_MODIFIER = Enum("CacheModifier", {"none": 1, "ca": 2, "cg": 3, "wb": 4, "cs": 5, "wt": 6, "cv": 7})
EVICTION_POLICY = Enum("EvictionPolicy", {"evict_normal": 1, "evict_first": 2, "evict_last": 3})
MEM_SEMANTIC = Enum("MemSemantic", {"relaxed": 1, "acquire": 2, "release": 3, "acq_rel": 4})
MEM_SYNC_SCOPE = Enum("MemSyncScope", {"gpu": 1, "cta": 2, "sys": 3})
PADDING_OPTION = Enum("PaddingOption", {"zero": 1, "nan": 2})
RMW_OP = Enum("RMWOp", {"and": 1, "or": 2, "xor": 3, "add": 4, "fadd": 5, "max": 6, "min": 7,
                        "umax": 8, "umin": 9, "exch": 10})
INPUT_PRECISION = Enum("InputPrecision", {"tf32": 0, "tf32x3": 1, "ieee": 2, "bf16x3": 3, "bf16x6": 4})
ROUNDING_MODE = Enum("RoundingMode", {"rtz": 0, "rtne": 1})
PROPAGATE_NAN = Enum("PropagateNan", {"none": 0, "all": 65535})
PROGRAM_DIM = Enum("ProgramIDDim", {"x": 0, "y": 1, "z": 2})
SCALE_DOT_ELEM_TYPE = Enum("ScaleDotElemType", {"e4m3": 0, "e5m2": 1, "e2m3": 2, "e3m2": 3, "e2m1": 4, "bf16": 5,
                                                "fp16": 6})

CMPI_PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
CMPF_PREDICATES = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge",
                   "ult", "ule", "une", "uno", "true"]
