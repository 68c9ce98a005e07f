"""CPU-only: the flash-attention backward of ``bench/matmul_kernels.py`` compiles for sm_90 with
its K loops software-pipelined.  Its ``do`` (and ``q``, ``k``) tiles feed one dot as they are and
another transposed: the pipeline copies each tile once, into one buffer that the second dot reads
through a transposed view (``ttg.memdesc_trans``), so even head dim 128 fits."""
import os
import re
import sys

import pytest

import tritium

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_files import bench_kernels  # noqa: E402


@pytest.fixture(scope="module")
def kernels():
    return bench_kernels("attn_bwd_test", "matmul_kernels.py")


def _compile(kernels, fn, d, stages):
    outs = ("DK", "DV") if fn == "attn_bwd_dkdv" else ("DQ",)
    sig = {n: "*fp16" for n in ("Q", "K", "V", "DO")}
    sig.update(LSE="*fp32", Delta="*fp32", **{o: "*fp16" for o in outs}, sm_scale="fp32", N_CTX="i32")
    # as the benchmark launches it: 16-byte aligned tensors, N_CTX a multiple of 16
    attrs = {n: {"tt.divisibility": 16} for n, t in sig.items() if t.startswith("*") or n == "N_CTX"}
    return tritium.compile(getattr(kernels, fn), target="cuda:90", signature=sig, attrs=attrs,
                           constexprs={"HEAD_DIM": d, "BLOCK_M": 64, "BLOCK_N": 64, "CAUSAL": False},
                           num_warps=4, num_stages=stages)


def _loop_body(ttgir: str) -> str:
    start = ttgir.index("scf.for")
    return ttgir[start:ttgir.index("scf.yield", start)]


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("fn,views", [("attn_bwd_dkdv", 2), ("attn_bwd_dq", 1)])  # q and do; k
def test_shared_tiles_are_pipelined_once_and_read_transposed(kernels, fn, views, d):
    k = _compile(kernels, fn, d, 3)
    body = _loop_body(k.asm["ttgir"])
    # (q, do) or (k, v): each once; dK/dV's loop also copies the rows' LSE and delta ahead (1-d
    # fp32 stream loads) and reads them back in the layout of their use
    streams = 2 if fn == "attn_bwd_dkdv" else 0
    assert body.count("ttg.async_copy_global_to_local") == 2 + streams
    assert len(re.findall(r"async_copy_global_to_local[^\n]*tensor<64x!tt\.ptr<f32>", body)) == streams
    assert len(re.findall(r"ttg\.local_load[^\n]*-> tensor<64xf32, #ttg\.slice", body)) == streams
    assert body.count("ttg.memdesc_trans") == views and "tt.trans" not in body
    assert "tt.load" not in body and not re.search(r"convert_layout[^\n]*: tensor<64xf32", body)
    ptx = k.asm["ptx"]
    assert "wgmma.mma_async" in ptx and "cp.async.cg.shared.global" in ptx
    assert k.n_spills == 0


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("fn", ["attn_bwd_dkdv", "attn_bwd_dq"])
def test_two_wgmma_waits_an_iteration(kernels, fn, d):
    """Of the loop's dots only those whose results the iteration reads (``Q K^T`` and ``dO V^T``)
    are waited for; the accumulators' (dV, dK, dQ) run on until the next iteration's first wait,
    which takes them as operands.  dK/dV at d128 keeps a spare slot for that (a refill two
    iterations after the read, the copies issued before the first dot); elsewhere the copies go
    after the last dot (the late refill), found through the transposed views it reads."""
    k = _compile(kernels, fn, d, 3)
    ttgir = k.asm["ttgir"]
    body = _loop_body(ttgir)
    waits = re.findall(r"ttng\.warp_group_dot_wait ([^{]*)\{pendings = 0", body)
    assert len(waits) == 2 and len(re.findall(r"ttng\.warp_group_dot ", body)) == (4 if fn == "attn_bwd_dkdv" else 3)
    accumulators = 2 if fn == "attn_bwd_dkdv" else 1
    assert waits[0].count("%") == 1 + accumulators  # the first wait also retires the carried accumulators
    spare = fn == "attn_bwd_dkdv" and d == 128
    assert ("memdesc<4x" in ttgir) == spare
    last_dot = body.rindex("ttng.warp_group_dot ")
    copies = [m.start() for m in re.finditer("async_copy_global_to_local", body)]
    assert all(c < body.index("ttng.warp_group_dot ") for c in copies) if spare else all(c > last_dot for c in copies)
    assert k.n_spills == 0
