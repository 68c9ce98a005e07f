"""``cluster_pairs`` (``passes/cluster_pairs.py``, NVIDIA option, off by default): neighbouring
programs along x run as a two-CTA cluster and a pipelined loop's TMA copies equal in both are
multicast.  CPU: the rewrite, the PTX it leaves and where it declines (sm_90).  GPU: results equal
a float64 reference for even and odd grids, ragged K, copies that are and are not shared."""

import pytest

import tritium as triton
import tritium.language as tl

TARGET = "cuda:90"


@triton.jit
def _mm_dev(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
            PER_PROGRAM_A: tl.constexpr = False, GUARDED: tl.constexpr = False, WS: tl.constexpr = False):
    """C = A @ B^T (B stored [N, K]) through descriptors built in the kernel; ``PER_PROGRAM_A``
    builds A's descriptor from a base that depends on the program (never shared), ``GUARDED``
    puts the loop under an ``if`` (not a top-level loop), ``WS`` warp-specializes it."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_base = a_ptr + pid_m * BLOCK_M * K if PER_PROGRAM_A else a_ptr
    a_rows = BLOCK_M if PER_PROGRAM_A else M
    a_desc = tl.make_tensor_descriptor(a_base, shape=[a_rows, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    row = 0 if PER_PROGRAM_A else pid_m * BLOCK_M
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if not GUARDED or K > 0:
        for ki in tl.range(tl.cdiv(K, BLOCK_K), warp_specialize=WS):
            a = a_desc.load([row, ki * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, ki * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))


@triton.jit
def _row_arg(a_ptr, b_ptr, c_ptr, M, N, K, ROW, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C[0:BLOCK_M, pid_n-th block] = A[ROW:ROW+BLOCK_M] @ B^T: A's coordinate is a kernel argument
    itself, the same in every program, so both copies are shared."""
    pid_n = tl.program_id(1)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for ki in range(tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([ROW, ki * BLOCK_K])
        b = b_desc.load([pid_n * BLOCK_N, ki * BLOCK_K])
        acc = tl.dot(a, b.T, acc)
    offs = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M))[:, None] * N + pid_n * BLOCK_N \
        + tl.arange(0, BLOCK_N)[None, :]
    tl.store(c_ptr + offs, acc.to(tl.float16))


_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}


def _compile(tmp_path, monkeypatch, pairs=True, **consts):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    constexprs = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, **consts}
    return triton.compile(_mm_dev, target=TARGET, signature=_SIG, constexprs=constexprs,
                          attrs={i: {"tt.divisibility": 16} for i in range(6)}, num_warps=4, num_stages=3,
                          cluster_pairs=pairs)


def test_shared_copies_become_multicasts_behind_a_cluster_exchange(tmp_path, monkeypatch):
    k = _compile(tmp_path, monkeypatch)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert "ttng.pair_setup" in ttgir and "ttng.pair_refill" in ttgir and "ttng.pair_teardown" in ttgir
    # both copies are one box (128 rows of 128 bytes) of maps every program shares
    assert ttgir.count('"ttng.pair_copy"') == 2 and "ttg.async_copy_descriptor_to_local %" in ttgir  # prologue
    assert ptx.count("multicast::cluster") == 2
    assert ptx.count("barrier.cluster.arrive.release.aligned") == 3  # setup (2), teardown: none in the loop
    assert "mapa.shared::cluster.u32" in ptx and "ld.shared::cluster.u32" in ptx
    # the slot's empty barrier: this CTA's and the peer's arrival, the issuer's wait
    assert "mbarrier.init.shared::cta.b64 [%r" in ptx and "], 2;" in ptx
    assert "mbarrier.arrive.shared::cluster.b64" in ptx and "mbarrier.try_wait.parity.shared::cta.b64" in ptx
    assert "cluster.nctarank" in ptx or "%cluster_nctarank" in ptx
    assert k.metadata.get("cluster_pairs") is True


def test_warp_specialized_producers_multicast_and_consumers_hand_back_to_both(tmp_path, monkeypatch):
    """The producer waits on the consumers' empty barriers, which count both CTAs' consumer
    warps where paired (re-initialised by the setup); each consumer warp arrives here and in the
    peer; the producer warps pass the last cluster barrier before they exit."""
    k = _compile(tmp_path, monkeypatch, WS=True)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert "ttng.producer_partition" in ttgir and "ttng.pair_arrive" in ttgir and "handoff = 0" in ttgir
    assert ttgir.count('"ttng.pair_copy"') == 2 and ttgir.count("ttng.pair_teardown") == 2
    assert ptx.count("multicast::cluster") == 2 and "mbarrier.arrive.shared::cluster.b64" in ptx
    assert "setmaxnreg" in ptx and ptx.count("barrier.cluster.arrive.release.aligned") == 4
    assert "mbarrier.init.shared::cta.b64 [%r" in ptx and "], 8;" in ptx  # 2 x 4 consumer warps
    assert k.metadata.get("cluster_pairs") is True


def test_a_coordinate_that_is_a_kernel_argument_is_exchanged(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = triton.compile(_row_arg, target=TARGET, signature={**_SIG, "ROW": "i32"},
                       constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64},
                       attrs={i: {"tt.divisibility": 16} for i in range(7)}, num_warps=4, num_stages=3,
                       cluster_pairs=True)
    assert k.asm["ttgir"].count('"ttng.pair_copy"') == 2 and k.asm["ptx"].count("multicast::cluster") == 2


def test_off_by_default_and_off_leaves_the_kernel_alone(tmp_path, monkeypatch):
    from tritium_nvidia.options import CUDAOptions
    assert CUDAOptions().cluster_pairs is False
    k = _compile(tmp_path, monkeypatch, pairs=False)
    assert "multicast" not in k.asm["ptx"] and "barrier.cluster" not in k.asm["ptx"]
    assert "pair_" not in k.asm["ttgir"] and not k.metadata.get("cluster_pairs")


def test_a_loop_under_a_condition_is_left_alone(tmp_path, monkeypatch):
    k = _compile(tmp_path, monkeypatch, GUARDED=True)
    assert "pair_setup" not in k.asm["ttgir"] and not k.metadata.get("cluster_pairs")
    assert "multicast" not in k.asm["ptx"]


def test_tiles_of_several_boxes_multicast_box_by_box(tmp_path, monkeypatch):
    """Rows of 256 bytes (BK = 128): each tile is two boxes of its map, each multicast."""
    k = _compile(tmp_path, monkeypatch, BLOCK_K=128)
    assert k.asm["ttgir"].count('"ttng.pair_copy"') == 2 and k.asm["ptx"].count("multicast::cluster") == 4


def test_per_program_maps_are_not_shared(tmp_path, monkeypatch):
    """A's map is built from ``a_ptr + pid_m * ...``: it may differ between the two programs, so
    only B's copy is shared."""
    k = _compile(tmp_path, monkeypatch, PER_PROGRAM_A=True)
    assert k.asm["ttgir"].count('"ttng.pair_copy"') == 1


def _device():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9 else None


@pytest.mark.skipif(_device() is None, reason="needs an sm_90 CUDA device and torch")
@pytest.mark.parametrize("row", [0, 128])
def test_gpu_shared_argument_coordinate(row):
    """Every program reads the same rows of A (a kernel argument): A's copies are shared too."""
    torch = _device()
    torch.manual_seed(row)
    m, n, k = 384, 1024, 1000
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(n, k, device="cuda", dtype=torch.float16)
    grid = (4, n // 128)  # x even: clusters of two
    c = torch.full((grid[0] * 128, n), float("nan"), device="cuda", dtype=torch.float16)
    _row_arg[grid](a, b, c, m, n, k, row, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=4, num_stages=3,
                   cluster_pairs=True)
    torch.cuda.synchronize()
    ref = (a[row:row + 128].double() @ b.double().T).repeat(grid[0], 1)
    err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
    assert err < 2e-3, (row, err)


@pytest.mark.skipif(_device() is None, reason="needs an sm_90 CUDA device and torch")
@pytest.mark.parametrize("m,n,k", [(1024, 512, 1024), (384, 512, 4160), (640, 768, 200), (256, 1024, 8192)])
@pytest.mark.parametrize("bm,bn,bk,per_program,ws", [(128, 128, 64, False, False), (64, 128, 64, True, False),
                                                     (128, 64, 64, False, False), (128, 128, 128, False, False),
                                                     (128, 128, 64, False, True), (128, 64, 64, True, True)])
def test_gpu_results(m, n, k, bm, bn, bk, per_program, ws):
    """BK = 128: tiles of two boxes, read by ``wgmma`` as two column blocks in both CTAs (the
    second CTA's descriptors once carried its cluster address bits into the block stride)."""
    torch = _device()
    torch.manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(n, k, device="cuda", dtype=torch.float16)
    ref = a.double() @ b.double().T
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)  # unwritten stays NaN
    _mm_dev[(triton.cdiv(m, bm), triton.cdiv(n, bn))](a, b, c, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                                      PER_PROGRAM_A=per_program, WS=ws, num_warps=4, num_stages=3,
                                                      cluster_pairs=True)
    torch.cuda.synchronize()
    err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
    assert err < 2e-3, (m, n, k, bm, bn, bk, per_program, ws, err)
