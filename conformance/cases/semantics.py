"""Triton's typing rules where they differ from C or from same-rank broadcasting.

- ``>>`` with mixed signedness: operands promote as usual, but the shift is arithmetic when the
  left operand is signed (``int32 >> uint32`` shifts the sign bit in).
- Reductions and scans promote as Triton does: bf16 ``cumsum``/``cumprod`` run in fp32 and return
  fp32; ``max``/``min`` of narrower-than-32-bit types return fp32/int32, so what follows them is
  computed at that width.
- Binary operators, comparisons, ``where``, ``maximum`` and ``broadcast`` broadcast between ranks
  by NumPy's rules (``[8, 64]`` with ``[1]``, ``[32, 64]`` with ``[64]``), as PyTorch Inductor's
  kernels rely on.
"""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Out, Rand, tol

N = 256


# --- shifts ---------------------------------------------------------------------------------------

@triton.jit
def shift_kernel(x_ptr, y_ptr, z_ptr, OP: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "shr":
        z = x >> y
    else:
        z = x << y
    tl.store(z_ptr + offs, z)


def _shift_type(xt, yt):
    bits = max(dtypes.bits_of(xt), dtypes.bits_of(yt))
    return f"{'u' if xt.startswith('u') else ''}int{bits}"


def _shift_ref(op, zt):
    np_t = dtypes.STORAGE[zt]

    def ref(x_ptr, y_ptr):
        x, y = x_ptr.astype(np_t), y_ptr.astype(np_t)
        return np.right_shift(x, y) if op == "shr" else np.left_shift(x, y)
    return ref


_SHIFT_PAIRS = (("int8", "uint8"), ("int8", "uint16"), ("int16", "uint32"), ("int32", "uint32"),
                ("int32", "uint64"), ("int64", "uint64"), ("uint32", "int32"), ("uint8", "int16"))

CASES = []
for _xt, _yt in _SHIFT_PAIRS:
    _zt = _shift_type(_xt, _yt)
    _hi = min(dtypes.bits_of(_zt) - 1, dtypes.int_range(_yt)[1])
    for _op in ("shr", "shl"):
        CASES.append(Case(
            id=f"semantics/{_op}-{_xt}-by-{_yt}", kernel=shift_kernel, constexprs={"OP": _op, "N": N},
            inputs={"x_ptr": Rand(_xt, (N,)), "y_ptr": Rand(_yt, (N,), 1, _hi)},
            outputs={"z_ptr": Out(_zt, (N,))}, reference=_shift_ref(_op, _zt),
            doc="the left operand's signedness picks arithmetic or logical >>, at the wider width"))


# --- promotion in reductions and scans ------------------------------------------------------------

M, K = 8, 64


@triton.jit
def promoted_scan_kernel(x_ptr, z_ptr, OP: tl.constexpr, AXIS: tl.constexpr, M: tl.constexpr, K: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]
    x = tl.load(x_ptr + offs)
    if OP == "cumsum":
        z = tl.cumsum(x, axis=AXIS)
    elif OP == "cumsum-reverse":
        z = tl.cumsum(x, axis=AXIS, reverse=True)
    elif OP == "cumprod":
        z = tl.cumprod(x, axis=AXIS)
    elif OP == "minus-max":
        z = x - tl.max(x, axis=AXIS, keep_dims=True)
    else:
        z = x - tl.min(x, axis=AXIS)[:, None]
    tl.static_assert(z.dtype == tl.float32 or z.dtype == tl.int32,
                     "the result of a promoting reduction or scan is 32-bit")
    tl.store(z_ptr + offs, z)


def _scan_ref(op, axis):
    def ref(x_ptr):
        x = x_ptr.reshape(M, K).astype(np.float64 if x_ptr.dtype.kind == "f" else np.int64)
        if op == "cumsum":
            r = np.cumsum(x, axis=axis)
        elif op == "cumsum-reverse":
            r = np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)
        elif op == "cumprod":
            r = np.cumprod(x, axis=axis)
        elif op == "minus-max":
            r = x - x.max(axis=axis, keepdims=True)
        else:
            r = x - x.min(axis=axis, keepdims=True)
        return r.ravel()
    return ref


for _op, _src, _out, _axis in (
        ("cumsum", Rand("bf16", (M * K,), -2, 2), "fp32", 1),
        ("cumsum", Rand("bf16", (M * K,), -2, 2), "fp32", 0),
        ("cumsum-reverse", Rand("bf16", (M * K,), -2, 2), "fp32", 1),
        ("cumprod", Rand("bf16", (M * K,), 0.9, 1.1), "fp32", 1),
        ("minus-max", Rand("fp16", (M * K,)), "fp32", 1),
        ("minus-min", Rand("bf16", (M * K,)), "fp32", 1),
        ("minus-max", Rand("int8", (M * K,)), "int32", 1),
        ("minus-min", Rand("uint16", (M * K,)), "int32", 1)):
    _tag = _src.dtype
    CASES.append(Case(
        id=f"semantics/{_op}-{_tag}-axis{_axis}-returns-{_out}", kernel=promoted_scan_kernel,
        constexprs={"OP": _op, "AXIS": _axis, "M": M, "K": K}, inputs={"x_ptr": _src},
        outputs={"z_ptr": Out(_out, (M * K,))}, reference=_scan_ref(_op, _axis),
        **(tol(dtypes.ACCUM_TOLERANCE, "fp32") if _op.startswith("cum") else {"rtol": 0.0, "atol": 0.0}),
        doc="accumulated and returned at 32 bits, as Triton does; an 8/16-bit result would be off"))


# --- broadcasting between ranks -------------------------------------------------------------------

@triton.jit
def _inductor_maximum(a, b):
    # PyTorch Inductor's triton_helpers.maximum: NaN-propagating, called with a [1] constant
    mask = a > b
    mask |= a != a
    return tl.where(mask, a, b)


@triton.jit
def rank_broadcast_kernel(x_ptr, y_ptr, z_ptr, OP: tl.constexpr, M: tl.constexpr, K: tl.constexpr,
                          YK: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + tl.arange(0, YK))
    if OP == "add":
        z = x + y
    elif OP == "sub-lower-rank-left":
        z = y - x
    elif OP == "compare":
        z = (x < y).to(tl.float32)
    elif OP == "where-values":
        z = tl.where(x > 0, x, y)
    elif OP == "where-cond":
        z = tl.where(y > 0, x, -x)
    elif OP == "maximum":
        z = tl.maximum(y, x)
    elif OP == "broadcast":
        _, z = tl.broadcast(x, y)
    else:
        z = _inductor_maximum(x, tl.full([1], 0.0, tl.float32)) + _inductor_maximum(y, x)
    tl.store(z_ptr + offs, z)


_BCAST_REF = {
    "add": lambda x, y: x + y, "sub-lower-rank-left": lambda x, y: y - x,
    "compare": lambda x, y: (x < y).astype(np.float64),
    "where-values": lambda x, y: np.where(x > 0, x, y), "where-cond": lambda x, y: np.where(y > 0, x, -x),
    "maximum": np.maximum, "broadcast": lambda x, y: np.broadcast_to(y, x.shape),
    "inductor-maximum": lambda x, y: np.maximum(x, 0.0) + np.maximum(y, x),
}

for _yk in (1, K):
    for _op, _fn in _BCAST_REF.items():
        CASES.append(Case(
            id=f"semantics/broadcast-{M}x{K}-with-{_yk}-{_op}", kernel=rank_broadcast_kernel,
            constexprs={"OP": _op, "M": M, "K": K, "YK": _yk},
            inputs={"x_ptr": Rand("fp32", (M * K,)), "y_ptr": Rand("fp32", (_yk,))},
            outputs={"z_ptr": Out("fp32", (M * K,))},
            reference=lambda x_ptr, y_ptr, f=_fn: f(x_ptr.reshape(M, K), y_ptr).ravel(),
            doc="the lower-rank operand gets leading size-1 dimensions (NumPy's rule)"))


@triton.jit
def rank3_broadcast_kernel(x_ptr, y_ptr, w_ptr, z_ptr, B: tl.constexpr, M: tl.constexpr, K: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rk = tl.arange(0, K)[None, None, :]
    x = tl.load(x_ptr + rb * M * K + rm * K + rk)                                     # [B, M, K]
    y = tl.load(y_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])     # [M, K]
    w = tl.load(w_ptr + tl.arange(0, K))                                              # [K]
    tl.store(z_ptr + rb * M * K + rm * K + rk, x * y + w)


CASES.append(Case(
    id="semantics/broadcast-3d-with-2d-and-1d", kernel=rank3_broadcast_kernel, constexprs={"B": 4, "M": 8, "K": 16},
    inputs={"x_ptr": Rand("int32", (4 * 8 * 16,), -1000, 1000), "y_ptr": Rand("int32", (8 * 16,), -1000, 1000),
            "w_ptr": Rand("int32", (16,))},
    outputs={"z_ptr": Out("int32", (4 * 8 * 16,))},
    reference=lambda x_ptr, y_ptr, w_ptr: (x_ptr.reshape(4, 8, 16) * y_ptr.reshape(8, 16) + w_ptr).ravel()))


# --- pointer offsets are sign-extended one by one -----------------------------------------------

@triton.jit
def addptr_wide_sum_kernel(x_ptr, z_ptr, N: tl.constexpr):
    # (p - 2^31) + (2^31 - 1) + (1 + i): each int32 offset is widened on its own, so the address is
    # x_ptr + i; adding the two int32 offsets first would wrap to -2^31 and land 2^32 elements off
    far = x_ptr - tl.full([N], 2147483648, tl.int64)
    big = tl.full([N], 2147483647, tl.int32)
    v = tl.load(far + big + (1 + tl.arange(0, N)))
    tl.store(z_ptr + tl.arange(0, N), v)


CASES.append(Case(
    id="semantics/addptr-int32-offsets-widened-one-by-one", kernel=addptr_wide_sum_kernel, constexprs={"N": 64},
    inputs={"x_ptr": Rand("fp32", (64,))}, outputs={"z_ptr": Out("fp32", (64,))},
    reference=lambda x_ptr: x_ptr, rtol=0.0, atol=0.0,
    doc="p + a + b with int32 a, b is p + sext(a) + sext(b), not p + sext(a + b) (Triton's combine "
        "merges the two offsets only when they are 64-bit or constants whose sum fits)"))


# --- unsigned pointer offsets are zero-extended ---------------------------------------------------

@triton.jit
def addptr_unsigned_kernel(x_ptr, z_ptr, base, N: tl.constexpr, UT: tl.constexpr):
    # offsets base + i held in an unsigned type whose top bit is set: the address moves forward by
    # their unsigned value (a signed reading would step backwards)
    offs = (base + tl.arange(0, N)).to(UT)
    v = tl.load(x_ptr + offs)
    tl.store(z_ptr + tl.arange(0, N), v)


for _ut, _base in (("uint8", 192), ("uint16", 40000)):
    CASES.append(Case(
        id=f"semantics/addptr-{_ut}-offsets-zero-extended", kernel=addptr_unsigned_kernel,
        constexprs={"N": 64, "UT": getattr(tl, _ut)},
        inputs={"x_ptr": Rand("fp32", (_base + 64,)), "base": _base}, outputs={"z_ptr": Out("fp32", (64,))},
        reference=lambda x_ptr, base: x_ptr[base:base + 64], rtol=0.0, atol=0.0,
        doc="an unsigned offset narrower than 64 bits is zero-extended to i64 before tt.addptr"))
