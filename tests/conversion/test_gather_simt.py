"""``tt.gather``'s shared lowering run for real on the CPU (the host SIMT target of :mod:`simt`:
one OS thread per GPU thread, real barriers): the source stored row-major in the op's scratch
buffer, each thread reading what its index selects.  Checked against ``numpy.take_along_axis`` on
random indices, with the result poisoned first, for the source and index layouts that differ
(indices wider than the source along the axis, narrower, 3-D, a 1-D gather) and for
out-of-range indices, which read ``index mod extent`` as the interpreter does."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import simt  # noqa: E402

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.hooks.types import GPUTarget, Options  # noqa: E402
from tritium.ttgir.ir import print_module  # noqa: E402
from tritium.ttgir.pass_lists import make_ttgir  # noqa: E402
from tritium.ttir.ir import parse_module  # noqa: E402


@tritium.jit
def gather2d(src_ptr, idx_ptr, out_ptr, AXIS: tl.constexpr, S0: tl.constexpr, S1: tl.constexpr,
             I0: tl.constexpr, I1: tl.constexpr):
    s_off = tl.arange(0, S0)[:, None] * S1 + tl.arange(0, S1)[None, :]
    i_off = tl.arange(0, I0)[:, None] * I1 + tl.arange(0, I1)[None, :]
    out = tl.gather(tl.load(src_ptr + s_off), tl.load(idx_ptr + i_off), AXIS)
    tl.store(out_ptr + i_off, out)


@tritium.jit
def gather3d(src_ptr, idx_ptr, out_ptr, AXIS: tl.constexpr, S0: tl.constexpr, S1: tl.constexpr,
             S2: tl.constexpr, I0: tl.constexpr, I1: tl.constexpr, I2: tl.constexpr):
    s_off = (tl.arange(0, S0)[:, None, None] * (S1 * S2) + tl.arange(0, S1)[None, :, None] * S2
             + tl.arange(0, S2)[None, None, :])
    i_off = (tl.arange(0, I0)[:, None, None] * (I1 * I2) + tl.arange(0, I1)[None, :, None] * I2
             + tl.arange(0, I2)[None, None, :])
    out = tl.gather(tl.load(src_ptr + s_off), tl.load(idx_ptr + i_off), AXIS)
    tl.store(out_ptr + i_off, out)


@tritium.jit
def gather1d(src_ptr, idx_ptr, out_ptr, S: tl.constexpr, I: tl.constexpr):
    i_off = tl.arange(0, I)
    out = tl.gather(tl.load(src_ptr + tl.arange(0, S)), tl.load(idx_ptr + i_off), 0)
    tl.store(out_ptr + i_off, out)


_NP = {"fp32": np.float32, "fp16": np.float16, "i32": np.int32, "i64": np.int64, "i8": np.int8, "i16": np.int16}


def _ttgir(fn, sig, constexprs, num_warps):
    ttir = tritium.compile(fn, signature=sig, constexprs=constexprs, target="interpreter", stage="ttir").asm["ttir"]
    return make_ttgir(parse_module(ttir), GPUTarget("cuda", 90, 32), Options(num_warps=num_warps, threads_per_warp=32))


def _run(fn, src_shape, idx_shape, axis, constexprs, dtype="fp32", itype="i32", num_warps=4, lo=0, hi=None, seed=0):
    rng = np.random.default_rng(seed)
    n = src_shape[axis]
    src = (rng.standard_normal(src_shape) * 100).astype(_NP[dtype])
    idx = rng.integers(lo, n if hi is None else hi, idx_shape).astype(_NP[itype])
    out = np.full(idx_shape, 12345, _NP[dtype])  # poison: an unwritten element shows
    module = _ttgir(fn, {"src_ptr": f"*{dtype}", "idx_ptr": f"*{itype}", "out_ptr": f"*{dtype}"}, constexprs,
                    num_warps)
    text = print_module(module)
    assert "tt.gather" in text
    assert simt.run_ttgir(module, [src, idx, out]) == 0
    width = np.dtype(_NP[itype]).itemsize * 8
    wrapped = idx.astype(np.int64) & ((1 << width) - 1) if width < 32 else idx.astype(np.int64)
    np.testing.assert_array_equal(out, np.take_along_axis(src, np.mod(wrapped, n), axis))


@pytest.mark.parametrize("src_shape,idx_shape,axis", [
    ([128, 64], [256, 64], 0), ([128, 64], [128, 128], 1), ([4, 4], [8, 4], 0), ([32, 16], [32, 8], 1),
])
def test_gather_2d(src_shape, idx_shape, axis):
    _run(gather2d, src_shape, idx_shape, axis,
         dict(AXIS=axis, S0=src_shape[0], S1=src_shape[1], I0=idx_shape[0], I1=idx_shape[1]))


def test_gather_3d_fp16_i64_index():
    s, i = [4, 8, 16], [4, 32, 16]
    _run(gather3d, s, i, 1, dict(AXIS=1, S0=s[0], S1=s[1], S2=s[2], I0=i[0], I1=i[1], I2=i[2]),
         dtype="fp16", itype="i64")


def test_gather_1d_small_index_one_warp():
    _run(gather1d, [64], [16], 0, dict(S=64, I=16), itype="i16", num_warps=1)


def test_gather_out_of_range_reads_index_mod_extent():
    _run(gather2d, [16, 8], [32, 8], 0, dict(AXIS=0, S0=16, S1=8, I0=32, I1=8), lo=-40, hi=40)
    _run(gather1d, [16], [32], 0, dict(S=16, I=32), itype="i8", lo=-128, hi=128)


@tritium.jit
def gather_chain_loop(src_ptr, idx_ptr, out_ptr, N: tl.constexpr, STEPS: tl.constexpr):
    # a gather of a gather's result, STEPS times: each op's scratch is written while the previous
    # one's may still be read, so membar has to order the two
    offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(src_ptr + offs)
    idx = tl.load(idx_ptr + offs)
    for _ in range(STEPS):
        x = tl.gather(x, idx, 1) + 1.0
        x = tl.gather(x, tl.trans(idx), 0)
    tl.store(out_ptr + offs, x)


def test_chained_gathers_in_a_loop():
    n, steps = 32, 3
    rng = np.random.default_rng(5)
    src = rng.standard_normal((n, n)).astype(np.float32)
    idx = rng.integers(0, n, (n, n)).astype(np.int32)
    out = np.full((n, n), np.nan, np.float32)
    module = _ttgir(gather_chain_loop, {"src_ptr": "*fp32", "idx_ptr": "*i32", "out_ptr": "*fp32"},
                    dict(N=n, STEPS=steps), 4)
    assert simt.run_ttgir(module, [src, idx, out]) == 0
    x = src
    for _ in range(steps):
        x = np.take_along_axis(x, idx, 1) + np.float32(1.0)
        x = np.take_along_axis(x, idx.T, 0)
    np.testing.assert_array_equal(out, x)
