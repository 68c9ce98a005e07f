"""On a CUDA device of compute capability 9.0: host tensor descriptors take the TMA path
(``cp.async.bulk.tensor`` in the kernel that ran) and compute what the block-pointer path does:
tiles overhanging the tensor read zero or NaN outside and drop their stores there, and the
persistent matmul through descriptors matches torch.  Run it under a time limit (a wrong
mbarrier wait hangs): ``timeout 300 python -m pytest -q plugins/nvidia/tests/test_nvidia_tma_gpu.py``."""
import pytest

import tritium
from tritium.tools.tensor_descriptor import TensorDescriptor
from tritium_nvidia.plugin import nvidia_plugin as plugin
from conformance.cases import tensor_map as cases

pytestmark = pytest.mark.skipif(not plugin.tritium_device_present("nvidia"), reason="no CUDA device")
torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _sm90(monkeypatch):
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA needs compute capability 9.0")
    monkeypatch.setenv("TRITIUM_TMA", "1")  # the default (runtime/tensor_map.py), whatever the caller's environment


DT = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("tma", ["1", "0"])
def test_scale_overhanging_tiles(dtype, tma, monkeypatch):
    monkeypatch.setenv("TRITIUM_TMA", tma)
    x = torch.randn(100, 80, device="cuda", dtype=DT[dtype])
    z = torch.full_like(x, float("nan"))
    k = cases.map_scale_kernel[(4, 2)](TensorDescriptor.from_tensor(x, [32, 64]),
                                       TensorDescriptor.from_tensor(z, [32, 64]), BM=32, BN=64)
    torch.cuda.synchronize()
    assert ("cp.async.bulk.tensor" in k.asm["ptx"]) == (tma == "1")
    torch.testing.assert_close(z, x * 3)


@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_padding_outside_the_tensor(padding):
    x = torch.randn(100, 80, device="cuda", dtype=torch.float16)
    z = torch.full((128, 128), 7.0, device="cuda", dtype=torch.float16)
    k = cases.map_copy_padded_kernel[(4, 2)](TensorDescriptor.from_tensor(x, [32, 64], padding), z, BM=32, BN=64)
    torch.cuda.synchronize()
    assert "cp.async.bulk.tensor" in k.asm["ptx"]
    ref = torch.full_like(z, float("nan") if padding == "nan" else 0.0)
    ref[:100, :80] = x
    torch.testing.assert_close(z, ref, equal_nan=True)


def test_rank3():
    x = torch.randn(5, 40, 48, device="cuda", dtype=torch.float16)
    z = torch.full_like(x, float("nan"))
    k = cases.map_3d_kernel[(3, 3, 2)](TensorDescriptor.from_tensor(x, [2, 16, 32]),
                                       TensorDescriptor.from_tensor(z, [2, 16, 32]), B0=2, B1=16, B2=32)
    torch.cuda.synchronize()
    assert "cp.async.bulk.tensor.3d" in k.asm["ptx"]
    torch.testing.assert_close(z, x * 2)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_persistent_matmul(dtype):
    a = torch.randn(1000, 1000, device="cuda", dtype=DT[dtype])
    b = torch.randn(1112, 1000, device="cuda", dtype=DT[dtype])
    c = torch.full((1000, 1112), float("nan"), device="cuda", dtype=DT[dtype])
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    descs = [TensorDescriptor.from_tensor(t, blk) for t, blk in ((a, [128, 64]), (b, [128, 64]), (c, [128, 128]))]
    k = cases.map_persistent_matmul_kernel[(sms,)](*descs, 1000, 1112, 1000, BM=128, BN=128, BK=64, GROUP_M=8,
                                                   NUM_SMS=sms, num_warps=8, num_stages=3)
    torch.cuda.synchronize()
    assert "cp.async.bulk.tensor" in k.asm["ptx"]
    ref = (a.double() @ b.double().T)
    assert ((c.double() - ref).norm() / ref.norm()).item() < 1e-2


# -- descriptors the kernel builds (tl.make_tensor_descriptor): maps in the launch's global scratch

from test_nvidia_device_tensor_maps import FENCE, batched_gemm_2d, calls_kernel, copy_kernel  # noqa: E402


@pytest.mark.parametrize("block", [(64, 64), (512, 32), (1, 1024)])
@pytest.mark.parametrize("allocator", ["set", "default"])
def test_device_descriptor_copy(block, allocator, monkeypatch):
    import tritium.runtime._allocation as alloc
    asked = []

    def alloc_fn(size, align, stream):
        asked.append((size, align))
        return torch.empty(size, dtype=torch.int8, device="cuda")
    tritium.set_allocator(alloc_fn if allocator == "set" else None)
    try:
        M, N = 3 * block[0] + 5, 4 * block[1] + 16  # ragged: the last tiles overhang
        x = torch.randn(M, N, device="cuda", dtype=torch.float32)
        z = torch.full_like(x, float("nan"))
        grid = (triton_cdiv(M, block[0]), triton_cdiv(N, block[1]))
        k = copy_kernel[grid](z, x, M, N, BM=block[0], BN=block[1])
        torch.cuda.synchronize()
    finally:
        alloc.set_allocator(None)
    assert k.asm["ptx"].count(FENCE) == 2
    if allocator == "set":
        assert asked == [(grid[0] * grid[1] * 256, 128)]
    torch.testing.assert_close(z, x + 1)


def triton_cdiv(a, b):
    return -(-a // b)


def test_device_descriptor_in_a_noinline_callee():
    a = torch.randn(64, 256, device="cuda", dtype=torch.float16)
    b = torch.randn(64, 256, device="cuda", dtype=torch.float16)
    a0, b0 = a.clone(), b.clone()
    k = calls_kernel[(4,)](a, b, 256, BM=64, BN=64)
    torch.cuda.synchronize()
    assert k.asm["ptx"].count(FENCE) == 2
    torch.testing.assert_close(a, a0 * 3)
    torch.testing.assert_close(b, b0)


def test_device_descriptors_remade_per_tile_in_a_persistent_loop():
    B, M, N, K = 3, 256, 384, 192
    a = torch.randn(B, M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(B, N, K, device="cuda", dtype=torch.float16)
    c = torch.full((B, M, N), float("nan"), device="cuda", dtype=torch.float16)
    k = batched_gemm_2d[(5,)](a, b, c, B, M, N, K, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, NUM_SMS=5,
                              num_warps=8, num_stages=3)
    torch.cuda.synchronize()
    assert k.metadata.global_scratch_size == 128 * 3 * 4
    ref = torch.bmm(a.float(), b.float().mT)
    torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=1e-2)
