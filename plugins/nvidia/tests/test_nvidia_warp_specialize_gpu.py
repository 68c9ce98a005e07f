"""On a CUDA device of compute capability 9.0: loops marked ``tl.range(..., warp_specialize=True)``
run with a producer warp group (``passes/warp_specialize.py``) and compute what the same loop
without it computes, on ragged shapes (tiles overhanging M, N and K, one K iteration, more
iterations than slots), for host descriptors and descriptors made in the kernel.  A wrong
barrier phase hangs: run under a time limit (``timeout 300 python -m pytest -q ...``)."""
import math
import os
import sys

import pytest

from tritium.tools.tensor_descriptor import TensorDescriptor
from tritium_nvidia.plugin import nvidia_plugin as plugin

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_files import bench_kernels  # noqa: E402

ws_kernels = bench_kernels("ws_tritium_gpu_test", "ws_kernels.py")

pytestmark = pytest.mark.skipif(not plugin.tritium_device_present("nvidia"), reason="no CUDA device")
torch = pytest.importorskip("torch")

CONFIGS = [(128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (64, 128, 64, 4, 3), (128, 128, 64, 8, 2)]
SHAPES = [(1000, 1112, 1000), (256, 512, 64), (384, 256, 2048), (128, 128, 8 * 64 + 16)]


@pytest.fixture(autouse=True)
def _sm90(monkeypatch):
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("warp specialization is for compute capability 9.0")
    monkeypatch.setenv("TRITIUM_TMA", "1")


def _run(m, n, k, cfg, dtype, ws):
    bm, bn, bk, warps, stages = cfg
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
    grid = (triton_cdiv(m, bm), triton_cdiv(n, bn))
    kern = ws_kernels.ws_matmul[grid](TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bn, bk]),
                                      TensorDescriptor.from_tensor(c, [bm, bn]), k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                      WS=ws, num_warps=warps, num_stages=stages)
    torch.cuda.synchronize()
    return a, b, c, kern


def triton_cdiv(x, y):
    return (x + y - 1) // y


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_host_descriptors(shape, cfg, dtype):
    m, n, k = shape
    a, b, c, kern = _run(m, n, k, cfg, dtype, True)
    assert "setmaxnreg.dec" in kern.asm["ptx"], kern.asm["ttgir"][-3000:]
    assert kern.metadata["num_warps"] == cfg[3] + 4
    ref = (a.double() @ b.double().T)
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err
    # the same loop without the producer: the same sums in the same order
    _, _, c2, kern2 = _run_same(a, b, cfg, dtype)
    assert "setmaxnreg" not in kern2.asm["ptx"]
    torch.testing.assert_close(c, c2, rtol=0, atol=0)


def _run_same(a, b, cfg, dtype):
    bm, bn, bk, warps, stages = cfg
    m, k = a.shape
    n = b.shape[0]
    c = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
    kern = ws_kernels.ws_matmul[(triton_cdiv(m, bm), triton_cdiv(n, bn))](
        TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bn, bk]),
        TensorDescriptor.from_tensor(c, [bm, bn]), k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, WS=False,
        num_warps=warps, num_stages=stages)
    torch.cuda.synchronize()
    return a, b, c, kern


@pytest.mark.parametrize("shape", [(1040, 1136, 1040), (256, 512, 64), (384, 256, 2048)],
                         ids=lambda s: "x".join(map(str, s)))
def test_descriptors_made_in_the_kernel(shape):
    # sizes multiples of 16, so that the strides are proven 16-byte aligned and the maps are built
    # in the kernel (a ragged size takes block pointers: no copies for a producer to issue)
    m, n, k = shape
    bm, bn, bk, warps, stages = CONFIGS[0]
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    kern = ws_kernels.ws_matmul_device_desc[(triton_cdiv(m, bm), triton_cdiv(n, bn))](
        a, b, c, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, WS=True, num_warps=warps, num_stages=stages)
    torch.cuda.synchronize()
    assert "setmaxnreg.dec" in kern.asm["ptx"]
    ref = a.double() @ b.double()
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err


def test_many_launches_back_to_back():
    """Barrier phases carried across many launches and programs: 200 launches, every result checked."""
    cfg = CONFIGS[1]
    a, b, c, _ = _run(512, 512, 1024, cfg, torch.float16, True)
    ref = c.clone()
    bm, bn, bk, warps, stages = cfg
    da, db, dc = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bn, bk]),
                  TensorDescriptor.from_tensor(c, [bm, bn]))
    for _ in range(200):
        c.fill_(float("nan"))
        ws_kernels.ws_matmul[(4, 4)](da, db, dc, 1024, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, WS=True,
                                     num_warps=warps, num_stages=stages)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, ref, rtol=0, atol=0)


attention = bench_kernels("ws_attention_gpu_test", "attention_kernels.py")


@pytest.mark.parametrize("d, bm, bn, warps, stages", [(64, 128, 128, 8, 3), (128, 128, 128, 8, 3), (128, 128, 64, 8, 2),
                                                      (64, 128, 64, 4, 3)], ids=lambda v: str(v))
@pytest.mark.parametrize("n_ctx", [128, 384, 1024])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention(d, bm, bn, warps, stages, n_ctx, causal):
    _attention(d, bm, bn, warps, stages, n_ctx, causal, False)


@pytest.mark.parametrize("d, bn, stages", [(64, 128, 3), (128, 128, 3), (128, 64, 2)], ids=lambda v: str(v))
@pytest.mark.parametrize("n_ctx", [128, 1024])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention_pingpong(d, bn, stages, n_ctx, causal):
    """The same with option ``pingpong``: the two consumer groups' turns must neither hang nor
    change a result."""
    _attention(d, 128, bn, 8, stages, n_ctx, causal, True)


@pytest.mark.parametrize("d, bn, stages, causal", [(64, 64, 3, False), (64, 64, 3, True), (128, 64, 2, False)],
                         ids=lambda v: str(v))
def test_attention_two_blocks_an_sm(d, bn, stages, causal):
    """One consumer warp group: the register split is made for two blocks an SM, and 1,024
    blocks (more than two an SM of the GPU) run side by side with their barriers and split.
    (d128 causal spills past the budget under that split and keeps the whole file.)"""
    kern = _attention(d, 128, bn, 4, stages, 1024, causal, False, z=4, h=32)
    assert kern.metadata["ws_blocks_per_sm"] == 2 and kern.metadata["n_regs"] == 128


def _attention(d, bm, bn, warps, stages, n_ctx, causal, pingpong, z=2, h=3):
    """The benchmark's descriptor attention with its K/V loop warp-specialized, against float64:
    the output and each row's log2-sum-exp2 (outputs poisoned; one K/V block up to eight)."""
    q, k, v = (torch.randn(z, h, n_ctx, d, device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    lse = torch.full((z, h, n_ctx), float("nan"), device="cuda")
    kern = attention.attn_fwd_desc[(triton_cdiv(n_ctx, bm), z * h)](
        q, k, v, o, lse, d ** -0.5, z, h, n_ctx, HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, WS=True,
        num_warps=warps, num_stages=stages, pingpong=pingpong)
    torch.cuda.synchronize()
    assert "setmaxnreg.dec" in kern.asm["ptx"] and kern.metadata["num_warps"] == warps + 4
    assert ("bar.arrive \t2, 256;" in kern.asm["ptx"]) == (pingpong and warps == 8)
    s = (q.double() @ k.double().transpose(-1, -2)) * d ** -0.5
    if causal:
        s = s.masked_fill(torch.ones(n_ctx, n_ctx, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
    ref = torch.softmax(s, -1) @ v.double()
    err = ((o.double() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err
    assert (lse.double() - torch.logsumexp(s, -1) / math.log(2)).abs().max().item() < 1e-2
    return kern


import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402


@tritium.jit
def _two_loops(a_desc, b_desc, c_desc, SPLIT, TOTAL, BLOCK_N: tl.constexpr):
    # C = A0 @ (B_0 + ... + B_{TOTAL-1}).T: one A tile read by two loops, the first warp-specialized
    a = a_desc.load([0, 0])
    acc = tl.zeros((128, BLOCK_N), dtype=tl.float32)
    for i in tl.range(0, SPLIT, warp_specialize=True):
        acc = tl.dot(a, b_desc.load([i * BLOCK_N, 0]).T, acc)
    for i in tl.range(SPLIT, TOTAL):
        acc = tl.dot(a, b_desc.load([i * BLOCK_N, 0]).T, acc)
    c_desc.store([0, 0], acc.to(c_desc.dtype))


@pytest.mark.parametrize("split, total", [(0, 3), (1, 1), (2, 7), (9, 12)])
@pytest.mark.parametrize("warps", [4, 8])
def test_a_loop_after_the_specialized_one(split, total, warps):
    """A tile copied once for two loops, the first with the producer, the second pipelined as
    usual by the consumers alone after it (its copies issued by their first thread, its block
    barriers named ones); either loop may be empty."""
    a = torch.randn(128, 64, device="cuda", dtype=torch.float16)
    b = torch.randn(total * 128, 64, device="cuda", dtype=torch.float16)
    c = torch.full((128, 128), float("nan"), device="cuda", dtype=torch.float16)
    kern = _two_loops[(1,)](TensorDescriptor.from_tensor(a, [128, 64]), TensorDescriptor.from_tensor(b, [128, 64]),
                            TensorDescriptor.from_tensor(c, [128, 128]), split, total, BLOCK_N=128,
                            num_warps=warps, num_stages=3)
    torch.cuda.synchronize()
    assert "setmaxnreg.dec" in kern.asm["ptx"]
    ref = a.double() @ b.double().reshape(total, 128, 64).sum(0).T
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err
