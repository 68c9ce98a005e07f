"""FMA dots run for real on the CPU (the host SIMT target of :mod:`simt`): the operands go through
the ``fma-operands-through-shared`` buffers, are read back into the ``#ttg.dot_op`` layouts by the
base-plus-immediate path of ``ttg.local_load`` (rows and columns of a plain row-major buffer), and
the multiply-adds run K-outermost with each read moved down to its first use.  Every shape and warp
count below gives a different result layout (1x1, 2x2 and 4x4 blocks a thread, warps along M, N or
both, repeated tiles); the result is checked against numpy in float64 on fresh random inputs, and
the output starts as NaN so that an element nobody writes shows."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import simt  # noqa: E402

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.hooks.types import GPUTarget, Options  # noqa: E402
from tritium.ttgir.pass_lists import make_ttgir  # noqa: E402
from tritium.ttir.ir import parse_module  # noqa: E402


@tritium.jit
def fma_dot(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], c)


@pytest.mark.parametrize("bm, bn, bk, warps", [(16, 16, 16, 1), (32, 32, 8, 2), (64, 32, 16, 4), (32, 64, 4, 4),
                                               (128, 16, 8, 2), (16, 128, 16, 2)])
def test_fma_dot_computes(bm, bn, bk, warps):
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}
    ttir = tritium.compile(fma_dot, signature=sig, constexprs={"BM": bm, "BN": bn, "BK": bk}, target="interpreter",
                           stage="ttir").asm["ttir"]
    module = make_ttgir(parse_module(ttir), GPUTarget("cuda", 80, 32), Options(num_warps=warps, threads_per_warp=32))
    rng = np.random.default_rng(bm * 1000 + bn * 10 + bk)
    a = rng.standard_normal((bm, bk)).astype(np.float32)
    b = rng.standard_normal((bk, bn)).astype(np.float32)
    c = np.full((bm, bn), np.nan, np.float32)
    assert simt.run_ttgir(module, [a, b, c]) == 0
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)
