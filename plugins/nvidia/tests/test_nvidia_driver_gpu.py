"""On a CUDA device: load, launch and check the hand-written kernels."""
import pytest

from tritium_nvidia.toolchain import binary, kernels
from tritium_nvidia.plugin import nvidia_plugin as plugin

pytestmark = pytest.mark.skipif(not plugin.tritium_device_present("nvidia"), reason="no CUDA device")
SIG = {0: "*fp32", 1: "*fp32", 2: "*fp32", 3: "i32", 4: "fp32"}


@pytest.fixture(scope="module")
def add():
    drv = plugin.tritium_driver("nvidia")
    target = drv.get_current_target()
    md = {"num_warps": 4}
    ptx = binary.llir_to_ptx(kernels.VECTOR_ADD_LLIR, target.arch)
    handle = drv.load_binary("add_kernel", binary.ptx_to_cubin(ptx, target.arch, "add_kernel", metadata=md), md, 0)
    return drv, drv.make_launcher(handle, md, SIG)


def test_properties():
    drv = plugin.tritium_driver("nvidia")
    p = drv.get_device_properties(0)
    assert p["multiprocessor_count"] > 0 and p["warp_size"] == 32 and p["max_shared_mem"] >= 48 * 1024
    assert plugin.tritium_current_target("nvidia").backend == "cuda"


@pytest.mark.parametrize("grid", [(8, 1, 1), (2, 2, 2), (1, 1, 8)])
def test_vector_add_device_array(add, grid):
    np = pytest.importorskip("numpy")
    from tritium_nvidia.runtime.device_pointers import DeviceArray
    drv, launch = add
    n = 1000
    x, y = np.random.randn(n).astype("f4"), np.random.randn(n).astype("f4")
    dx, dy = DeviceArray(n, "fp32").copy_from_host(x), DeviceArray(n, "fp32").copy_from_host(y)
    out = DeviceArray(n, "fp32").copy_from_host(np.full(n, np.nan, "f4"))
    launch(grid, 0, (dx, dy, out, n, 3.0))
    drv.synchronize()
    np.testing.assert_allclose(out.copy_to_host(), x + 3.0 * y, rtol=1e-6, atol=1e-6)
    assert drv.owns(dx) and drv.device_of(dx) == 0


def test_launch_error_names_kernel(add):
    drv, launch = add
    with pytest.raises(RuntimeError, match="add_kernel"):
        launch((1 << 31, 1, 1), 0, (0, 0, 0, 0, 1.0))
