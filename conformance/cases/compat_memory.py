"""Memory idioms of Triton's tests: block pointers with ``boundary_check`` and both paddings,
``tl.advance`` in a loop, ``tl.multiple_of``/``tl.max_contiguous`` hints, ``tl.dot`` on 3-D
(batched) operands, bf16 buffers through ``triton.reinterpret``, ``other=`` on masked loads."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Out, Rand, tol


@triton.jit
def block_ptr_pad_kernel(x_ptr, out_ptr, M, N, stride_m, PAD: tl.constexpr, CHECK: tl.constexpr,
                         BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    src = tl.make_block_ptr(base=x_ptr, shape=(M, N), strides=(stride_m, 1), offsets=(pm * BM, pn * BN),
                            block_shape=(BM, BN), order=(1, 0))
    if CHECK == "both":
        v = tl.load(src, boundary_check=(0, 1), padding_option=PAD)
    elif CHECK == "rows":
        v = tl.load(src, boundary_check=(0,), padding_option=PAD)
    else:
        v = tl.load(src, boundary_check=(1,), padding_option=PAD)
    # write the whole padded tile to a dense (grid-sized) output
    dst = tl.make_block_ptr(out_ptr, (tl.num_programs(0) * BM, tl.num_programs(1) * BN),
                            (tl.num_programs(1) * BN, 1), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tl.store(dst, v)


def _pad_ref(x, pad, check, bm, bn, gm, gn):
    m, n = x.shape
    fill = np.nan if pad == "nan" else 0.0
    out = np.full((gm * bm, gn * bn), fill)
    out[:m, :n] = x
    return out


@triton.jit
def block_ptr_store_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    src = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (pm * BM, 0), (BM, BN), (1, 0))
    dst = tl.make_block_ptr(out_ptr, (M, N), (N, 1), (pm * BM, 0), (BM, BN), (1, 0))
    for _ in range(0, tl.cdiv(N, BN)):
        v = tl.load(src, boundary_check=(0, 1), padding_option="zero")
        tl.store(dst, v * 2, boundary_check=(0, 1))
        src = tl.advance(src, (0, BN))
        dst = tl.advance(dst, [0, BN])


@triton.jit
def block_ptr_transposed_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # a column-major view (order=(0, 1)) of a row-major matrix's transpose
    src = tl.make_block_ptr(x_ptr, (N, M), (1, N), (0, 0), (BN, BM), (0, 1))
    v = tl.load(src, boundary_check=(0, 1))
    offs = tl.arange(0, BN)[:, None] * BM + tl.arange(0, BM)[None, :]
    tl.store(out_ptr + offs, v)


@triton.jit
def hints_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    n16 = tl.multiple_of(n, 16)
    mask = offs < n16
    x = tl.load(x_ptr + offs, mask=mask, other=-7.0, cache_modifier=".cg", eviction_policy="evict_last")
    tl.store(out_ptr + offs, x + 1, mask=offs < n + BLOCK, cache_modifier=".wb")


@triton.jit
def batched_dot_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                       ACC: tl.constexpr):
    ob = tl.arange(0, B)[:, None, None]
    om = tl.arange(0, M)[None, :, None]
    on = tl.arange(0, N)[None, None, :]
    ok = tl.arange(0, K)
    a = tl.load(a_ptr + ob * M * K + om * K + ok[None, None, :])
    b = tl.load(b_ptr + ob * K * N + ok[None, :, None] * N + on)
    if ACC:
        acc = tl.full((B, M, N), 1.0, tl.float32)
        c = tl.dot(a, b, acc)
    else:
        c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + ob * M * N + om * N + on, c)


@triton.jit
def bf16_roundtrip_kernel(x_ptr, out_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)                       # bf16 through triton.reinterpret
    tl.store(out_ptr + offs, x.to(tl.float32) * 2)
    tl.store(y_ptr + offs, (x.to(tl.float32) + 1.0).to(tl.bfloat16))


CASES = []
for pad in ("zero", "nan"):
    for check in ("both", "rows", "cols"):
        m, n = (20, 24) if check == "both" else ((20, 32) if check == "rows" else (32, 24))
        gm, gn = 2, 2
        CASES.append(Case(
            id=f"compat/block-ptr-pad-{pad}-{check}", kernel=block_ptr_pad_kernel, grid=(gm, gn),
            constexprs={"PAD": pad, "CHECK": check, "BM": 16, "BN": 16},
            inputs={"x_ptr": Rand("fp32", (m, n)), "M": m, "N": n, "stride_m": n},
            outputs={"out_ptr": Out("fp32", (gm * 16, gn * 16))},
            reference=(lambda pad, check: lambda x_ptr, M, N, stride_m: _pad_ref(
                x_ptr, pad, check, 16, 16, 2, 2))(pad, check)))
for m, n in ((40, 50), (32, 64)):
    CASES.append(Case(id=f"compat/block-ptr-advance-store-{m}x{n}", kernel=block_ptr_store_kernel,
                      grid=(triton.cdiv(m, 16),), constexprs={"BM": 16, "BN": 16},
                      inputs={"x_ptr": Rand("fp16", (m, n)), "M": m, "N": n}, outputs={"out_ptr": Out("fp16", (m, n))},
                      reference=lambda x_ptr, M, N: x_ptr * 2))
CASES.append(Case(id="compat/block-ptr-column-major", kernel=block_ptr_transposed_kernel,
                  constexprs={"BM": 16, "BN": 32}, inputs={"x_ptr": Rand("fp32", (16, 32)), "M": 16, "N": 32},
                  outputs={"out_ptr": Out("fp32", (32, 16))}, reference=lambda x_ptr, M, N: x_ptr.T))
for n in (256, 512):
    CASES.append(Case(id=f"compat/hints-multiple-of-n{n}", kernel=hints_kernel, grid=(4,), constexprs={"BLOCK": 128},
                      inputs={"x_ptr": Rand("fp32", (512,)), "n": n},
                      outputs={"out_ptr": Out("fp32", (512,), init=Rand("fp32", (512,)))},
                      reference=lambda x_ptr, n, out_ptr: np.where(
                          np.arange(512) < n + 128, np.where(np.arange(512) < n, x_ptr, -7.0) + 1, out_ptr)))
for t in ("fp16", "fp32"):
    for acc in (False, True):
        CASES.append(Case(
            id=f"compat/dot-3d-batched-{t}{'-acc' if acc else ''}", kernel=batched_dot_kernel,
            constexprs={"B": 4, "M": 16, "N": 32, "K": 16, "ACC": acc},
            inputs={"a_ptr": Rand(t, (4, 16, 16), -1, 1), "b_ptr": Rand(t, (4, 16, 32), -1, 1)},
            outputs={"c_ptr": Out("fp32", (4, 16, 32))},
            reference=(lambda acc: lambda a_ptr, b_ptr: np.matmul(a_ptr, b_ptr) + (1.0 if acc else 0.0))(acc),
            # fp32 operands default to tf32, as in Triton; the acc variant uses that default
            **({"rtol": dtypes.TF32_TOLERANCE[0], "atol": dtypes.TF32_TOLERANCE[1]} if t == "fp32" and acc
               else tol(dtypes.ACCUM_TOLERANCE, "fp32"))))
CASES.append(Case(id="compat/reinterpret-bf16", kernel=bf16_roundtrip_kernel, constexprs={"BLOCK": 128},
                  inputs={"x_ptr": Rand("bf16", (128,))},
                  outputs={"out_ptr": Out("fp32", (128,)), "y_ptr": Out("bf16", (128,))},
                  reference=lambda x_ptr: (x_ptr * 2, dtypes.round_to(x_ptr + 1.0, "bf16"))))
