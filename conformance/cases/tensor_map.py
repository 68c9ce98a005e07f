"""Host tensor descriptors shaped for the copy engine (NVIDIA sm_90 TMA: a 16-byte aligned base,
outer strides multiples of 16 bytes, box rows of at least 16 bytes), so that a backend with such
hardware takes its tensor-map path: tiles that overhang the tensor in every dimension (reads
outside are zero or NaN, writes outside dropped), ranks 1 to 3, fp16/bf16/fp32/fp8/int8, blocks
whose rows are wider than one swizzle span (moved as several 128-byte boxes), and a persistent
matmul (the tutorial's) through descriptors, with narrow and wide blocks.  Elsewhere the same cases run the
block-pointer path."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Out, Rand, tol
from .tensor_descriptor import _HostDescriptors

M, N = 100, 80  # 32x64 tiles overhang both dimensions


@triton.jit
def map_scale_kernel(x_desc, z_desc, BM: tl.constexpr, BN: tl.constexpr):
    off = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    z_desc.store(off, x_desc.load(off) * 3)


@triton.jit
def map_copy_padded_kernel(x_desc, z_ptr, BM: tl.constexpr, BN: tl.constexpr):
    # each tile, overhanging part included, written densely: shows what the outside reads as
    pm, pn = tl.program_id(0), tl.program_id(1)
    v = x_desc.load([pm * BM, pn * BN])
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    tl.store(z_ptr + rm[:, None] * (tl.num_programs(1) * BN) + rn[None, :], v)


@triton.jit
def map_1d_kernel(x_desc, z_desc, B: tl.constexpr):
    off = tl.program_id(0) * B
    z_desc.store([off], x_desc.load([off]) + 1)


@triton.jit
def map_3d_kernel(x_desc, z_desc, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr):
    off = [tl.program_id(0) * B0, tl.program_id(1) * B1, tl.program_id(2) * B2]
    z_desc.store(off, x_desc.load(off) * 2)


@triton.jit
def map_persistent_matmul_kernel(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                 BK: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    # the persistent-matmul tutorial's descriptor version: each program walks tiles NUM_SMS apart
    start = tl.program_id(0)
    num_m, num_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    num_tiles = num_m * num_n
    in_group = GROUP_M * num_n
    for tile in range(start, num_tiles, NUM_SMS):
        group = tile // in_group
        first_m = group * GROUP_M
        size_m = min(num_m - first_m, GROUP_M)
        pm = first_m + (tile % in_group) % size_m
        pn = (tile % in_group) // size_m
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = a_desc.load([pm * BM, k * BK])
            b = b_desc.load([pn * BN, k * BK])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([pm * BM, pn * BN], acc.to(c_desc.dtype))


def _padded(x, fill, rows, cols):
    out = np.full((rows, cols), fill, dtype=x.dtype if x.dtype.kind in "iu" else np.float64)
    out[:x.shape[0], :x.shape[1]] = x
    return out


CASES = []
for _t in ("fp16", "bf16", "fp32", "int8"):
    CASES.append(Case(
        id=f"tensor_map/scale-overhang-{_t}",
        kernel=_HostDescriptors(map_scale_kernel, {"x_desc": [32, 64], "z_desc": [32, 64]}), grid=(4, 2),
        constexprs={"BM": 32, "BN": 64},
        inputs={"x_desc": Rand(_t, (M, N), -20, 20) if _t == "int8" else Rand(_t, (M, N))},
        outputs={"z_desc": Out(_t, (M, N), poison="sentinel")},
        reference=lambda x_desc: x_desc * 3))
for _t in ("fp16", "fp32"):
    for _pad in ("zero", "nan"):
        CASES.append(Case(
            id=f"tensor_map/load-pad-{_pad}-{_t}",
            kernel=_HostDescriptors(map_copy_padded_kernel, {"x_desc": ([32, 64], _pad)}), grid=(4, 2),
            constexprs={"BM": 32, "BN": 64}, inputs={"x_desc": Rand(_t, (M, N))},
            outputs={"z_ptr": Out(_t, (128, 128), poison="sentinel")},
            reference=lambda x_desc, f=(np.nan if _pad == "nan" else 0): _padded(x_desc, f, 128, 128)))
CASES.append(Case(
    id="tensor_map/load-fp8e4nv",
    kernel=_HostDescriptors(map_copy_padded_kernel, {"x_desc": [32, 64]}), grid=(4, 2),
    constexprs={"BM": 32, "BN": 64}, inputs={"x_desc": Rand("fp8e4nv", (M, N))},
    outputs={"z_ptr": Out("fp8e4nv", (128, 128), poison="sentinel")},
    reference=lambda x_desc: _padded(x_desc, 0, 128, 128)))
CASES.append(Case(
    id="tensor_map/rank1-fp32",
    kernel=_HostDescriptors(map_1d_kernel, {"x_desc": [128], "z_desc": [128]}), grid=(8,),
    constexprs={"B": 128}, inputs={"x_desc": Rand("fp32", (1000,))},
    outputs={"z_desc": Out("fp32", (1000,), poison="sentinel")},
    reference=lambda x_desc: x_desc + 1))
CASES.append(Case(
    id="tensor_map/rank3-fp16",
    kernel=_HostDescriptors(map_3d_kernel, {"x_desc": [2, 16, 32], "z_desc": [2, 16, 32]}), grid=(3, 3, 2),
    constexprs={"B0": 2, "B1": 16, "B2": 32}, inputs={"x_desc": Rand("fp16", (5, 40, 48))},
    outputs={"z_desc": Out("fp16", (5, 40, 48), poison="sentinel")},
    reference=lambda x_desc: x_desc * 2))
for _t in ("fp16", "bf16"):
    CASES.append(Case(
        id=f"tensor_map/persistent-matmul-{_t}",
        kernel=_HostDescriptors(map_persistent_matmul_kernel,
                                {"a_desc": [64, 32], "b_desc": [64, 32], "c_desc": [64, 64]}), grid=(5,),
        constexprs={"BM": 64, "BN": 64, "BK": 32, "GROUP_M": 2, "NUM_SMS": 5},
        inputs={"a_desc": Rand(_t, (200, 96), -1, 1), "b_desc": Rand(_t, (136, 96), -1, 1),
                "M": 200, "N": 136, "K": 96},
        outputs={"c_desc": Out(_t, (200, 136), poison="sentinel")},
        reference=lambda a_desc, b_desc: a_desc @ b_desc.T, **tol(dtypes.ACCUM_TOLERANCE, _t)))
CASES.append(Case(
    id="tensor_map/scale-wide-rows-fp16",   # 512-byte block rows: four boxes side by side
    kernel=_HostDescriptors(map_scale_kernel, {"x_desc": [16, 256], "z_desc": [16, 256]}), grid=(3, 2),
    constexprs={"BM": 16, "BN": 256}, inputs={"x_desc": Rand("fp16", (40, 300))},
    outputs={"z_desc": Out("fp16", (40, 300), poison="sentinel")},
    reference=lambda x_desc: x_desc * 3))
CASES.append(Case(
    id="tensor_map/persistent-matmul-wide-fp16",   # 256-byte rows of A, B and C: two boxes each
    kernel=_HostDescriptors(map_persistent_matmul_kernel,
                            {"a_desc": [64, 128], "b_desc": [64, 128], "c_desc": [64, 64]}), grid=(5,),
    constexprs={"BM": 64, "BN": 64, "BK": 128, "GROUP_M": 2, "NUM_SMS": 5},
    inputs={"a_desc": Rand("fp16", (200, 392), -1, 1), "b_desc": Rand("fp16", (136, 392), -1, 1),
            "M": 200, "N": 136, "K": 392},
    outputs={"c_desc": Out("fp16", (200, 136), poison="sentinel")},
    reference=lambda a_desc, b_desc: a_desc @ b_desc.T, **tol(dtypes.ACCUM_TOLERANCE, "fp16")))
CASES.append(Case(
    id="tensor_map/persistent-matmul-wide-c-bf16",   # C stored as four 128-byte boxes
    kernel=_HostDescriptors(map_persistent_matmul_kernel,
                            {"a_desc": [64, 64], "b_desc": [256, 64], "c_desc": [64, 256]}), grid=(3,),
    constexprs={"BM": 64, "BN": 256, "BK": 64, "GROUP_M": 2, "NUM_SMS": 3},
    inputs={"a_desc": Rand("bf16", (136, 200), -1, 1), "b_desc": Rand("bf16", (600, 200), -1, 1),
            "M": 136, "N": 600, "K": 200},
    outputs={"c_desc": Out("bf16", (136, 600), poison="sentinel")},
    reference=lambda a_desc, b_desc: a_desc @ b_desc.T, **tol(dtypes.ACCUM_TOLERANCE, "bf16")))
