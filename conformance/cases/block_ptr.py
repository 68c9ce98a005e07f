"""Block pointers: make_block_ptr, advance, boundary_check, padding_option."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Out, Rand, tol

R, C = 40, 24  # a matrix whose sides are not multiples of the 16x16 tile


@triton.jit
def block_copy_kernel(x_ptr, z_ptr, R, C, PAD: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):
    # each program reads a tile (padded outside the matrix) and writes it to a padded output
    pr = tl.program_id(0)
    pc = tl.program_id(1)
    src = tl.make_block_ptr(base=x_ptr, shape=(R, C), strides=(C, 1), offsets=(pr * BR, pc * BC),
                            block_shape=(BR, BC), order=(1, 0))
    if PAD == "zero":
        t = tl.load(src, boundary_check=(0, 1), padding_option="zero")
    else:
        t = tl.load(src, boundary_check=(0, 1), padding_option="nan")
    rr = pr * BR + tl.arange(0, BR)
    rc = pc * BC + tl.arange(0, BC)
    tl.store(z_ptr + rr[:, None] * (tl.num_programs(1) * BC) + rc[None, :], t)


@triton.jit
def block_store_kernel(x_ptr, z_ptr, R, C, BR: tl.constexpr, BC: tl.constexpr):
    # store through a block pointer: elements outside (R, C) must not be written
    pr = tl.program_id(0)
    pc = tl.program_id(1)
    rr = pr * BR + tl.arange(0, BR)
    rc = pc * BC + tl.arange(0, BC)
    t = tl.load(x_ptr + rr[:, None] * (tl.num_programs(1) * BC) + rc[None, :])
    dst = tl.make_block_ptr(base=z_ptr, shape=(R, C), strides=(C, 1), offsets=(pr * BR, pc * BC),
                            block_shape=(BR, BC), order=(1, 0))
    tl.store(dst, t * 2, boundary_check=(0, 1))


@triton.jit
def block_advance_kernel(x_ptr, z_ptr, R, C, BR: tl.constexpr, BC: tl.constexpr):
    # row sums by walking a block pointer along the columns
    pr = tl.program_id(0)
    p = tl.make_block_ptr(base=x_ptr, shape=(R, C), strides=(C, 1), offsets=(pr * BR, 0),
                          block_shape=(BR, BC), order=(1, 0))
    acc = tl.zeros((BR,), dtype=tl.float32)
    for _ in range(0, C, BC):
        acc += tl.sum(tl.load(p, boundary_check=(0, 1), padding_option="zero"), axis=1)
        p = tl.advance(p, (0, BC))
    rr = pr * BR + tl.arange(0, BR)
    tl.store(z_ptr + rr, acc, mask=rr < R)


@triton.jit
def block_transposed_kernel(x_ptr, z_ptr, R, C, B: tl.constexpr):
    # a column-major view (order=(0, 1)) of a row-major matrix: reading it yields the transpose
    p = tl.make_block_ptr(base=x_ptr, shape=(C, R), strides=(1, C), offsets=(0, 0),
                          block_shape=(B, B), order=(0, 1))
    t = tl.load(p, boundary_check=(0, 1), padding_option="zero")
    r = tl.arange(0, B)
    tl.store(z_ptr + r[:, None] * B + r[None, :], t)


def _padded(x, fill, rows, cols):
    out = np.full((rows, cols), fill)
    out[:R, :C] = x.reshape(R, C)
    return out


CASES = []
for _t in ("fp32", "fp16"):
    for _pad, _fill in (("zero", 0.0), ("nan", np.nan)):
        CASES.append(Case(
            id=f"block_ptr/load-pad-{_pad}-{_t}", kernel=block_copy_kernel, grid=(3, 2),
            constexprs={"PAD": _pad, "BR": 16, "BC": 16}, inputs={"x_ptr": Rand(_t, (R * C,)), "R": R, "C": C},
            outputs={"z_ptr": Out(_t, (48, 32), poison="sentinel")},
            reference=lambda x_ptr, f=_fill: _padded(x_ptr, f, 48, 32)))
    CASES.append(Case(
        id=f"block_ptr/store-boundary-{_t}", kernel=block_store_kernel, grid=(3, 2), constexprs={"BR": 16, "BC": 16},
        inputs={"x_ptr": Rand(_t, (48 * 32,)), "R": R, "C": C},
        outputs={"z_ptr": Out(_t, (R * C + 64,), init=Rand(_t, (R * C + 64,)))},
        reference=lambda x_ptr, z_ptr: np.concatenate([(x_ptr.reshape(48, 32)[:R, :C] * 2).ravel(), z_ptr[R * C:]])))
    CASES.append(Case(
        id=f"block_ptr/advance-{_t}", kernel=block_advance_kernel, grid=(3,), constexprs={"BR": 16, "BC": 16},
        inputs={"x_ptr": Rand(_t, (R * C,)), "R": R, "C": C}, outputs={"z_ptr": Out("fp32", (R,))},
        reference=lambda x_ptr: x_ptr.reshape(R, C).sum(1), **tol(dtypes.ACCUM_TOLERANCE, _t)))
CASES.append(Case(
    id="block_ptr/column-major-order", kernel=block_transposed_kernel, constexprs={"B": 32},
    inputs={"x_ptr": Rand("fp32", (R * C,)), "R": R, "C": C}, outputs={"z_ptr": Out("fp32", (32, 32))},
    reference=lambda x_ptr: _padded(x_ptr, 0.0, 48, 48).T[:32, :32]))


@triton.jit
def block_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, PRECISION: tl.constexpr,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # a matmul through block pointers on ragged shapes, boundary checks without padding_option:
    # the lanes outside the matrices must read zero, or they pollute the dot (issue #9)
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    a = tl.make_block_ptr(base=a_ptr, shape=(M, K), strides=(K, 1), offsets=(pm * BM, 0),
                          block_shape=(BM, BK), order=(1, 0))
    b = tl.make_block_ptr(base=b_ptr, shape=(K, N), strides=(N, 1), offsets=(0, pn * BN),
                          block_shape=(BK, BN), order=(1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        acc += tl.dot(tl.load(a, boundary_check=(0, 1)), tl.load(b, boundary_check=(0, 1)),
                      input_precision=PRECISION)
        a = tl.advance(a, (0, BK))
        b = tl.advance(b, (BK, 0))
    c = tl.make_block_ptr(base=c_ptr, shape=(M, N), strides=(N, 1), offsets=(pm * BM, pn * BN),
                          block_shape=(BM, BN), order=(1, 0))
    tl.store(c, acc, boundary_check=(0, 1))


_M, _N, _K = 200, 130, 300
for _t, _prec in (("fp32", "ieee"), ("fp32", "tf32"), ("fp16", "ieee"), ("bf16", "ieee")):
    CASES.append(Case(
        id=f"block_ptr/ragged-matmul-{_t}" + ("-tf32" if _prec == "tf32" else ""), kernel=block_matmul_kernel,
        grid=(triton.cdiv(_M, 64), triton.cdiv(_N, 64)),
        constexprs={"PRECISION": _prec, "BM": 64, "BN": 64, "BK": 32},
        inputs={"a_ptr": Rand(_t, (_M * _K,), -1, 1), "b_ptr": Rand(_t, (_K * _N,), -1, 1), "M": _M, "N": _N, "K": _K},
        outputs={"c_ptr": Out("fp32", (_M, _N), poison="sentinel")},
        reference=lambda a_ptr, b_ptr: a_ptr.reshape(_M, _K) @ b_ptr.reshape(_K, _N),
        **(dict(zip(("rtol", "atol"), dtypes.TF32_TOLERANCE)) if _prec == "tf32" else tol(dtypes.ACCUM_TOLERANCE, "fp32")),
        doc="masked-off lanes of block-pointer loads without padding_option read zero"))
