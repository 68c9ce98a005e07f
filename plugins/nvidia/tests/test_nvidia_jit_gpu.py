"""On a CUDA device: the @jit launch path with every kind of argument the brief names — torch
CUDA tensors, CuPy arrays, any __cuda_array_interface__ object, DLPack producers, raw device
addresses — chooses the nvidia backend and computes the right values."""
import numpy as np
import pytest

import tritium
from tritium.examples.vector_add import add_kernel
from tritium_nvidia.plugin import nvidia_plugin as plugin

pytestmark = pytest.mark.skipif(not plugin.tritium_device_present("nvidia"), reason="no CUDA device")
torch = pytest.importorskip("torch")


class OnlyCAI:
    """Exposes nothing but __cuda_array_interface__."""

    def __init__(self, t):
        self.__cuda_array_interface__ = t.__cuda_array_interface__


class OnlyDLPack:
    """Exposes nothing but the DLPack protocol."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, stream=None):
        return self._t.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def _run(wrap, n=3000, **kw):
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    grid = lambda meta: (tritium.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](wrap(x), wrap(y), wrap(out), n, BLOCK_SIZE=256, **kw)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


@pytest.mark.parametrize("wrap", [lambda t: t, OnlyCAI, OnlyDLPack], ids=["torch", "cuda_array_interface", "dlpack"])
def test_argument_kinds(wrap):
    _run(wrap)


def test_cupy_arrays():
    cp = pytest.importorskip("cupy")
    n = 3000
    x, y = cp.random.rand(n, dtype=cp.float32), cp.random.rand(n, dtype=cp.float32)
    out = cp.full(n, cp.nan, dtype=cp.float32)
    add_kernel[(tritium.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256)
    cp.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(cp.asnumpy(out), cp.asnumpy(x + y))


def test_raw_device_addresses():
    import tritium.language as tl
    _run(lambda t: tritium.reinterpret(t.data_ptr(), tl.float32), backend="nvidia")


def test_backend_follows_the_tensors():
    x = torch.rand(64)
    out = torch.full((64,), float("nan"))
    add_kernel[(1,)](x, x, out, 64, BLOCK_SIZE=64)  # CPU tensors: the interpreter
    torch.testing.assert_close(out, x + x)
    _run(lambda t: t)  # CUDA tensors in the same process: nvidia


def test_pinned_host_tensor_is_device_reachable():
    # page-locked host memory is mapped into the device's address space: the kernel writes it
    n = 3000
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    out = torch.full((n,), float("nan"), pin_memory=True)
    add_kernel[(tritium.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256, backend="nvidia")
    torch.cuda.synchronize()
    torch.testing.assert_close(out, (x + y).cpu(), rtol=0, atol=0)


def test_plain_host_tensor_is_refused():
    x = torch.rand(256)
    with pytest.raises(ValueError, match="not on a CUDA device"):
        add_kernel[(1,)](x, x, x, 256, BLOCK_SIZE=256, backend="nvidia")


def test_cuda_graph_capture_and_replay():
    """Launches inside torch.cuda.graph are captured on the capture stream, not run; replaying the
    graph runs them (the launch fast path asks torch for the current stream on every launch)."""
    n = 3000
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out1, out2 = torch.empty(n, device="cuda"), torch.empty(n, device="cuda")
    grid = (tritium.cdiv(n, 256),)
    for _ in range(3):  # compiled, and on the fast path, before capture
        add_kernel[grid](x, y, out1, n, BLOCK_SIZE=256)
    torch.cuda.synchronize()
    out1.fill_(float("nan"))
    out2.fill_(float("nan"))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        add_kernel[grid](x, y, out1, n, BLOCK_SIZE=256)
        add_kernel[grid](out1, y, out2, n, BLOCK_SIZE=256)
    torch.cuda.synchronize()
    assert torch.isnan(out1).all() and torch.isnan(out2).all(), "a launch ran during capture"
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out1, x + y, rtol=0, atol=0)
    torch.testing.assert_close(out2, x + y + y, rtol=0, atol=0)
    x.copy_(torch.rand(n, device="cuda"))
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out2, x + y + y, rtol=0, atol=0)


def test_fast_path_arguments_on_the_device():
    """Repeated launches with every scalar class (n a multiple of 16, 1, other, wide), a float and
    a misaligned tensor: each launch computes the right values."""
    from tritium.examples.vector_add import add_kernel as add
    for n in (4096, 1, 3000, 4096, 1, 3000):
        x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
        out = torch.full((n,), float("nan"), device="cuda")
        add[(tritium.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256)
        torch.cuda.synchronize()
        torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    base = torch.rand(3001, device="cuda")
    x = base[1:]
    out = torch.full((3000,), float("nan"), device="cuda")
    for _ in range(3):
        add[(tritium.cdiv(3000, 256),)](x, x, out, 3000, BLOCK_SIZE=256)
        torch.cuda.synchronize()
        torch.testing.assert_close(out, x + x, rtol=0, atol=0)
    with torch.cuda.stream(torch.cuda.Stream()):
        out.fill_(float("nan"))
        add[(tritium.cdiv(3000, 256),)](x, x, out, 3000, BLOCK_SIZE=256)
        torch.cuda.current_stream().synchronize()
        torch.testing.assert_close(out, x + x, rtol=0, atol=0)
