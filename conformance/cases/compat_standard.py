"""``tl.sort``/``topk``/``flip``/``interleave``/``gather``/``histogram``/``swizzle2d``/``reduce_or``
the way Triton's tests use them, against numpy."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Gen, Out, Rand

M, K = 8, 32  # a tile of M rows of K elements


@triton.jit
def sort_kernel(x_ptr, out_ptr, DESC: tl.constexpr, DIM: tl.constexpr, M: tl.constexpr, K: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]
    x = tl.load(x_ptr + offs)
    if DIM == 1:
        y = tl.sort(x, descending=DESC)
    else:
        y = tl.sort(x, dim=DIM, descending=DESC)
    tl.store(out_ptr + offs, y)


@triton.jit
def topk_kernel(x_ptr, out_ptr, M: tl.constexpr, K: tl.constexpr, TOP: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])
    y = tl.topk(x, TOP)
    tl.store(out_ptr + tl.arange(0, M)[:, None] * TOP + tl.arange(0, TOP)[None, :], y)


@triton.jit
def flip_kernel(x_ptr, out_ptr, DIM: tl.constexpr, M: tl.constexpr, K: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]
    x = tl.load(x_ptr + offs)
    if DIM == -1:
        y = tl.flip(x)
    else:
        y = tl.flip(x, DIM)
    tl.store(out_ptr + offs, y)


@triton.jit
def interleave_kernel(a_ptr, b_ptr, out_ptr, K: tl.constexpr):
    offs = tl.arange(0, K)
    c = tl.interleave(tl.load(a_ptr + offs), tl.load(b_ptr + offs))
    tl.store(out_ptr + tl.arange(0, 2 * K), c)


@triton.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, AXIS: tl.constexpr, M: tl.constexpr, K: tl.constexpr,
                  IM: tl.constexpr, IK: tl.constexpr):
    src = tl.load(src_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])
    ioffs = tl.arange(0, IM)[:, None] * IK + tl.arange(0, IK)[None, :]
    idx = tl.load(idx_ptr + ioffs)
    tl.store(out_ptr + ioffs, tl.gather(src, idx, AXIS))


@triton.jit
def gather_1d_kernel(src_ptr, idx_ptr, out_ptr, K: tl.constexpr):
    offs = tl.arange(0, K)
    src = tl.load(src_ptr + offs)
    tl.store(out_ptr + offs, src.gather(tl.load(idx_ptr + offs), 0))


@triton.jit
def histogram_kernel(x_ptr, out_ptr, n, NX: tl.constexpr, BINS: tl.constexpr, MASKED: tl.constexpr):
    offs = tl.arange(0, NX)
    x = tl.load(x_ptr + offs)
    if MASKED:
        h = tl.histogram(x, BINS, mask=offs < n)
    else:
        h = tl.histogram(x, BINS)
    tl.store(out_ptr + tl.arange(0, BINS), h)


@triton.jit
def swizzle_kernel(out_i_ptr, out_j_ptr, SI: tl.constexpr, SJ: tl.constexpr, SG: tl.constexpr):
    i = tl.arange(0, SI)[:, None] + tl.zeros([SI, SJ], dtype=tl.int32)
    j = tl.arange(0, SJ)[None, :] + tl.zeros([SI, SJ], dtype=tl.int32)
    ni, nj = tl.swizzle2d(i, j, SI, SJ, SG)
    offs = tl.arange(0, SI)[:, None] * SJ + tl.arange(0, SJ)[None, :]
    tl.store(out_i_ptr + offs, ni)
    tl.store(out_j_ptr + offs, nj)


@triton.jit
def swizzle_pid_kernel(out_ptr, SI: tl.constexpr, SJ: tl.constexpr, SG: tl.constexpr):
    # one program per tile, as in a grouped matmul: scalar swizzle2d
    pid = tl.program_id(0)
    pi, pj = tl.swizzle2d(pid // SJ, pid % SJ, SI, SJ, SG)
    tl.store(out_ptr + pid, pi * 100 + pj)


def _swizzle_ref(si, sj, sg):
    ii, jj = np.meshgrid(np.arange(si), np.arange(sj), indexing="ij")
    lin = ii * sj + jj
    first = (lin // (sg * sj)) * sg
    rows = np.minimum(si - first, sg)
    rem = lin % (sg * sj)
    return (first + rem % rows).astype(np.int32), (rem // rows).astype(np.int32)


@triton.jit
def reduce_or_kernel(x_ptr, out_ptr, M: tl.constexpr, K: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])
    tl.store(out_ptr + tl.arange(0, M), tl.reduce_or(x, 1))


def _distinct(rng, shape):  # no ties, so sorted positions are unique
    return rng.permutation(np.prod(shape)).reshape(shape) - np.prod(shape) // 2 + 0.5


CASES = []
for t in ("fp32", "fp16", "int32", "uint8", "int64"):
    for desc in (False, True):
        x_spec = Rand(t, (M, K), -100 if t != "uint8" else 1, 100)
        CASES.append(Case(id=f"compat/sort-{t}{'-desc' if desc else ''}", kernel=sort_kernel,
                          constexprs={"DESC": desc, "DIM": 1, "M": M, "K": K},
                          inputs={"x_ptr": x_spec}, outputs={"out_ptr": Out(t, (M, K))},
                          reference=(lambda d: lambda x_ptr: np.sort(x_ptr, 1)[:, ::-1] if d else np.sort(x_ptr, 1))(desc), rtol=0, atol=0))
CASES.append(Case(id="compat/sort-dim0", kernel=sort_kernel, constexprs={"DESC": False, "DIM": 0, "M": M, "K": K},
                  inputs={"x_ptr": Gen("fp32", (M, K), _distinct)}, outputs={"out_ptr": Out("fp32", (M, K))},
                  reference=lambda x_ptr: np.sort(x_ptr, 0), rtol=0, atol=0))
for top in (1, 4, 32):
    CASES.append(Case(id=f"compat/topk-{top}", kernel=topk_kernel, constexprs={"M": M, "K": K, "TOP": top},
                      inputs={"x_ptr": Gen("fp32", (M, K), _distinct)}, outputs={"out_ptr": Out("fp32", (M, top))},
                      reference=(lambda top: lambda x_ptr: -np.sort(-x_ptr, 1)[:, :top])(top), rtol=0, atol=0))
for dim in (-1, 0, 1):
    for t in ("fp32", "int16"):
        CASES.append(Case(id=f"compat/flip-dim{dim}-{t}", kernel=flip_kernel,
                          constexprs={"DIM": dim, "M": M, "K": K}, inputs={"x_ptr": Rand(t, (M, K))},
                          outputs={"out_ptr": Out(t, (M, K))},
                          reference=(lambda d: lambda x_ptr: np.flip(x_ptr, 1 if d == -1 else d))(dim)))
for t in ("fp32", "int8", "fp16"):
    CASES.append(Case(id=f"compat/interleave-{t}", kernel=interleave_kernel, constexprs={"K": K},
                      inputs={"a_ptr": Rand(t, (K,)), "b_ptr": Rand(t, (K,))}, outputs={"out_ptr": Out(t, (2 * K,))},
                      reference=lambda a_ptr, b_ptr: np.stack([a_ptr, b_ptr], 1).reshape(-1)))
for axis, (im, ik) in ((0, (4, K)), (1, (M, 16)), (1, (M, K))):
    for t in ("fp32", "int32"):
        ext = M if axis == 0 else K
        CASES.append(Case(
            id=f"compat/gather-axis{axis}-{im}x{ik}-{t}", kernel=gather_kernel,
            constexprs={"AXIS": axis, "M": M, "K": K, "IM": im, "IK": ik},
            inputs={"src_ptr": Rand(t, (M, K)),
                    "idx_ptr": Gen("int32", (im, ik), (lambda e: lambda rng, s: rng.integers(0, e, s))(ext))},
            outputs={"out_ptr": Out(t, (im, ik))},
            reference=(lambda a: lambda src_ptr, idx_ptr: np.take_along_axis(
                src_ptr if a == 1 or src_ptr.shape[0] == idx_ptr.shape[0] else src_ptr, idx_ptr.astype(np.int64), a))(axis)))
CASES.append(Case(id="compat/gather-1d-method-int64-index", kernel=gather_1d_kernel, constexprs={"K": 64},
                  inputs={"src_ptr": Rand("fp16", (64,)), "idx_ptr": Gen("int64", (64,), lambda rng, s: rng.integers(0, 64, s))},
                  outputs={"out_ptr": Out("fp16", (64,))}, reference=lambda src_ptr, idx_ptr: src_ptr[idx_ptr]))
for t, bins in (("int32", 16), ("uint8", 32), ("int64", 8)):
    for masked in (False, True):
        CASES.append(Case(
            id=f"compat/histogram-{t}-{bins}{'-masked' if masked else ''}", kernel=histogram_kernel,
            constexprs={"NX": 256, "BINS": bins, "MASKED": masked},
            inputs={"x_ptr": Gen(t, (256,), (lambda b: lambda rng, s: rng.integers(0, b, s))(bins)), "n": 200},
            outputs={"out_ptr": Out("int32", (bins,))},
            reference=(lambda b, m: lambda x_ptr, n: np.bincount(x_ptr[:n] if m else x_ptr, minlength=b)
                       .astype(np.int32))(bins, masked)))
for si, sj, sg in ((8, 8, 4), (8, 16, 2), (16, 4, 8), (8, 8, 3)):
    CASES.append(Case(id=f"compat/swizzle2d-{si}x{sj}-g{sg}", kernel=swizzle_kernel,
                      constexprs={"SI": si, "SJ": sj, "SG": sg},
                      outputs={"out_i_ptr": Out("int32", (si, sj)), "out_j_ptr": Out("int32", (si, sj))},
                      reference=(lambda a, b, c: lambda: _swizzle_ref(a, b, c))(si, sj, sg)))
CASES.append(Case(id="compat/swizzle2d-program-ids", kernel=swizzle_pid_kernel, grid=(8 * 4,),
                  constexprs={"SI": 8, "SJ": 4, "SG": 3}, outputs={"out_ptr": Out("int32", (32,))},
                  reference=lambda: (lambda ij: (ij[0] * 100 + ij[1]).reshape(-1))(_swizzle_ref(8, 4, 3))))
for t in ("int32", "uint8"):
    CASES.append(Case(id=f"compat/reduce_or-{t}", kernel=reduce_or_kernel, constexprs={"M": M, "K": K},
                      inputs={"x_ptr": Gen(t, (M, K), lambda rng, s: np.left_shift(1, rng.integers(0, 7, s)))},
                      outputs={"out_ptr": Out(t, (M,))},
                      reference=lambda x_ptr: np.bitwise_or.reduce(x_ptr, axis=1)))
