"""A mask comparing rows against a range of columns in a dot's accumulator layout (causal
attention's ``offs_m[:, None] >= start_n + offs_n[None, :]``) compiles to compares against
immediates, and the masked ``qk * scale + where(mask, 0, -1e6)`` to two fmas and a select
(``core/conversion/ttgir_to_llvm/affine_compare.py``): the d64 attention kernel with 128x128 blocks
fits two blocks an SM again.  CPU: its registers on sm_90.  GPU: masks at wrap-around edges against
numpy's int32 arithmetic, for every comparison and both operand orders."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium_nvidia.plugin import nvidia_plugin as plugin


@triton.jit
def _attn_causal(q_ptr, k_ptr, v_ptr, o_ptr, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr):
    """The descriptor attention's causal form (K/V by TMA): the blocks left of the diagonal, then
    the diagonal's, masked."""
    start_m = tl.program_id(0)
    q_desc = tl.make_tensor_descriptor(q_ptr, [N_CTX, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(k_ptr, [N_CTX, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(v_ptr, [N_CTX, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    q = q_desc.load([start_m * BLOCK_M, 0])
    for start_n in range(0, start_m * BLOCK_M, BLOCK_N):
        qk = tl.dot(q, k_desc.load([start_n, 0]).T)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * 0.125)
        p = tl.math.exp2(qk * 0.125 - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v_desc.load([start_n, 0]))
        m_i = m_ij
    for start_n in range(start_m * BLOCK_M, (start_m + 1) * BLOCK_M, BLOCK_N):
        qk = tl.dot(q, k_desc.load([start_n, 0]).T)
        qk = qk * 0.125 + tl.where(offs_m[:, None] >= start_n + offs_n[None, :], 0.0, -1.0e6)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v_desc.load([start_n, 0]))
        m_i = m_ij
    tl.store(o_ptr + offs_m[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :], acc / l_i[:, None])


def test_causal_attention_128x128_fits_two_blocks(monkeypatch, tmp_path):
    """169 registers before (one block an SM: its 8 warps need 128 for two)."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    sig = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp32", "N_CTX": "i32"}
    k = triton.compile(_attn_causal, target="cuda:90", signature=sig,
                       constexprs={"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 128},
                       attrs={n: {"tt.divisibility": 16} for n in sig}, num_warps=8, num_stages=3)
    assert k.metadata["n_regs"] <= 128, k.metadata["n_regs"]
    ptx = k.asm["ptx"]
    assert "wgmma.mma_async" in ptx and "cp.async.bulk.tensor" in ptx, "the TMA + wgmma kernel"


_OPS = {0: np.greater_equal, 1: np.greater, 2: np.less_equal, 3: np.less, 4: np.equal, 5: np.not_equal}


@triton.jit
def _masked_scores(q_ptr, k_ptr, s_ptr, m_ptr, a, s, OP: tl.constexpr, ROWS_LEFT: tl.constexpr):
    r = tl.arange(0, 128)
    c = tl.arange(0, 128)
    d = tl.arange(0, 32)
    qk = tl.dot(tl.load(q_ptr + r[:, None] * 32 + d[None, :]), tl.load(k_ptr + c[None, :] * 32 + d[:, None]))
    rows = (a + r)[:, None]
    cols = s + c[None, :]
    lhs, rhs = (rows, cols) if ROWS_LEFT else (cols, rows)
    if OP == 0:
        mask = lhs >= rhs
    elif OP == 1:
        mask = lhs > rhs
    elif OP == 2:
        mask = lhs <= rhs
    elif OP == 3:
        mask = lhs < rhs
    elif OP == 4:
        mask = lhs == rhs
    else:
        mask = lhs != rhs
    qk = qk * 0.5 + tl.where(mask, 0.0, -1.0e6)
    tl.store(s_ptr + r[:, None] * 128 + c[None, :], qk)
    tl.store(m_ptr + r[:, None] * 128 + c[None, :], tl.where(mask, 1, 0))


@pytest.mark.skipif(not plugin.tritium_device_present("nvidia"), reason="no CUDA device")
@pytest.mark.parametrize("rows_left", [True, False])
@pytest.mark.parametrize("op", list(_OPS))
@pytest.mark.parametrize("a,s", [(0, 0), (64, 0), (2**31 - 100, 2**31 - 60), (-2**31, 2**31 - 100),
                                 (2**31 - 1, -2**31), (1000, 2**31 - 128)])
def test_masks_on_the_gpu(op, rows_left, a, s):
    torch = pytest.importorskip("torch")
    g = torch.Generator(device="cuda").manual_seed(11)
    q = (torch.rand(128, 32, device="cuda", generator=g) * 2 - 1).half()
    k = (torch.rand(128, 32, device="cuda", generator=g) * 2 - 1).half()
    scores = torch.full((128, 128), float("nan"), device="cuda")
    mask = torch.full((128, 128), -7, device="cuda", dtype=torch.int32)
    _masked_scores[(1,)](q, k, scores, mask, a, s, OP=op, ROWS_LEFT=rows_left, num_warps=8)
    wrap = lambda x: ((np.asarray(x, dtype=np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)  # noqa: E731
    rows = wrap(np.int64(a) + np.arange(128))[:, None]
    cols = wrap(np.int64(s) + np.arange(128))[None, :]
    ref = _OPS[op](rows, cols) if rows_left else _OPS[op](cols, rows)
    np.testing.assert_array_equal(mask.cpu().numpy(), ref.astype(np.int32))
    qk = q.double().cpu().numpy() @ k.double().cpu().numpy().T * 0.5
    np.testing.assert_allclose(scores.cpu().numpy(), np.where(ref, qk, qk - 1.0e6), rtol=1e-5, atol=1e-3)
