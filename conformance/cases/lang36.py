"""Language rules new in Triton 3.6: `if` on a one-element tensor (taken as its element), a
scalar parameter's dtype annotation fixing the type the argument is passed as, and
`tl.map_elementwise` (a scalar @jit function with its own control flow applied per element), and
`tl.dot` of tensors with several batch dimensions."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Out, Rand


@triton.jit
def unsplat_if_kernel(x_ptr, z_ptr, threshold, B: tl.constexpr):
    pid = tl.program_id(0)
    first = tl.load(x_ptr + pid * B + tl.arange(0, 1))  # shape [1]
    r = pid * B + tl.arange(0, B)
    x = tl.load(x_ptr + r)
    if first > threshold:  # a one-element tensor as the condition
        y = x * 2
    else:
        y = -x
    tl.store(z_ptr + r, y)


def _unsplat_ref(x_ptr, threshold):
    rows = x_ptr.reshape(8, -1)
    return np.where(rows[:, :1] > threshold, rows * 2, -rows).reshape(-1)


@triton.jit
def annotated_scalars_kernel(z_ptr, h: tl.float16, b: tl.bfloat16, u: tl.uint8, B: tl.constexpr):
    tl.static_assert(h.dtype == tl.float16)
    tl.static_assert(b.dtype == tl.bfloat16)
    tl.static_assert(u.dtype == tl.uint8)
    r = tl.arange(0, B)
    tl.store(z_ptr + r, tl.where(r == 0, h.to(tl.float32), tl.where(r == 1, b.to(tl.float32), u.to(tl.float32))))


def _bf16(v: float) -> np.float32:
    bits = int(np.array([v], np.float32).view(np.uint32)[0])
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return np.array([bits], np.uint32).view(np.float32)[0]


def _annotated_ref(h, b, u):
    out = np.full(16, np.float32(u % 256), np.float32)
    out[0], out[1] = np.float32(np.float16(h)), _bf16(b)
    return out


@triton.jit
def _sign_of_difference(x, y):
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@triton.jit
def map_compare_kernel(x_ptr, y_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)[:, None]
    cols = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + rows * C + cols)
    y = tl.load(y_ptr + cols)  # one row, broadcast over the rows by map_elementwise
    tl.store(z_ptr + rows * C + cols, tl.map_elementwise(_sign_of_difference, x, y))


@triton.jit
def _halvings(x, limit):
    n = 0
    while x > limit:  # a trip count of each element's own
        x = x * 0.5
        n += 1
    return n, x


@triton.jit
def map_loop_kernel(x_ptr, n_ptr, r_ptr, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    n, r = tl.map_elementwise(_halvings, tl.load(x_ptr + offs), 1.0)
    tl.store(n_ptr + offs, n)
    tl.store(r_ptr + offs, r)


def _halvings_ref(x_ptr):
    n = np.zeros(x_ptr.shape, np.int32)
    r = x_ptr.astype(np.float32).copy()
    while (r > 1).any():
        big = r > 1
        n += big
        r = np.where(big, r * np.float32(0.5), r).astype(np.float32)
    return n, r


@triton.jit
def _divmod_pair(a0, a1, b0, b1):
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@triton.jit
def map_pack_kernel(a_ptr, b_ptr, q_ptr, r_ptr, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    q, r = tl.map_elementwise(_divmod_pair, tl.load(a_ptr + offs), tl.load(b_ptr + offs), pack=2)
    tl.store(q_ptr + offs, q)
    tl.store(r_ptr + offs, r)


@triton.jit
def dot_4d_kernel(a_ptr, b_ptr, c_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # a is stored as [2, 3-batch..., K, M] and transposed in the kernel (tl.trans swaps the last two)
    a = tl.trans(tl.load(a_ptr + tl.arange(0, 4 * K * M)).reshape(2, 2, K, M))
    b = tl.load(b_ptr + tl.arange(0, 4 * K * N)).reshape(2, 2, K, N)
    c = tl.load(c_ptr + tl.arange(0, 4 * M * N)).reshape(2, 2, M, N)
    z = tl.dot(a, b, c)
    tl.store(z_ptr + tl.arange(0, 4 * M * N), z.reshape(4 * M * N))


def _dot_4d_ref(a_ptr, b_ptr, c_ptr, M=32, N=32, K=16):
    a = a_ptr.astype(np.float64).reshape(2, 2, K, M).swapaxes(-1, -2)
    b = b_ptr.astype(np.float64).reshape(2, 2, K, N)
    return (a @ b + c_ptr.reshape(2, 2, M, N)).astype(np.float32).reshape(-1)


CASES = [
    Case(id="lang36/if-one-element-tensor", kernel=unsplat_if_kernel, grid=(8,), constexprs={"B": 64},
         inputs={"x_ptr": Rand("fp32", (8 * 64,), -1, 1), "threshold": 0.0},
         outputs={"z_ptr": Out("fp32", (8 * 64,))}, reference=_unsplat_ref),
    Case(id="lang36/annotated-scalar-dtypes", kernel=annotated_scalars_kernel, grid=(1,), constexprs={"B": 16},
         inputs={"h": 1.0 / 3.0, "b": 2.0 / 7.0, "u": 3},
         outputs={"z_ptr": Out("fp32", (16,))}, reference=lambda h, b, u: _annotated_ref(h, b, u)),
    Case(id="lang36/map-elementwise-if", kernel=map_compare_kernel, grid=(1,), constexprs={"R": 16, "C": 64},
         inputs={"x_ptr": Rand("int32", (16 * 64,), -3, 3), "y_ptr": Rand("int32", (64,), -3, 3)},
         outputs={"z_ptr": Out("int32", (16 * 64,), poison="sentinel")},
         reference=lambda x_ptr, y_ptr: np.sign(x_ptr.reshape(16, 64).astype(np.int64) - y_ptr).astype(np.int32).reshape(-1)),
    Case(id="lang36/map-elementwise-while", kernel=map_loop_kernel, grid=(4,), constexprs={"B": 256},
         inputs={"x_ptr": Rand("fp32", (1024,), -4, 3000)},
         outputs={"n_ptr": Out("int32", (1024,), poison="sentinel"), "r_ptr": Out("fp32", (1024,))},
         reference=_halvings_ref, rtol=0, atol=0),
    Case(id="lang36/map-elementwise-pack2", kernel=map_pack_kernel, grid=(2,), constexprs={"B": 512},
         inputs={"a_ptr": Rand("uint32", (1024,)), "b_ptr": Rand("uint32", (1024,), 1, 70000)},
         outputs={"q_ptr": Out("uint32", (1024,), poison="sentinel"), "r_ptr": Out("uint32", (1024,), poison="sentinel")},
         reference=lambda a_ptr, b_ptr: (a_ptr // b_ptr, a_ptr % b_ptr)),
    Case(id="lang36/dot-4d-batch", kernel=dot_4d_kernel, grid=(1,), constexprs={"M": 32, "N": 32, "K": 16},
         inputs={"a_ptr": Rand("fp16", (4 * 16 * 32,), -2, 2), "b_ptr": Rand("fp16", (4 * 16 * 32,), -2, 2),
                 "c_ptr": Rand("fp32", (4 * 32 * 32,), -2, 2)},
         outputs={"z_ptr": Out("fp32", (4 * 32 * 32,))},
         reference=lambda a_ptr, b_ptr, c_ptr: _dot_4d_ref(a_ptr, b_ptr, c_ptr), rtol=1e-4, atol=1e-4),
]
