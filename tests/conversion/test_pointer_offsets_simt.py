"""The ``pointer-offsets`` pass (a loop-carried pointer tensor advanced by one loop-invariant scalar
becomes its start plus a carried 64-bit offset), checked for its shape and run for real on the CPU
with the host SIMT target of :mod:`simt`: loops advancing by a runtime stride and by a constant,
alone and after the pipeline pass, with the pointers also used after the loop, against numpy."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import simt  # noqa: E402

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.hooks.types import GPUTarget, Options  # noqa: E402
from tritium.ttgir.encodings import DotOperandEncodingAttr, SwizzledSharedEncodingAttr  # noqa: E402
from tritium.ttgir.ir import print_module  # noqa: E402
from tritium.ttgir.passes.software_pipeline import Pipeline  # noqa: E402
from tritium.ttgir.passes.pointer_offsets import PointerOffsets  # noqa: E402
from tritium.ttgir.pass_lists import make_ttgir  # noqa: E402
from tritium.ttir.ir import parse_module  # noqa: E402

BM, BN, BK = 16, 16, 16


@tritium.jit
def k_loop(a_ptr, b_ptr, c_ptr, K, stride_bk, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK                 # a constant step
        b_ptrs += BK * stride_bk     # a runtime step
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)


@tritium.jit
def walk(x_ptr, out_ptr, n_steps, step, BLOCK: tl.constexpr):
    """Sums ``n_steps`` blocks ``step`` elements apart, then stores the block after them: the
    advanced pointers are used after the loop."""
    ptrs = x_ptr + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for _ in range(n_steps):
        acc += tl.load(ptrs)
        ptrs += step
    tl.store(out_ptr + tl.arange(0, BLOCK), acc + tl.load(ptrs))


def _operand_buffer(convert):
    if not isinstance(convert.result.type.encoding, DotOperandEncodingAttr):
        return None
    return SwizzledSharedEncodingAttr(1, 1, 1, convert.src.type.encoding.order)


def _module(fn, sig, consts, pipeline_stages=0):
    ttir = tritium.compile(fn, signature=sig, constexprs=consts, target="interpreter", stage="ttir").asm["ttir"]
    module = make_ttgir(parse_module(ttir), GPUTarget("cuda", 80, 32), Options(num_warps=2, threads_per_warp=32))
    if pipeline_stages:
        p = Pipeline(pipeline_stages, copy="registers", operand_buffer=_operand_buffer)
        p.run(module)
        assert not p.skipped
    PointerOffsets().run(module)
    return module


_KSIG = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "K": "i32", "stride_bk": "i32"}
_KCONST = {"BM": BM, "BN": BN, "BK": BK}


def _loop_head(text: str) -> str:
    start = text.index("scf.for")
    return text[start:text.index("\n", start)]


@pytest.mark.parametrize("stages", [0, 3])
def test_no_pointer_tensor_is_carried(stages):
    text = print_module(_module(k_loop, _KSIG, _KCONST, stages))
    head = _loop_head(text)
    assert "!tt.ptr" not in head.split("->")[1]  # the loop's results: no pointer tensors
    assert head.count(": i64") == 0 and head.split("->")[1].count("i64") >= 2  # two carried offsets
    body = text[text.index("scf.for"):text.index("scf.yield")]
    assert "tensor<16x16xi64" in body  # start + splat(offset)


@pytest.mark.parametrize("stages", [0, 2, 3])
@pytest.mark.parametrize("K", [0, 16, 40, 80])
def test_the_loop_computes_the_same(K, stages):
    rng = np.random.default_rng(K + stages)
    stride_bk = BN + 3  # rows of B padded: a runtime step that is not the row length
    a = rng.standard_normal((BM, max(K, 1))).astype(np.float32)
    b_full = rng.standard_normal((max(K, 1), stride_bk)).astype(np.float32)
    c = np.full((BM, BN), np.nan, np.float32)
    assert simt.run_ttgir(_module(k_loop, _KSIG, _KCONST, stages), [a, b_full, c, K, stride_bk]) == 0
    want = a[:, :K].astype(np.float64) @ b_full[:K, :BN].astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n_steps", [0, 1, 5])
def test_pointers_used_after_the_loop(n_steps):
    block, step = 32, 40
    rng = np.random.default_rng(n_steps)
    x = rng.standard_normal(block + step * (n_steps + 1)).astype(np.float32)
    out = np.full(block, np.nan, np.float32)
    module = _module(walk, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_steps": "i32", "step": "i32"},
                     {"BLOCK": block})
    assert "!tt.ptr" not in _loop_head(print_module(module)).split("->")[1]
    assert simt.run_ttgir(module, [x, out, n_steps, step]) == 0
    want = sum(x[i * step:i * step + block].astype(np.float64) for i in range(n_steps)) \
        + x[n_steps * step:n_steps * step + block]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
