"""Multi-device launches against the fake two-device libcuda (run in a process of its own by
test_nvidia_multidevice_fake.py, with TRITIUM_FAKECUDA=1): every argument kind on device 1 while
device 0 is current, alternating devices, mixed devices rejected before launching, unknown
pointers rejected, one compiled kernel shared by both devices, the current device left alone."""
import os

import numpy as np
import pytest

if os.environ.get("TRITIUM_FAKECUDA") != "1":
    pytest.skip("run through test_nvidia_multidevice_fake.py", allow_module_level=True)

import fakecuda  # noqa: E402

FAKE = fakecuda.load()
FAKE.n_params.value = 4  # add_kernel: x, y, out, n (the fake reads that many parameter slots)
os.environ["TRITIUM_BACKEND"] = "nvidia"

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.runtime.driver import LaunchDeviceError  # noqa: E402
from tritium_nvidia.runtime import device_pointers  # noqa: E402
from tritium_nvidia.plugin import nvidia_plugin as plugin  # noqa: E402
from tritium_nvidia.runtime.device_pointers import DeviceArray  # noqa: E402

N, BLOCK = 1000, 256


@tritium.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(output_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


class DLPackOn:
    """A DLPack producer claiming to live on CUDA device ``index`` (the fake never reads memory)."""

    def __init__(self, array, index, kind=2):
        self.a, self.index, self.kind = array, index, kind

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return (self.kind, self.index)


@pytest.fixture(autouse=True)
def device0_current():
    drv = plugin.tritium_driver("nvidia")
    assert drv.is_active()
    assert drv.device_count() == 2, "the driver in use is not the two-device fake"
    FAKE.lib.fake_reset_thread()
    drv.set_current_device(0)
    yield drv
    FAKE.lib.fake_reset_thread()
    assert not fakecuda.foreign_drivers(), f"a real CUDA driver was loaded beside the fake: {fakecuda.foreign_drivers()}"


def launch(*args, **kw):
    before = FAKE.count.value
    add_kernel[(4,)](*args, N, BLOCK_SIZE=BLOCK, **kw)
    assert FAKE.count.value == before + 1, "nothing was launched"
    return FAKE.last


def arrays(device):
    return [DeviceArray(N, "fp32", device) for _ in range(3)]


def test_device_arrays_on_device1_while_device0_current():
    x, y, out = arrays(1)
    for _ in range(3):  # the first launch (full path) and then the fast path
        last = launch(x, y, out)
        assert last.device == 1
        assert last.params[0] == x.data_ptr() and last.params[2] == out.data_ptr()
        assert FAKE.current_context_device() == 0, "the current device changed"


def test_raw_addresses_are_attributed():
    x, y, out = arrays(1)
    args = [tritium.reinterpret(a.data_ptr(), tl.float32) for a in (x, y, out)]
    assert launch(*args, backend="nvidia").device == 1
    assert FAKE.current_context_device() == 0


def test_dlpack_device_from_the_producer():
    host = np.zeros(N, np.float32)
    for dev in (1, 0, 1):
        last = launch(DLPackOn(host, dev), DLPackOn(host, dev), DLPackOn(host, dev))
        assert last.device == dev
    assert FAKE.current_context_device() == 0


def test_alternating_devices_use_one_module_per_device():
    a0, a1 = arrays(0), arrays(1)
    functions = {}
    for i in range(6):
        dev = i % 2
        last = launch(*(a1 if dev else a0))
        assert last.device == dev
        functions.setdefault(dev, set()).add(last.function)
    assert all(len(f) == 1 for f in functions.values()) and functions[0] != functions[1]
    # one compiled kernel serves both devices: one cache entry, a launcher per device
    assert len(add_kernel.kernel_cache) >= 1
    kernels = {id(k) for k in add_kernel.kernel_cache.values()}
    compiled = next(iter(add_kernel.kernel_cache.values()))
    assert len(kernels) == 1 and {0, 1} <= set(compiled._launchers)


def test_mixed_devices_are_rejected_before_launching():
    (x0, _, out0), (x1, y1, _) = arrays(0), arrays(1)
    before = FAKE.count.value
    with pytest.raises(LaunchDeviceError) as info:
        add_kernel[(4,)](x0, y1, out0, N, BLOCK_SIZE=BLOCK)
    text = str(info.value)
    assert "add_kernel" in text and "x_ptr on cuda:0" in text and "y_ptr on cuda:1" in text
    with pytest.raises(LaunchDeviceError):  # again, once the kernel is compiled and cached
        add_kernel[(4,)](x1, y1, out0, N, BLOCK_SIZE=BLOCK)
    assert FAKE.count.value == before


def test_unknown_pointer_is_rejected():
    before = FAKE.count.value
    bogus = tritium.reinterpret(0x1234000, tl.float32)
    x, y, _ = arrays(0)
    with pytest.raises(LaunchDeviceError, match="output_ptr.*not memory CUDA knows"):
        add_kernel[(4,)](x, y, bogus, N, BLOCK_SIZE=BLOCK, backend="nvidia")
    assert FAKE.count.value == before


def test_no_current_context_is_left_alone():
    x, y, out = arrays(1)
    FAKE.lib.fake_reset_thread()
    assert FAKE.current_context_device() is None
    for _ in range(2):
        assert launch(x, y, out).device == 1
    assert FAKE.current_context_device() is None


def test_launcher_called_directly_in_another_context(device0_current):
    drv = device0_current
    x, y, out = arrays(1)
    add_kernel[(4,)](x, y, out, N, BLOCK_SIZE=BLOCK)
    compiled = next(iter(add_kernel.kernel_cache.values()))
    before = FAKE.count.value
    compiled._launchers[1]((4, 1, 1), 0, [x, y, out, N])  # device 0 current: retried in device 1's context
    assert FAKE.count.value == before + 1 and FAKE.last.device == 1
    assert FAKE.current_context_device() == 0
    drv.synchronize()
    assert FAKE.current_context_device() == 0


def test_select_device_rules(device0_current):
    drv = device0_current
    x1 = DeviceArray(4, "fp32", 1)
    assert drv.select_device([("a", x1), ("b", None), ("c", 0)]) == 1
    assert drv.select_device([("a", None)]) is None
    assert drv.select_device([("a", DLPackOn(np.zeros(1), 0, kind=3)), ("b", x1)]) == 1  # pinned host: any
    with pytest.raises(LaunchDeviceError, match="'h' is a DLPack tensor in host memory, not CUDA memory"):
        drv.select_device([("h", DLPackOn(np.zeros(1), 0, kind=1))])
    assert device_pointers.device_of(x1) == 1 and drv.owns(x1)


def test_device_array_memory_helpers_keep_the_current_device(device0_current):
    drv = device0_current
    a = drv.from_numpy(np.arange(8, dtype=np.float32), device=1)
    assert isinstance(a, DeviceArray) and a.device == 1 and device_pointers.device_of(a) == 1
    drv.to_numpy(a)
    assert FAKE.current_context_device() == 0
