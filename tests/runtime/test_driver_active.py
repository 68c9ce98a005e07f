"""Triton's runtime surface that tutorials call: ``triton.runtime.driver.active`` and the
compiled kernel ``warmup`` returns (``n_regs``, ``n_spills``, ``metadata.shared``, ``asm``)."""
import numpy as np

import tritium as triton
import tritium.language as tl
from tritium.runtime import driver


@triton.jit
def _add(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


def test_driver_active_helpers(monkeypatch):
    monkeypatch.setenv("TRITIUM_BACKEND", "interpreter")
    d = driver.active
    assert d.get_current_device() == 0
    props = d.utils.get_device_properties(d.get_current_device())
    for key in ("multiprocessor_count", "max_shared_mem", "max_num_regs", "warpSize"):
        assert key in props
    assert triton.runtime.driver.active.get_benchmarker() is triton.testing.do_bench


def test_warmup_returns_the_compiled_kernel():
    x = np.ones(100, np.float32)
    k = _add.warmup(x, x, np.empty_like(x), 100, BLOCK=64, grid=(2,))
    assert k.metadata.shared == k.metadata["shared"] == 0 and k.metadata.num_warps == 4
    assert k.n_regs is None and k.n_spills is None   # the interpreter has no registers
    assert "ttir" in k.asm


def test_nvidia_metadata_reports_registers(monkeypatch, tmp_path):
    import pytest
    pytest.importorskip("tritium_nvidia")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = triton.compile(_add, target="cuda:90", signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32",
                                                          "n": "i32"}, constexprs={"BLOCK": 1024})
    assert isinstance(k.n_regs, int) and k.n_regs > 0 and k.n_spills == 0
    assert k.metadata.shared == 0


class _UnhashableDevice:
    """A device object as cupy's: equal by id, not hashable."""
    __hash__ = None

    def __init__(self, id):
        self.id = id

    def __eq__(self, other):
        return isinstance(other, _UnhashableDevice) and other.id == self.id


class _ArrayOnDevice(np.ndarray):
    device = _UnhashableDevice(0)


def test_array_with_an_unhashable_device_launches(monkeypatch):
    """The backend chosen for an argument kind is remembered by (type, device); a device that
    cannot be hashed (cupy's) must not fail the launch."""
    monkeypatch.delenv("TRITIUM_BACKEND", raising=False)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(100).astype(np.float32).view(_ArrayOnDevice)
    y = rng.standard_normal(100).astype(np.float32).view(_ArrayOnDevice)
    for _ in range(2):  # the second launch finds the remembered backend
        z = np.full(100, np.nan, np.float32).view(_ArrayOnDevice)
        _add[(2,)](x, y, z, 100, BLOCK=64)
        np.testing.assert_allclose(np.asarray(z), np.asarray(x) + np.asarray(y), rtol=1e-6)
