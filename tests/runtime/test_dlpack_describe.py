"""``dlpack.describe``: a producer that exports only while its device is current (torch's CUDA
tensors since torch 2.10) is asked again inside the device guard; without one its error stands."""
import contextlib

import numpy as np
import pytest

from tritium.runtime import dlpack


class Picky:
    """A DLPack producer over a numpy array that claims CUDA device 1 and exports only while
    ``current[0]`` is 1."""

    def __init__(self, a, current):
        self.a, self.current, self.asked = a, current, 0

    def __dlpack_device__(self):
        return (dlpack.KDLCUDA, 1)

    def __dlpack__(self, stream=None):
        self.asked += 1
        if self.current[0] != 1:
            raise BufferError("Can't export tensors on a different CUDA device index. Expected: 1. Current device: 0.")
        return self.a.__dlpack__()


def test_asked_again_with_its_device_current(monkeypatch):
    current = [0]
    seen = []

    @contextlib.contextmanager
    def guard():
        current[0] = 1
        try:
            yield
        finally:
            current[0] = 0

    def device_guard(kind, index):
        seen.append((kind, index))
        return guard()

    monkeypatch.setattr(dlpack, "_device_guard", device_guard)
    a = np.arange(7, dtype=np.float32)
    p = Picky(a, current)
    addr, dtype, kind, index = dlpack.describe(p)
    assert (addr, dtype, kind, index) == (a.ctypes.data, "fp32", dlpack.KDLCUDA, 1)
    assert p.asked == 2 and seen == [(dlpack.KDLCUDA, 1)] and current == [0]


def test_no_guard_keeps_the_producers_error(monkeypatch):
    monkeypatch.setattr(dlpack, "_device_guard", lambda kind, index: None)
    with pytest.raises(BufferError, match="different CUDA device"):
        dlpack.describe(Picky(np.zeros(3, np.float32), [0]))


def test_guard_is_none_without_torch_cuda():
    # torch absent or without CUDA initialised here: nothing to make current
    assert dlpack._device_guard(dlpack.KDLCPU, 0) is None
    assert dlpack._device_guard(dlpack.KDLCUDA, 1) is None or __import__("torch").cuda.is_initialized()
