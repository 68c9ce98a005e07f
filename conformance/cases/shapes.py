"""Broadcasting and shape ops: ``[:, None]``, expand_dims, broadcast_to, reshape, trans, permute,
ravel, join, split, interleave, cat, and 2-D strided addressing."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Out, Rand
from ..dtypes import round_to

M, K = 16, 32


@triton.jit
def outer_kernel(x_ptr, y_ptr, z_ptr, M: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rk = tl.arange(0, K)
    z = tl.load(x_ptr + rm)[:, None] * 10 + tl.load(y_ptr + rk)[None, :]
    tl.store(z_ptr + rm[:, None] * K + rk[None, :], z)


@triton.jit
def expand_broadcast_kernel(x_ptr, z_ptr, M: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rk = tl.arange(0, K)
    col = tl.broadcast_to(tl.expand_dims(tl.load(x_ptr + rm), 1), (M, K))
    row = tl.expand_dims(rk, 0)
    tl.store(z_ptr + tl.expand_dims(rm, 1) * K + row, col + row.to(col.dtype))


@triton.jit
def reshape_trans_kernel(x_ptr, z_ptr, M: tl.constexpr, K: tl.constexpr):
    # row-major reshape (M*K,) -> (M, K), then transpose, stored as a (K, M) matrix
    r = tl.arange(0, M * K)
    x = tl.reshape(tl.load(x_ptr + r), (M, K))
    t = tl.trans(x)
    rk = tl.arange(0, K)
    rm = tl.arange(0, M)
    tl.store(z_ptr + rk[:, None] * M + rm[None, :], t)


@triton.jit
def permute_kernel(x_ptr, z_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    ra = tl.arange(0, A)[:, None, None]
    rb = tl.arange(0, B)[None, :, None]
    rc = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + ra * B * C + rb * C + rc)
    p = tl.permute(x, (2, 0, 1))  # shape (C, A, B)
    pc = tl.arange(0, C)[:, None, None]
    pa = tl.arange(0, A)[None, :, None]
    pb = tl.arange(0, B)[None, None, :]
    tl.store(z_ptr + pc * A * B + pa * B + pb, p)


@triton.jit
def ravel_kernel(x_ptr, z_ptr, M: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rk = tl.arange(0, K)
    x = tl.load(x_ptr + rk[:, None] + rm[None, :] * K)  # the (K, M) transpose of a row-major (M, K)
    tl.store(z_ptr + tl.arange(0, M * K), tl.ravel(x) * 2)


@triton.jit
def join_kernel(x_ptr, y_ptr, z_ptr, K: tl.constexpr):
    r = tl.arange(0, K)
    j = tl.join(tl.load(x_ptr + r), tl.load(y_ptr + r))  # shape (K, 2)
    tl.store(z_ptr + r[:, None] * 2 + tl.arange(0, 2)[None, :], j)


@triton.jit
def split_kernel(x_ptr, a_ptr, b_ptr, K: tl.constexpr):
    r = tl.arange(0, K)
    x = tl.load(x_ptr + r[:, None] * 2 + tl.arange(0, 2)[None, :])
    a, b = tl.split(x)
    tl.store(a_ptr + r, a)
    tl.store(b_ptr + r, b - a)


@triton.jit
def interleave_kernel(x_ptr, y_ptr, z_ptr, K: tl.constexpr):
    r = tl.arange(0, K)
    z = tl.interleave(tl.load(x_ptr + r), tl.load(y_ptr + r))
    tl.store(z_ptr + tl.arange(0, 2 * K), z)


@triton.jit
def cat_kernel(x_ptr, y_ptr, z_ptr, K: tl.constexpr):
    r = tl.arange(0, K)
    z = tl.cat(tl.load(x_ptr + r), tl.load(y_ptr + r), can_reorder=True)
    tl.store(z_ptr + tl.arange(0, 2 * K), z)


@triton.jit
def strided_kernel(x_ptr, z_ptr, stride_m, stride_k, M: tl.constexpr, K: tl.constexpr):
    # a runtime-strided 2-D view: here the input's transpose
    rm = tl.arange(0, M)
    rk = tl.arange(0, K)
    x = tl.load(x_ptr + rm[:, None] * stride_m + rk[None, :] * stride_k)
    tl.store(z_ptr + rm[:, None] * K + rk[None, :], x + 1)


@triton.jit
def full_kernel(x_ptr, z_ptr, M: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rk = tl.arange(0, K)
    x = tl.load(x_ptr + rm)
    z = tl.full((M, K), 3, tl.int32) + tl.zeros_like(x)[:, None].to(tl.int32) + x[:, None]
    tl.store(z_ptr + rm[:, None] * K + rk[None, :], z)


def _same_multiset(expected_fn):
    def check(out, inp):
        got, want = np.sort(out["z_ptr"].ravel()), np.sort(expected_fn(inp).ravel())
        if not np.array_equal(got, want):
            return f"cat: the output is not a reordering of the inputs (first values {got[:4]} vs {want[:4]})"
    return check


CASES = []
for _t in ("fp32", "int16", "fp16"):
    _c = {"M": M, "K": K}
    CASES += [
        Case(id=f"shapes/outer-none-index-{_t}", kernel=outer_kernel, constexprs=_c,
             inputs={"x_ptr": Rand(_t, (M,), -50, 50), "y_ptr": Rand(_t, (K,), -50, 50)},
             outputs={"z_ptr": Out(_t, (M, K))},
             # x * 10 + y: a backend may fuse it into one fma (no rounding of the product, as with
             # Triton's default fp fusion) or round the product first; the difference is at most
             # half an ulp of |x * 10| <= 500, which the absolute tolerance allows
             reference=lambda x_ptr, y_ptr, t=_t: round_to(x_ptr * 10, t)[:, None] + y_ptr[None, :],
             **({"atol": 500 * 2.0 ** -11, "rtol": 2e-3} if _t == "fp16" else
                {"atol": 500 * 2.0 ** -24, "rtol": 1e-6} if _t == "fp32" else {})),
        Case(id=f"shapes/expand-broadcast-{_t}", kernel=expand_broadcast_kernel, constexprs=_c,
             inputs={"x_ptr": Rand(_t, (M,), -50, 50)}, outputs={"z_ptr": Out(_t, (M, K))},
             reference=lambda x_ptr: x_ptr[:, None] + np.arange(K)[None, :].astype(x_ptr.dtype)),
        Case(id=f"shapes/reshape-trans-{_t}", kernel=reshape_trans_kernel, constexprs=_c,
             inputs={"x_ptr": Rand(_t, (M * K,))}, outputs={"z_ptr": Out(_t, (K, M))},
             reference=lambda x_ptr: x_ptr.reshape(M, K).T),
        Case(id=f"shapes/permute-{_t}", kernel=permute_kernel, constexprs={"A": 2, "B": 4, "C": 8},
             inputs={"x_ptr": Rand(_t, (64,))}, outputs={"z_ptr": Out(_t, (8, 2, 4))},
             reference=lambda x_ptr: x_ptr.reshape(2, 4, 8).transpose(2, 0, 1)),
        Case(id=f"shapes/ravel-{_t}", kernel=ravel_kernel, constexprs=_c,
             inputs={"x_ptr": Rand(_t, (M * K,), -50, 50)}, outputs={"z_ptr": Out(_t, (M * K,))},
             reference=lambda x_ptr: (x_ptr.reshape(M, K).T * 2).ravel()),
        Case(id=f"shapes/join-{_t}", kernel=join_kernel, constexprs={"K": K},
             inputs={"x_ptr": Rand(_t, (K,)), "y_ptr": Rand(_t, (K,))}, outputs={"z_ptr": Out(_t, (K, 2))},
             reference=lambda x_ptr, y_ptr: np.stack([x_ptr, y_ptr], axis=-1)),
        Case(id=f"shapes/split-{_t}", kernel=split_kernel, constexprs={"K": K},
             inputs={"x_ptr": Rand(_t, (K * 2,), -50, 50)}, outputs={"a_ptr": Out(_t, (K,)), "b_ptr": Out(_t, (K,))},
             reference=lambda x_ptr: (x_ptr[0::2], x_ptr[1::2] - x_ptr[0::2])),
        Case(id=f"shapes/interleave-{_t}", kernel=interleave_kernel, constexprs={"K": K},
             inputs={"x_ptr": Rand(_t, (K,)), "y_ptr": Rand(_t, (K,))}, outputs={"z_ptr": Out(_t, (2 * K,))},
             reference=lambda x_ptr, y_ptr: np.stack([x_ptr, y_ptr], axis=-1).ravel()),
        Case(id=f"shapes/cat-{_t}", kernel=cat_kernel, constexprs={"K": K},
             inputs={"x_ptr": Rand(_t, (K,)), "y_ptr": Rand(_t, (K,))}, outputs={"z_ptr": Out(_t, (2 * K,))},
             # cat(can_reorder=True) may order the elements as it likes: compare as multisets
             check=_same_multiset(lambda inp: np.concatenate([inp["x_ptr"], inp["y_ptr"]]))),
        Case(id=f"shapes/strided-load-{_t}", kernel=strided_kernel, constexprs=_c,
             inputs={"x_ptr": Rand(_t, (K * M,), -50, 50), "stride_m": 1, "stride_k": M},
             outputs={"z_ptr": Out(_t, (M, K))}, reference=lambda x_ptr: x_ptr.reshape(K, M).T + 1),
    ]
CASES.append(Case(id="shapes/full-zeros-like", kernel=full_kernel, constexprs={"M": M, "K": K},
                  inputs={"x_ptr": Rand("int32", (M,), -1000, 1000)}, outputs={"z_ptr": Out("int32", (M, K))},
                  reference=lambda x_ptr: np.broadcast_to(x_ptr[:, None] + np.int32(3), (M, K))))
