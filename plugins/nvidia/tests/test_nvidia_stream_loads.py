"""A pipelined K loop's loads into registers (``Pipeline(stream_buffer=)``): besides the dot's
tiles, 32/64-bit loads of the same loop (a per-block weight row here, attention's LSE and delta)
are copied ahead with ``cp.async`` into plain slots and read back with ``ttg.local_load`` in the
layout their users want, replacing the load and its conversion through shared memory.  The IR is
checked on the CPU for sm_80 and sm_90; on a CUDA device the kernel runs against float64 numpy,
ragged and masked (masked-off lanes of a copied load read zero).  A load with a non-zero
``other``, a 16-bit load and an indirect one keep their place, as every such load does with the
``stream_loads=False`` option."""
import re

import numpy as np
import pytest

import tritium
import tritium.language as tl


@tritium.jit
def weighted_blocks(a_ptr, b_ptr, w_ptr, c_ptr, M, N, K, W_OTHER: tl.constexpr,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """c = sum over K blocks kb of (a[:, kb] @ b[kb, :]) * w[kb, :] (w masked to the first N
    columns, so the padded columns of c must come out 0)."""
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BK)):
        k0 = kb * BK
        a = tl.load(a_ptr + offs_m[:, None] * K + (k0 + offs_k)[None, :],
                    mask=(offs_m[:, None] < M) & ((k0 + offs_k)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + offs_k)[:, None] * BN + offs_n[None, :], mask=(k0 + offs_k)[:, None] < K, other=0.0)
        if W_OTHER:
            w = tl.load(w_ptr + kb * BN + offs_n, mask=offs_n < N, other=1.0)
        else:
            w = tl.load(w_ptr + kb * BN + offs_n, mask=offs_n < N)
        acc += tl.dot(a, b) * w[None, :]
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc, mask=offs_m[:, None] < M)


@tritium.jit
def gathered_rows(a_ptr, b_ptr, idx_ptr, table_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):
    """An indirect load in a pipelined loop: ``idx`` is copied ahead, ``table[idx]`` stays."""
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + offs_m[:, None] * K + (k0 + offs_k)[None, :])
        b = tl.load(b_ptr + (k0 + offs_k)[:, None] * BN + offs_n[None, :])
        idx = tl.load(idx_ptr + k0 // BK * BN + offs_n)
        acc += tl.dot(a, b) * tl.load(table_ptr + idx)[None, :]
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)


SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "w_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"}


def _body(ttgir: str) -> str:
    start = ttgir.index("scf.for")
    return ttgir[start:ttgir.index("scf.yield", start)]


def _compile(target, w_other=False, w_type="*fp32", stages=3, **kw):
    return tritium.compile(weighted_blocks, target=target, signature=dict(SIG, w_ptr=w_type),
                           constexprs={"W_OTHER": w_other, "BM": 64, "BN": 64, "BK": 32},
                           num_warps=4, num_stages=stages, **kw)


@pytest.mark.parametrize("target", ["cuda:80", "cuda:90"])
def test_the_weight_row_is_copied_ahead_and_read_in_its_use_layout(target):
    k = _compile(target)
    body = _body(k.asm["ttgir"])
    assert "tt.load" not in body
    assert len(re.findall(r"async_copy_global_to_local[^\n]*tensor<64x!tt\.ptr<f32>", body)) == 1
    assert len(re.findall(r"ttg\.local_load[^\n]*swizzled_shared[^\n]*-> tensor<64xf32, #ttg\.slice", body)) == 1
    assert not re.search(r"convert_layout[^\n]*: tensor<64xf32", body)
    assert body.count("ttg.async_copy_global_to_local") == 3
    # 4-byte copies (.ca), each lane's element once
    assert re.search(r"cp\.async\.ca\.shared\.global[^\n]*, 4,", k.asm["ptx"])


@pytest.mark.parametrize("what", ["other", "fp16"])
def test_loads_the_copy_cannot_take_stay(what):
    k = _compile("cuda:90", w_other=what == "other", w_type="*fp16" if what == "fp16" else "*fp32")
    body = _body(k.asm["ttgir"])
    assert body.count("tt.load") == 1 and body.count("ttg.async_copy_global_to_local") == 2


def test_switched_off_the_loop_keeps_its_load():
    body = _body(_compile("cuda:90", stream_loads=False).asm["ttgir"])
    assert body.count("tt.load") == 1 and body.count("ttg.async_copy_global_to_local") == 2


def test_an_indirect_load_stays_and_its_index_is_copied_ahead():
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "idx_ptr": "*i32", "table_ptr": "*fp32", "c_ptr": "*fp32", "K": "i32"}
    k = tritium.compile(gathered_rows, target="cuda:90", signature=sig, constexprs={"BM": 64, "BN": 64, "BK": 32},
                        num_warps=4, num_stages=3)
    body = _body(k.asm["ttgir"])
    assert body.count("tt.load") == 1 and re.search(r"tt\.load[^\n]*tensor<64x!tt\.ptr<f32>", body)
    assert re.search(r"async_copy_global_to_local[^\n]*tensor<64x!tt\.ptr<i32>", body)


# -- on the device ------------------------------------------------------------------------------------
def _device():
    from tritium_nvidia.plugin import nvidia_plugin as plugin
    if not plugin.tritium_device_present("nvidia"):
        pytest.skip("no CUDA device")
    return pytest.importorskip("torch")


@pytest.mark.parametrize("M,N,K", [(64, 64, 96), (50, 37, 200), (64, 64, 32), (64, 20, 0)])
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_weighted_blocks_on_the_device(M, N, K, stages):
    torch = _device()
    rng = np.random.default_rng(M * 1000 + N + K)
    BN, BK = 64, 32
    kb = max(-(-K // BK), 1)
    a = rng.standard_normal((M, max(K, 1))).astype(np.float16)
    b = rng.standard_normal((max(K, 1), BN)).astype(np.float16)
    w = rng.standard_normal((kb, BN)).astype(np.float32)
    c = torch.full((M, BN), float("nan"), device="cuda")
    ta, tb, tw = (torch.from_numpy(x).cuda() for x in (a, b, w))
    k = weighted_blocks[(triton_cdiv(M, 64),)](ta, tb, tw, c, M, N, K, W_OTHER=False, BM=64, BN=BN, BK=BK,
                                               num_stages=stages)
    torch.cuda.synchronize()
    want = np.zeros((M, BN))
    for i in range(-(-K // BK)):
        sl = slice(i * BK, min(K, (i + 1) * BK))
        want += (a[:, sl].astype(np.float64) @ b[sl].astype(np.float64)) * np.where(np.arange(BN) < N, w[i], 0.0)
    got = c.cpu().numpy()
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
    assert np.all(got[:, N:] == 0)  # the masked-off weights were read as zero, not stale slot data
    if stages > 1 and K > 0:
        assert "cp.async.ca.shared.global" in k.asm["ptx"]


def triton_cdiv(a, b):
    return -(-a // b)
