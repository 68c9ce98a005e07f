"""Tensor descriptors: ``tl.make_tensor_descriptor`` in a kernel, ``desc.load`` / ``desc.store``
on ragged shapes (outside lanes read zero or NaN, outside stores are dropped), a matmul through
descriptors, and host ``TensorDescriptor`` objects passed as kernel arguments."""
import numpy as np

import tritium as triton
import tritium.language as tl
from tritium.tools.tensor_descriptor import TensorDescriptor

from .. import dtypes
from ..case import Case, Err, Gen, Out, Rand, tol

M, N = 50, 70  # not multiples of the 16x32 blocks


@triton.jit
def desc_copy_kernel(x_ptr, z_ptr, M, N, PAD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # every block of the (padded) grid, read through a descriptor and written densely
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN], padding_option=PAD)
    pm, pn = tl.program_id(0), tl.program_id(1)
    v = src.load([pm * BM, pn * BN])
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    tl.store(z_ptr + rm[:, None] * (tl.num_programs(1) * BN) + rn[None, :], v)


@triton.jit
def desc_store_kernel(x_ptr, z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    dst = tl.make_tensor_descriptor(z_ptr, [M, N], [N, 1], [BM, BN])
    off = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    dst.store(off, src.load(off) * 2 + 1)


@triton.jit
def desc_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    pm, pn = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(a_desc.load([pm, k]), b_desc.load([k, pn]))
    c_desc.store([pm, pn], acc)


@triton.jit
def host_desc_kernel(x_desc, z_desc, scale, BM: tl.constexpr, BN: tl.constexpr):
    # x_desc and z_desc are host TensorDescriptors
    off = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    z_desc.store(off, tl.load_tensor_descriptor(x_desc, off) * scale)


class _HostDescriptors:
    """Launches ``kernel`` with the named array arguments wrapped in host TensorDescriptors
    (``blocks``: name -> block shape, or ``(block shape, padding)``)."""

    def __init__(self, kernel, blocks: dict):
        self.fn, self.blocks = kernel, blocks
        self.__name__ = kernel.__name__

    def _desc(self, name, a):
        spec = self.blocks[name]
        block, padding = spec if isinstance(spec, tuple) else (spec, "zero")
        return TensorDescriptor.from_tensor(a, block, padding)

    def _wrap(self, args, kwargs):
        names = list(self.fn.arg_names)
        args = [self._desc(n, a) if n in self.blocks else a for n, a in zip(names, args)]
        kwargs = {k: (self._desc(k, v) if k in self.blocks else v) for k, v in kwargs.items()}
        return args, kwargs

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            a, k = self._wrap(args, kwargs)
            return self.fn[grid](*a, **k)
        return launch

    def warmup(self, *args, **kwargs):
        a, k = self._wrap(args, kwargs)
        return self.fn.warmup(*a, **k)


def _padded(x, fill, rows, cols):
    out = np.full((rows, cols), fill, dtype=x.dtype if x.dtype.kind in 'iu' else np.float64)
    out[:M, :N] = x
    return out


CASES = []
for _t in ("fp32", "fp16", "int32"):
    for _pad in (("zero", "nan") if _t != "int32" else ("zero",)):
        CASES.append(Case(
            id=f"tensor_descriptor/load-pad-{_pad}-{_t}", kernel=desc_copy_kernel, grid=(4, 3),
            constexprs={"PAD": _pad, "BM": 16, "BN": 32},
            inputs={"x_ptr": Rand(_t, (M, N)), "M": M, "N": N},
            outputs={"z_ptr": Out(_t, (64, 96), poison="sentinel")},
            reference=lambda x_ptr, f=(np.nan if _pad == "nan" else 0): _padded(x_ptr, f, 64, 96)))
for _t in ("fp32", "fp16"):
    CASES.append(Case(
        id=f"tensor_descriptor/store-ragged-{_t}", kernel=desc_store_kernel, grid=(4, 3), constexprs={"BM": 16, "BN": 32},
        inputs={"x_ptr": Rand(_t, (M, N)), "M": M, "N": N},
        outputs={"z_ptr": Out(_t, (M * N + 64,), init=Rand(_t, (M * N + 64,)))},
        reference=lambda x_ptr, z_ptr: np.concatenate([(x_ptr * 2 + 1).ravel(), z_ptr[M * N:]])))
for _t in ("fp16", "bf16"):
    CASES.append(Case(
        id=f"tensor_descriptor/matmul-ragged-{_t}", kernel=desc_matmul_kernel, grid=(4, 3),
        constexprs={"BM": 64, "BN": 64, "BK": 32},
        inputs={"a_ptr": Rand(_t, (200, 300), -1, 1), "b_ptr": Rand(_t, (300, 130), -1, 1), "M": 200, "N": 130, "K": 300},
        outputs={"c_ptr": Out("fp32", (200, 130), poison="sentinel")},
        reference=lambda a_ptr, b_ptr: a_ptr @ b_ptr, **tol(dtypes.ACCUM_TOLERANCE, "fp32")))
for _t in ("fp32", "fp16"):
    CASES.append(Case(
        id=f"tensor_descriptor/host-descriptor-{_t}",
        kernel=_HostDescriptors(host_desc_kernel, {"x_desc": [16, 32], "z_desc": [16, 32]}), grid=(4, 3),
        constexprs={"BM": 16, "BN": 32}, inputs={"x_desc": Rand(_t, (M, N)), "scale": 3.0},
        outputs={"z_desc": Out(_t, (M, N), poison="sentinel")},
        reference=lambda x_desc: x_desc * 3.0))


# -- Triton 3.6 forms: n-d blocks, rank-reducing loads, gathers/scatters of rows, reductions
# through a descriptor, descriptors passed to / returned from @jit functions, in tuples and
# carried by loops ---------------------------------------------------------------------------------

@triton.jit
def desc_load_nd_kernel(x_ptr, z_ptr, S0, S1, S2, T0, T1, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr):
    # a rank-3 block at a per-program corner of a ragged 3-d tensor, written densely
    d = tl.make_tensor_descriptor(x_ptr, [S0, S1, S2], [T0, T1, 1], [B0, B1, B2])
    p0, p1, p2 = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    v = d.load([p0 * B0, p1 * B1, p2 * B2])
    r0 = p0 * B0 + tl.arange(0, B0)[:, None, None]
    r1 = p1 * B1 + tl.arange(0, B1)[None, :, None]
    r2 = p2 * B2 + tl.arange(0, B2)[None, None, :]
    G1: tl.constexpr = B1 * 2
    G2: tl.constexpr = B2 * 2
    tl.store(z_ptr + (r0 * G1 + r1) * G2 + r2, v)


@triton.jit
def desc_store_5d_kernel(x_ptr, z_ptr, S3, S4, B3: tl.constexpr, B4: tl.constexpr):
    # one [1, 1, 2, B3, B4] block of a 5-d tensor of shape [1, 1, 2, S3, S4]: the parts past the
    # tensor's edges are dropped
    d = tl.make_tensor_descriptor(z_ptr, [1, 1, 2, S3, S4], [2 * S3 * S4, 2 * S3 * S4, S3 * S4, S4, 1],
                                  [1, 1, 2, B3, B4])
    i = tl.arange(0, 2)[:, None, None] * (B3 * B4) + tl.arange(0, B3)[None, :, None] * B4 + tl.arange(0, B4)[None, None, :]
    v = tl.load(x_ptr + i)
    d.store([0, 0, 0, 0, 0], v.reshape(1, 1, 2, B3, B4))


@triton.jit
def desc_rank_reducing_kernel(x_ptr, z_ptr, B, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # a [1, BM, BN] block of batch b, used as a [BM, BN] tile
    d = tl.make_tensor_descriptor(x_ptr, [B, M, N], [M * N, N, 1], [1, BM, BN])
    b = tl.program_id(0)
    v = d.load([b, 0, 0]).reshape(BM, BN)
    tl.store(z_ptr + b * BM * BN + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], v)


@triton.jit
def desc_gather_kernel(x_ptr, idx_ptr, z_ptr, X, Y, y, BX: tl.constexpr, BY: tl.constexpr, PAD: tl.constexpr):
    d = tl.make_tensor_descriptor(x_ptr, [X, Y], [Y, 1], [1, BY], padding_option=PAD)
    rows = tl.load(idx_ptr + tl.arange(0, BX))
    v = d.gather(rows, y)
    tl.store(z_ptr + tl.arange(0, BX)[:, None] * BY + tl.arange(0, BY)[None, :], v)


@triton.jit
def desc_scatter_kernel(x_ptr, idx_ptr, z_ptr, X, Y, y, BX: tl.constexpr, BY: tl.constexpr):
    d = tl.make_tensor_descriptor(z_ptr, [X, Y], [Y, 1], [1, BY])
    rows = tl.load(idx_ptr + tl.arange(0, BX))
    v = tl.load(x_ptr + tl.arange(0, BX)[:, None] * BY + tl.arange(0, BY)[None, :])
    d.scatter(v, rows, y)


@triton.jit
def desc_reduce_kernel(x_ptr, z_ptr, M, N, KIND: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # grid (blocks of M, blocks of N, 2): two programs reduce the same block of x into z
    d = tl.make_tensor_descriptor(z_ptr, [M, N], [N, 1], [BM, BN])
    pm, pn = tl.program_id(0) * BM, tl.program_id(1) * BN
    rm = pm + tl.arange(0, BM)[:, None]
    rn = pn + tl.arange(0, BN)[None, :]
    v = tl.load(x_ptr + rm * N + rn, mask=(rm < M) & (rn < N), other=0)
    if KIND == "add":
        d.atomic_add([pm, pn], v)
    elif KIND == "min":
        d.atomic_min([pm, pn], v)
    elif KIND == "max":
        d.atomic_max([pm, pn], v)
    elif KIND == "and":
        d.atomic_and([pm, pn], v)
    elif KIND == "or":
        d.atomic_or([pm, pn], v)
    else:
        d.atomic_xor([pm, pn], v)


@triton.jit(noinline=True)
def _desc_make(ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    return tl.make_tensor_descriptor(ptr, [M, N], [N, 1], [BM, BN])


@triton.jit(noinline=True)
def _desc_copy_scaled(descs, scale, BM: tl.constexpr, BN: tl.constexpr):
    src, dst = descs
    off = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    dst.store(off, src.load(off) * scale)


@triton.jit
def desc_through_calls_kernel(x_ptr, z_ptr, M, N, scale, BM: tl.constexpr, BN: tl.constexpr):
    # descriptors returned by a noinline function, packed in a tuple and passed to another
    src = _desc_make(x_ptr, M, N, BM, BN)
    dst = _desc_make(z_ptr, M, N, BM, BN)
    _desc_copy_scaled((src, dst), scale, BM, BN)


@triton.jit
def desc_loop_carried_kernel(x_ptr, z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # a descriptor re-made inside a loop (every other step, on another tensor) is carried by it;
    # each program's rows: z = x + 1 in even column blocks, x + 2 in odd ones (read back from z)
    pm = tl.program_id(0) * BM
    d = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    out = tl.make_tensor_descriptor(z_ptr, [M, N], [N, 1], [BM, BN])
    bump = 1.0
    for j in range(0, tl.cdiv(N, BN)):
        if j % 2 == 0:
            d = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
            bump = 1.0
        else:
            d = tl.make_tensor_descriptor(z_ptr, [M, N], [N, 1], [BM, BN])
            bump = 2.0
            out.store([pm, j * BN], tl.load(x_ptr + (pm + tl.arange(0, BM))[:, None] * N + j * BN
                                             + tl.arange(0, BN)[None, :],
                                             mask=((pm + tl.arange(0, BM))[:, None] < M)
                                             & ((j * BN + tl.arange(0, BN))[None, :] < N)))
        out.store([pm, j * BN], d.load([pm, j * BN]) + bump)


def _gather_ref(x_ptr, idx_ptr, y, fill, BY):
    X, Y = x_ptr.shape
    out = np.full((len(idx_ptr), BY), fill, dtype=np.float64 if x_ptr.dtype.kind == "f" else x_ptr.dtype)
    for i, r in enumerate(idx_ptr):
        if 0 <= r < X:
            cols = np.arange(y, y + BY)
            ok = cols < Y
            out[i, ok] = x_ptr[r, cols[ok]]
    return out


def _scatter_ref(x_ptr, idx_ptr, z_ptr, y):
    X, Y = z_ptr.shape
    out = z_ptr.copy()
    BY = x_ptr.shape[1]
    for i, r in enumerate(idx_ptr):
        if 0 <= r < X:
            cols = np.arange(y, y + BY)
            ok = cols < Y
            out[r, cols[ok]] = x_ptr[i, ok]
    return out


_REDUCE = {"add": lambda z, x: z + 2 * x, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
           "or": np.bitwise_or, "xor": lambda z, x: z}  # x ^ x: two programs cancel


def _padded3(x, shape):
    out = np.zeros(shape, dtype=x.dtype if x.dtype.kind in "iu" else np.float64)
    out[:x.shape[0], :x.shape[1], :x.shape[2]] = x
    return out


_RM, _RN = 37, 45  # ragged for the 16x32 blocks of the reductions
for _t in ("fp32", "int8"):
    CASES.append(Case(
        id=f"tensor_descriptor/load-3d-ragged-{_t}", kernel=desc_load_nd_kernel, grid=(2, 2, 2),
        constexprs={"B0": 4, "B1": 8, "B2": 32},
        inputs={"x_ptr": Rand(_t, (6, 13, 50)), "S0": 6, "S1": 13, "S2": 50, "T0": 13 * 50, "T1": 50},
        outputs={"z_ptr": Out(_t, (8, 16, 64), poison="sentinel")},
        reference=lambda x_ptr: _padded3(x_ptr, (8, 16, 64))))
CASES.append(Case(
    id="tensor_descriptor/store-5d-ragged-fp16", kernel=desc_store_5d_kernel, constexprs={"B3": 8, "B4": 16},
    inputs={"x_ptr": Rand("fp16", (2, 8, 16)), "S3": 7, "S4": 13},
    outputs={"z_ptr": Out("fp16", (2 * 7 * 13 + 16,), init=Rand("fp16", (2 * 7 * 13 + 16,)))},
    reference=lambda x_ptr, z_ptr: np.concatenate([x_ptr[:, :7, :13].ravel(), z_ptr[2 * 7 * 13:]]),
    doc="a 5-d descriptor store: only the elements inside the tensor are written (16 guard elements after it)"))
for _t in ("fp16", "fp32"):
    CASES.append(Case(
        id=f"tensor_descriptor/rank-reducing-load-{_t}", kernel=desc_rank_reducing_kernel, grid=(3,),
        constexprs={"BM": 16, "BN": 32}, inputs={"x_ptr": Rand(_t, (3, 11, 29)), "B": 3, "M": 11, "N": 29},
        outputs={"z_ptr": Out(_t, (3, 16, 32), poison="sentinel")},
        reference=lambda x_ptr: np.stack([np.pad(x_ptr[b].astype(np.float64), ((0, 5), (0, 3))) for b in range(3)])))
_GX, _GY = 40, 100
for _t, _pad in (("fp32", "zero"), ("fp16", "nan"), ("int8", "zero")):
    _fill = np.nan if _pad == "nan" else 0
    CASES.append(Case(
        id=f"tensor_descriptor/gather-rows-{_t}-{_pad}", kernel=desc_gather_kernel,
        constexprs={"BX": 16, "BY": 64, "PAD": _pad},
        inputs={"x_ptr": Rand(_t, (_GX, _GY)), "X": _GX, "Y": _GY, "y": 48,
                # rows past the tensor's end (and negative ones) read as the padding
                "idx_ptr": Gen("int32", (16,), lambda rng, s: np.concatenate([rng.integers(0, _GX, 13), [_GX, _GX + 7, -1]]))},
        outputs={"z_ptr": Out(_t, (16, 64), poison="sentinel")},
        reference=lambda x_ptr, idx_ptr, f=_fill: _gather_ref(x_ptr, idx_ptr, 48, f, 64)))
for _t in ("fp32", "int8", "fp16"):
    CASES.append(Case(
        id=f"tensor_descriptor/scatter-rows-{_t}", kernel=desc_scatter_kernel, constexprs={"BX": 16, "BY": 64},
        inputs={"x_ptr": Rand(_t, (16, 64)), "X": _GX, "Y": _GY, "y": 48,
                "idx_ptr": Gen("int32", (16,), lambda rng, s: np.concatenate([rng.permutation(_GX)[:14], [_GX, -3]]))},
        outputs={"z_ptr": Out(_t, (_GX, _GY), init=Rand(_t, (_GX, _GY)))},
        reference=lambda x_ptr, idx_ptr, z_ptr: _scatter_ref(x_ptr, idx_ptr, z_ptr, 48)))
for _kind, _types in (("add", ("fp32", "int32", "uint32")), ("min", ("int32", "uint32", "int64")),
                      ("max", ("int32", "uint64")), ("and", ("int32", "int64")), ("or", ("uint32",)),
                      ("xor", ("int32",))):
    for _t in _types:
        _lim = {"low": -1000, "high": 1000} if _kind == "add" and dtypes.is_int(_t) else {}
        CASES.append(Case(
            id=f"tensor_descriptor/atomic-{_kind}-{_t}", kernel=desc_reduce_kernel, grid=(3, 2, 2),
            constexprs={"KIND": _kind, "BM": 16, "BN": 32},
            inputs={"x_ptr": Rand(_t, (_RM, _RN), **_lim), "M": _RM, "N": _RN},
            outputs={"z_ptr": Out(_t, (_RM, _RN), init=Rand(_t, (_RM, _RN), **_lim))},
            reference=lambda x_ptr, z_ptr, k=_kind: _REDUCE[k](z_ptr, x_ptr),
            doc="two programs reduce the same ragged block into the output through one descriptor"))
CASES.append(Case(
    id="tensor_descriptor/atomic-min-fp32-refused", kernel=desc_reduce_kernel, grid=(1,),
    constexprs={"KIND": "min", "BM": 16, "BN": 32},
    inputs={"x_ptr": Rand("fp32", (16, 32)), "M": 16, "N": 32}, outputs={"z_ptr": Out("fp32", (16, 32))},
    expect_error=Err("atomic_min", "fp32", line="d.atomic_min([pm, pn], v)")))
CASES.append(Case(
    id="tensor_descriptor/block-too-narrow", kernel=desc_copy_kernel, grid=(1,),
    constexprs={"PAD": "zero", "BM": 16, "BN": 2},
    inputs={"x_ptr": Rand("fp32", (16, 16)), "M": 16, "N": 16}, outputs={"z_ptr": Out("fp32", (16, 2))},
    expect_error=Err("at least 16 bytes in the last dimension", "2 * 4 = 8 bytes")))
for _t in ("fp32", "fp16"):
    CASES.append(Case(
        id=f"tensor_descriptor/through-noinline-calls-{_t}", kernel=desc_through_calls_kernel, grid=(4, 3),
        constexprs={"BM": 16, "BN": 32}, inputs={"x_ptr": Rand(_t, (M, N)), "M": M, "N": N, "scale": 0.5},
        outputs={"z_ptr": Out(_t, (M, N), poison="sentinel")},
        reference=lambda x_ptr: x_ptr * 0.5))
CASES.append(Case(
    id="tensor_descriptor/loop-carried-fp32", kernel=desc_loop_carried_kernel, grid=(4,),
    constexprs={"BM": 16, "BN": 32}, inputs={"x_ptr": Rand("fp32", (M, N)), "M": M, "N": N},
    outputs={"z_ptr": Out("fp32", (M, N), poison="sentinel")},
    reference=lambda x_ptr: x_ptr + np.where((np.arange(N) // 32) % 2 == 0, 1.0, 2.0)[None, :]))
