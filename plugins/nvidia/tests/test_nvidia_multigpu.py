"""On CUDA devices: launches follow the arguments' device, never the current one.  Tests marked
``two_gpus`` need two CUDA devices and skip with a reason on fewer; the others run on
one GPU (explicit device 0 while another context is current is not possible there, so they check
the single-device forms of the same rules)."""
import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.examples.vector_add import add_kernel
from tritium.runtime.driver import LaunchDeviceError
from tritium_nvidia.runtime import device_pointers
from tritium_nvidia.plugin import nvidia_plugin as plugin

pytestmark = pytest.mark.skipif(not plugin.tritium_device_present("nvidia"), reason="no CUDA device")
torch = pytest.importorskip("torch")
N = 5000

two_gpus = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                              reason="needs 2 CUDA devices")


class OnlyCAI:
    def __init__(self, t):
        self.__cuda_array_interface__ = t.__cuda_array_interface__


class OnlyDLPack:
    def __init__(self, t):
        self._t = t

    def __dlpack__(self, stream=None):
        return self._t.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def raw(t):
    return tritium.reinterpret(t.data_ptr(), tl.float32)


KINDS = {"torch": lambda t: t, "cuda_array_interface": OnlyCAI, "dlpack": OnlyDLPack, "raw": raw}


def run_add(device, wrap=lambda t: t, stream=None, **kw):
    x = torch.rand(N, device=device)
    y = torch.rand(N, device=device)
    out = torch.full((N,), float("nan"), device=device)
    if wrap is raw:
        kw["backend"] = "nvidia"
    launch = lambda: add_kernel[(tritium.cdiv(N, 256),)](wrap(x), wrap(y), wrap(out), N, BLOCK_SIZE=256, **kw)  # noqa: E731
    if stream is not None:
        with torch.cuda.stream(stream):
            launch()
    else:
        launch()
    return x, y, out


def check(x, y, out):
    torch.cuda.synchronize(out.device)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


# ---------------------------------------------------------------------------------- one GPU
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_on_device0_twice(kind):
    for _ in range(2):  # the full path, then the fast path
        check(*run_add("cuda:0", KINDS[kind]))


def test_side_stream_device0():
    s = torch.cuda.Stream(device=0)
    x, y, out = run_add("cuda:0", stream=s)
    s.synchronize()
    check(x, y, out)


def test_cpu_tensor_rejected_before_launch():
    x = torch.rand(N, device="cuda:0")
    with pytest.raises(LaunchDeviceError, match="y_ptr.*cpu"):
        add_kernel[(1,)](x, torch.rand(N), x, N, BLOCK_SIZE=256, backend="nvidia")


def test_unknown_raw_pointer_rejected():
    x = torch.rand(N, device="cuda:0")
    host = np.zeros(N, np.float32)
    with pytest.raises(LaunchDeviceError, match="output_ptr.*not memory CUDA knows"):
        add_kernel[(1,)](x, x, tritium.reinterpret(host.ctypes.data, tl.float32), N, BLOCK_SIZE=256,
                         backend="nvidia")


def test_raw_pointer_attribution_device0():
    x = torch.rand(4, device="cuda:0")
    assert device_pointers.pointer_device(x.data_ptr()) == 0
    pinned = torch.zeros(4).pin_memory()
    assert device_pointers.pointer_device(pinned.data_ptr()) == device_pointers.ANYWHERE


# ------------------------------------------------------------------------------- two GPUs
@two_gpus
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_on_device1_while_device0_current(kind):
    torch.cuda.set_device(0)
    for _ in range(2):
        check(*run_add("cuda:1", KINDS[kind]))
        assert torch.cuda.current_device() == 0


@two_gpus
def test_alternating_devices():
    torch.cuda.set_device(0)
    results = [run_add(f"cuda:{i % 2}") for i in range(8)]
    for r in results:
        check(*r)
    assert torch.cuda.current_device() == 0
    torch.cuda.set_device(1)
    results = [run_add(f"cuda:{i % 2}") for i in range(4)]
    for r in results:
        check(*r)
    assert torch.cuda.current_device() == 1
    torch.cuda.set_device(0)


@two_gpus
def test_side_streams_on_each_device():
    torch.cuda.set_device(0)
    s0, s1 = torch.cuda.Stream(device=0), torch.cuda.Stream(device=1)
    r0 = run_add("cuda:0", stream=s0)
    r1 = run_add("cuda:1", stream=s1)
    s0.synchronize()
    s1.synchronize()
    check(*r0)
    check(*r1)


@two_gpus
def test_mixed_devices_rejected():
    x0, x1 = torch.rand(N, device="cuda:0"), torch.rand(N, device="cuda:1")
    out = torch.full((N,), float("nan"), device="cuda:0")
    with pytest.raises(LaunchDeviceError, match=r"x_ptr on cuda:0, y_ptr on cuda:1"):
        add_kernel[(1,)](x0, x1, out, N, BLOCK_SIZE=256)
    torch.cuda.synchronize()
    assert torch.isnan(out).all(), "something ran"


@two_gpus
def test_cache_shared_across_devices():
    @tritium.jit
    def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)

    for dev in (0, 1, 0, 1):
        src = torch.rand(N, device=f"cuda:{dev}")
        dst = torch.empty_like(src)
        copy_kernel[(tritium.cdiv(N, 128),)](src, dst, N, BLOCK=128)
        torch.cuda.synchronize(dev)
        assert torch.equal(src, dst)
    kernels = {id(k) for k in copy_kernel.kernel_cache.values()}
    assert len(kernels) == 1
    compiled = next(iter(copy_kernel.kernel_cache.values()))
    assert set(compiled._launchers) == {0, 1}
