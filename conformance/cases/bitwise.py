"""Bitwise operators and shifts on signed and unsigned integers of every width."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Out, Rand
from ._common import BLOCK, GRID, N


@triton.jit
def bitwise_kernel(x_ptr, y_ptr, z_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "and":
        z = x & y
    elif OP == "or":
        z = x | y
    elif OP == "xor":
        z = x ^ y
    elif OP == "not":
        z = ~x
    elif OP == "shl":
        z = x << y
    elif OP == "shr":
        z = x >> y
    else:  # shifts and masks by literals
        z = ((x >> 3) & 0x1F) | (x << 2)
    tl.store(z_ptr + offs, z)


def _ref(op):
    return {
        "and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y,
        "not": lambda x, y: ~x, "shl": lambda x, y: np.left_shift(x, y),
        # >> is arithmetic on signed types, logical on unsigned ones (numpy's too)
        "shr": lambda x, y: np.right_shift(x, y),
        "literal": lambda x, y: ((x >> x.dtype.type(3)) & x.dtype.type(0x1F)) | (x << x.dtype.type(2)),
    }[op]


CASES = []
for _t in dtypes.INTEGER_DTYPES:
    for _op in ("and", "or", "xor", "not", "shl", "shr", "literal"):
        _shift = _op in ("shl", "shr")
        _y = Rand(_t, (N,), 1, dtypes.bits_of(_t) - 1) if _shift else Rand(_t, (N,))
        CASES.append(Case(
            id=f"bitwise/{_op}-{_t}", kernel=bitwise_kernel, grid=GRID, constexprs={"OP": _op, "BLOCK": BLOCK},
            inputs={"x_ptr": Rand(_t, (N,)), "y_ptr": _y}, outputs={"z_ptr": Out(_t, (N,))},
            reference=lambda x_ptr, y_ptr, op=_op: _ref(op)(x_ptr, y_ptr)))
