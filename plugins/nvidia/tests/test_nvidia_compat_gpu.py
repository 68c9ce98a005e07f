"""On a CUDA device, with torch: the issue #9 surface end to end — the ragged block-pointer matmul
(masked-off lanes read zero), libdevice, tensor descriptors (in-kernel and host), inline PTX,
``warmup`` metadata and ``driver.active``."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from conformance.cases.block_ptr import block_matmul_kernel
from tritium.language.extra import libdevice
from tritium.tools.tensor_descriptor import TensorDescriptor
from tritium_nvidia.plugin import nvidia_plugin as plugin

pytestmark = pytest.mark.skipif(not plugin.tritium_device_present("nvidia"), reason="no CUDA device")
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_ragged_block_ptr_matmul(dtype):
    M, N, K = 200, 130, 300
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(M, K, device="cuda", generator=g, dtype=getattr(torch, dtype)) * 2 - 1
    b = torch.rand(K, N, device="cuda", generator=g, dtype=getattr(torch, dtype)) * 2 - 1
    c = torch.full((M, N), float("nan"), device="cuda")
    block_matmul_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](a, b, c, M, N, K, PRECISION="ieee",
                                                                  BM=64, BN=64, BK=32)
    ref = a.double().cpu().numpy() @ b.double().cpu().numpy()
    np.testing.assert_allclose(c.cpu().numpy(), ref, rtol=1e-4, atol=1e-4)


@triton.jit
def _math(x_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(z_ptr + offs, libdevice.tanh(x) + libdevice.pow(x, 2.0) + libdevice.isnan(x).to(tl.float32), mask=m)


def test_libdevice():
    x = torch.randn(1000, device="cuda")
    z = torch.empty_like(x)
    _math[(4,)](x, z, 1000, BLOCK=256)
    xd = x.double()
    torch.testing.assert_close(z.double(), torch.tanh(xd) + xd ** 2, rtol=1e-5, atol=1e-5)


@triton.jit
def _desc_scale(x_desc, z_desc, BM: tl.constexpr, BN: tl.constexpr):
    off = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    z_desc.store(off, x_desc.load(off) * 2)


def test_host_tensor_descriptors():
    x = torch.randn(50, 70, device="cuda", dtype=torch.float16)
    z = torch.full_like(x, float("nan"))
    _desc_scale[(4, 3)](TensorDescriptor.from_tensor(x, [16, 32]), TensorDescriptor.from_tensor(z, [16, 32]),
                        BM=16, BN=32)
    torch.testing.assert_close(z, x * 2)


@triton.jit
def _asm(x_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(z_ptr + offs, tl.inline_asm_elementwise("and.b32 $0, $1, 0x0F0F0F0F;", "=r,r", [x], dtype=tl.uint8,
                                                     is_pure=True, pack=4))


def test_inline_asm_pack4():
    x = torch.randint(0, 256, (1024,), device="cuda", dtype=torch.uint8)
    z = torch.zeros_like(x)
    _asm[(1,)](x, z, BLOCK=1024)
    assert torch.equal(z, x & 0x0F)


def test_warmup_metadata_and_driver_active():
    x = torch.randn(1000, device="cuda")
    k = _math.warmup(x, torch.empty_like(x), 1000, BLOCK=256, grid=(4,))
    assert isinstance(k.n_regs, int) and k.n_regs > 0 and k.n_spills == 0
    assert k.metadata.shared >= 0 and "ptx" in k.asm
    d = triton.runtime.driver.active
    props = d.utils.get_device_properties(torch.cuda.current_device())
    assert props["multiprocessor_count"] > 0 and props["max_shared_mem"] > 0 and props["warpSize"] == 32
    assert props["max_num_regs"] > 0
    assert d.get_active_torch_device() == torch.device("cuda", torch.cuda.current_device())
