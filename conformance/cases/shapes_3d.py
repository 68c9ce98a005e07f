"""Shape ops on 3-D and wider tensors, the cases whose layouts decide whether a kernel goes through
shared memory at all: ``x[None, :, :]`` / ``x[:, :, None]`` / ``x[:, None, :, :]`` broadcast into a
3-D or 4-D store (Triton's ``test_index1d``, one warp and four), ``tl.reshape`` between ranks
(Triton's ``test_reshape`` shapes), a reshape of a flat range into 5-D followed by chained
reductions (``test_chained_reductions``), and a 4-D permute."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Out, Rand

S = 32


@triton.jit
def none_first_kernel(z_ptr, x_ptr, S: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, S)[:, None] * S + tl.arange(0, S)[None, :])
    z = x[None, :, :]
    tl.store(z_ptr + tl.arange(0, S)[:, None, None] * S * S + tl.arange(0, S)[None, :, None] * S
             + tl.arange(0, S)[None, None, :], z)


@triton.jit
def none_last_kernel(z_ptr, x_ptr, S: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, S)[:, None] * S + tl.arange(0, S)[None, :])
    z = x[:, :, None]
    tl.store(z_ptr + tl.arange(0, S)[:, None, None] * S * S + tl.arange(0, S)[None, :, None] * S
             + tl.arange(0, S)[None, None, :], z)


@triton.jit
def none_mid_4d_kernel(z_ptr, x_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, N: tl.constexpr):
    # a 3-D tile gets a new axis 1, broadcast to N in the 4-D store
    x = tl.load(x_ptr + tl.arange(0, A)[:, None, None] * B * C + tl.arange(0, B)[None, :, None] * C
                + tl.arange(0, C)[None, None, :])
    z = x[:, None, :, :]
    tl.store(z_ptr + tl.arange(0, A)[:, None, None, None] * N * B * C + tl.arange(0, N)[None, :, None, None] * B * C
             + tl.arange(0, B)[None, None, :, None] * C + tl.arange(0, C)[None, None, None, :], z + 1)


@triton.jit
def reshape_1d_2d_kernel(z_ptr, x_ptr, N: tl.constexpr, R: tl.constexpr, C: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    z = tl.reshape(x, (R, C))
    tl.store(z_ptr + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :], z)


@triton.jit
def reshape_2d_2d_kernel(z_ptr, x_ptr, R0: tl.constexpr, C0: tl.constexpr, R1: tl.constexpr, C1: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, R0)[:, None] * C0 + tl.arange(0, C0)[None, :])
    z = tl.reshape(x, (R1, C1))
    tl.store(z_ptr + tl.arange(0, R1)[:, None] * C1 + tl.arange(0, C1)[None, :], z)


@triton.jit
def reshape_2d_3d_kernel(z_ptr, x_ptr, R0: tl.constexpr, C0: tl.constexpr, A: tl.constexpr, B: tl.constexpr,
                         C: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, R0)[:, None] * C0 + tl.arange(0, C0)[None, :])
    z = tl.reshape(x, (A, B, C))
    tl.store(z_ptr + tl.arange(0, A)[:, None, None] * B * C + tl.arange(0, B)[None, :, None] * C
             + tl.arange(0, C)[None, None, :], z * 3)


@triton.jit
def reshape_1d_9d_kernel(z_ptr, x_ptr):
    # test_reshape's (512,) -> (2,) * 9, stored back through a flat range
    x = tl.load(x_ptr + tl.arange(0, 512))
    z = tl.reshape(x, (2, 2, 2, 2, 2, 2, 2, 2, 2))
    tl.store(z_ptr + tl.arange(0, 512), tl.reshape(z + 1, (512,)))


@triton.jit
def chained_reductions_kernel(out_ptr, in_ptr, D0: tl.constexpr, D1: tl.constexpr, D2: tl.constexpr,
                              D3: tl.constexpr, D4: tl.constexpr):
    # test_chained_reductions' first shape: a flat range reshaped to 5-D, permuted, three sums
    idx = tl.arange(0, D0 * D1 * D2 * D3 * D4)
    idx = idx.reshape(D0, D1, D2, D3, D4)
    vals = tl.load(in_ptr + idx)
    vals = tl.permute(vals, [2, 1, 0, 3, 4])
    r = tl.sum(tl.sum(tl.sum(vals, 3), 1), 0)
    st_idx = tl.arange(0, r.shape[0] * r.shape[1]).reshape(r.shape)
    tl.store(out_ptr + st_idx, r)


@triton.jit
def permute_4d_kernel(z_ptr, x_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, D: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, A)[:, None, None, None] * B * C * D + tl.arange(0, B)[None, :, None, None] * C * D
                + tl.arange(0, C)[None, None, :, None] * D + tl.arange(0, D)[None, None, None, :])
    p = tl.permute(x, (3, 1, 0, 2))  # (D, B, A, C)
    tl.store(z_ptr + tl.arange(0, D)[:, None, None, None] * B * A * C + tl.arange(0, B)[None, :, None, None] * A * C
             + tl.arange(0, A)[None, None, :, None] * C + tl.arange(0, C)[None, None, None, :], p)


def _ints(t):
    return Rand(t, (S * S,))


CASES = []
for _t in ("int32", "uint16"):
    for _w in (1, 4):
        CASES += [
            Case(id=f"shapes/none-first-3d-{_t}-w{_w}", kernel=none_first_kernel, constexprs={"S": S},
                 inputs={"x_ptr": _ints(_t)}, outputs={"z_ptr": Out(_t, (S, S, S), poison="sentinel")},
                 reference=lambda x_ptr: np.broadcast_to(x_ptr.reshape(1, S, S), (S, S, S)),
                 options={"num_warps": _w}),
            Case(id=f"shapes/none-last-3d-{_t}-w{_w}", kernel=none_last_kernel, constexprs={"S": S},
                 inputs={"x_ptr": _ints(_t)}, outputs={"z_ptr": Out(_t, (S, S, S), poison="sentinel")},
                 reference=lambda x_ptr: np.broadcast_to(x_ptr.reshape(S, S, 1), (S, S, S)),
                 options={"num_warps": _w}),
        ]
CASES += [
    Case(id="shapes/none-mid-4d-fp32", kernel=none_mid_4d_kernel, constexprs={"A": 8, "B": 16, "C": 16, "N": 4},
         inputs={"x_ptr": Rand("fp32", (8 * 16 * 16,))}, outputs={"z_ptr": Out("fp32", (8, 4, 16, 16))},
         reference=lambda x_ptr: np.broadcast_to(x_ptr.reshape(8, 1, 16, 16), (8, 4, 16, 16)) + 1),
    *[Case(id=f"shapes/reshape-{n}-{r}x{c}", kernel=reshape_1d_2d_kernel, constexprs={"N": n, "R": r, "C": c},
           inputs={"x_ptr": Rand("int32", (n,))}, outputs={"z_ptr": Out("int32", (r, c), poison="sentinel")},
           reference=lambda x_ptr, r=r, c=c: x_ptr.reshape(r, c))
      for n, r, c in ((64, 8, 8), (4096, 64, 64), (256, 2, 128))],
    Case(id="shapes/reshape-2x32-16x4", kernel=reshape_2d_2d_kernel, constexprs={"R0": 2, "C0": 32, "R1": 16, "C1": 4},
         inputs={"x_ptr": Rand("int32", (64,))}, outputs={"z_ptr": Out("int32", (16, 4), poison="sentinel")},
         reference=lambda x_ptr: x_ptr.reshape(16, 4)),
    *[Case(id=f"shapes/reshape-{r0}x{c0}-{a}x{b}x{c}-{t}", kernel=reshape_2d_3d_kernel,
           constexprs={"R0": r0, "C0": c0, "A": a, "B": b, "C": c},
           inputs={"x_ptr": Rand(t, (r0 * c0,), -100, 100)}, outputs={"z_ptr": Out(t, (a, b, c))},
           reference=lambda x_ptr, a=a, b=b, c=c: x_ptr.reshape(a, b, c) * 3)
      for r0, c0, a, b, c, t in ((64, 32, 16, 8, 16, "int32"), (64, 64, 16, 16, 16, "fp32"), (32, 64, 4, 8, 64, "fp16"))],
    Case(id="shapes/reshape-512-9d", kernel=reshape_1d_9d_kernel, inputs={"x_ptr": Rand("int32", (512,), -1000, 1000)},
         outputs={"z_ptr": Out("int32", (512,), poison="sentinel")}, reference=lambda x_ptr: x_ptr + 1),
    Case(id="shapes/reshape-5d-chained-reductions", kernel=chained_reductions_kernel,
         constexprs={"D0": 4, "D1": 32, "D2": 32, "D3": 4, "D4": 2},
         inputs={"in_ptr": Rand("int32", (4 * 32 * 32 * 4 * 2,), 0, 1000)},
         outputs={"out_ptr": Out("int32", (4, 2), poison="sentinel")},
         reference=lambda in_ptr: in_ptr.reshape(4, 32, 32, 4, 2).transpose(2, 1, 0, 3, 4)
         .sum(3).sum(1).sum(0).astype(np.int32)),
    Case(id="shapes/permute-4d-int8", kernel=permute_4d_kernel, constexprs={"A": 2, "B": 4, "C": 8, "D": 16},
         inputs={"x_ptr": Rand("int8", (2 * 4 * 8 * 16,))}, outputs={"z_ptr": Out("int8", (16, 4, 2, 8), poison="sentinel")},
         reference=lambda x_ptr: x_ptr.reshape(2, 4, 8, 16).transpose(3, 1, 0, 2), options={"num_warps": 8}),
]


@triton.jit
def trans_batched_kernel(z_ptr, x_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, D: tl.constexpr,
                         RANK: tl.constexpr):
    # trans() without dims swaps the last two axes (a transpose of every matrix of the batch)
    if RANK == 3:
        x = tl.load(x_ptr + tl.arange(0, A)[:, None, None] * B * C + tl.arange(0, B)[None, :, None] * C
                    + tl.arange(0, C)[None, None, :])
        z = x.trans()
        tl.store(z_ptr + tl.arange(0, A)[:, None, None] * C * B + tl.arange(0, C)[None, :, None] * B
                 + tl.arange(0, B)[None, None, :], z)
    else:
        x = tl.load(x_ptr + tl.arange(0, A)[:, None, None, None] * B * C * D
                    + tl.arange(0, B)[None, :, None, None] * C * D + tl.arange(0, C)[None, None, :, None] * D
                    + tl.arange(0, D)[None, None, None, :])
        z = tl.trans(x)
        tl.store(z_ptr + tl.arange(0, A)[:, None, None, None] * B * D * C
                 + tl.arange(0, B)[None, :, None, None] * D * C + tl.arange(0, D)[None, None, :, None] * C
                 + tl.arange(0, C)[None, None, None, :], z)


CASES += [
    Case(id="shapes/trans-no-dims-3d-fp32", kernel=trans_batched_kernel,
         constexprs={"A": 2, "B": 8, "C": 16, "D": 1, "RANK": 3},
         inputs={"x_ptr": Rand("fp32", (2 * 8 * 16,))}, outputs={"z_ptr": Out("fp32", (2, 16, 8))},
         reference=lambda x_ptr: x_ptr.reshape(2, 8, 16).transpose(0, 2, 1)),
    Case(id="shapes/trans-no-dims-4d-int16", kernel=trans_batched_kernel,
         constexprs={"A": 2, "B": 4, "C": 8, "D": 16, "RANK": 4},
         inputs={"x_ptr": Rand("int16", (2 * 4 * 8 * 16,))}, outputs={"z_ptr": Out("int16", (2, 4, 16, 8), poison="sentinel")},
         reference=lambda x_ptr: x_ptr.reshape(2, 4, 8, 16).transpose(0, 1, 3, 2)),
]
