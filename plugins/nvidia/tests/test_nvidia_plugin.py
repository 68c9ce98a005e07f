"""CPU-only: hook implementations, targets, options, argument packing."""
import ctypes

import pytest

from tritium.hooks import GPUTarget, Options
from tritium_nvidia.runtime import device_pointers, launcher
from tritium_nvidia.plugin import nvidia_plugin as plugin
from tritium_nvidia.options import CUDAOptions


def test_backend_info():
    info = plugin.tritium_backend_info()
    assert info.name == "nvidia" and info.api_version == plugin.TRITIUM_PLUGIN_API == 1
    assert info.stages == ("ttir", "ttgir", "llir", "ptx", "cubin") and info.binary_ext == "cubin"
    assert info.default_target == "cuda:90"


def test_parse_target():
    assert plugin.tritium_parse_target("cuda:90") == GPUTarget("cuda", 90, 32)
    assert plugin.tritium_parse_target("cuda:90a") == GPUTarget("cuda", "90a", 32)
    assert plugin.tritium_parse_target("hip:gfx942") is None
    for bad in ("cuda:75", "cuda:", "cuda:abc", "cuda:80a"):
        with pytest.raises(ValueError, match="cuda:80"):
            plugin.tritium_parse_target(bad)


def test_parse_options():
    t = GPUTarget("cuda", 80, 32)
    o = plugin.tritium_parse_options(t, {"num_warps": 8, "enable_fp_fusion": False, "unknown": 1})
    assert isinstance(o, CUDAOptions) and isinstance(o, Options)
    assert o.num_warps == 8 and not o.enable_fp_fusion and o.threads_per_warp == 32
    assert "fp8e4nv" not in o.supported_fp8_dtypes
    hash(o)
    with pytest.raises(ValueError, match="num_ctas"):
        plugin.tritium_parse_options(t, {"num_ctas": 2})
    with pytest.raises(ValueError, match="maxnreg"):
        plugin.tritium_parse_options(GPUTarget("cuda", 90, 32), {"maxnreg": 1000})
    with pytest.raises(ValueError, match="num_warps"):
        plugin.tritium_parse_options(t, {"num_warps": 3})
    assert plugin.tritium_parse_options(GPUTarget("hip", "gfx942", 64), {}) is None
    # threads_per_warp follows the target, never the user or a constant
    assert plugin.tritium_parse_options(GPUTarget("cuda", 90, 16), {"threads_per_warp": 64}).threads_per_warp == 16


def test_other_backends_get_none():
    assert plugin.tritium_device_present("amd") is None
    assert plugin.tritium_driver("amd") is None


def test_device_present_never_raises():
    assert plugin.tritium_device_present("nvidia") in (True, False)


def test_half_packing():
    assert launcher.fp16_bits(1.0) == 0x3C00
    assert launcher.bf16_bits(1.0) == 0x3F80
    assert launcher.bf16_bits(-2.0) == 0xC000
    assert launcher.bf16_bits(1.0 + 2 ** -8) == 0x3F80      # tie -> even
    assert launcher.bf16_bits(1.0 + 3 * 2 ** -9) == 0x3F81
    assert launcher.bf16_bits(float("nan")) & 0x7F80 == 0x7F80


def test_param_buffer_layout():
    buf = launcher.ParamBuffer(["*fp32", "i32", "fp32", "i64", "fp16"])
    ptrs = ctypes.cast(buf.address, ctypes.POINTER(ctypes.c_void_p))
    for i, slot in enumerate(buf.slots):
        assert ptrs[i] == ctypes.addressof(slot)
    buf.slots[1].value = -7
    assert ctypes.c_int32.from_address(ptrs[1]).value == -7


def test_signature_and_source():
    sig = {0: "*fp32", 1: "constexpr", 2: "i32", 3: "bf16"}
    assert launcher.kernel_arg_types(sig) == [(0, "*fp32"), (2, "i32"), (3, "bf16")]
    src = launcher._source(4, launcher.kernel_arg_types(sig), "bindings")
    assert "a1" not in src.split("args\n", 1)[1].replace("a1, ", "")
    with pytest.raises(ValueError, match="unsupported type"):
        launcher.kernel_arg_types({0: "tensor"})


class _CAI:
    __cuda_array_interface__ = {"data": (0x1000, False), "shape": (1,), "typestr": "<f4", "version": 3}


def test_pointer_getters():
    assert device_pointers.pointer_getter(None)(None) == 0
    assert device_pointers.pointer_getter(1234)(1234) == 1234
    assert device_pointers.pointer_getter(_CAI())(_CAI()) == 0x1000
    with pytest.raises(TypeError, match="pointer argument"):
        device_pointers.pointer_getter("x")


def test_dlpack_pointer_from_numpy():
    np = pytest.importorskip("numpy")
    a = np.arange(8, dtype=np.float32)[2:]
    assert device_pointers._dlpack_pointer(a) == a.ctypes.data
    assert device_pointers.device_of(a) is None  # host memory is not ours


@pytest.mark.parametrize("var", ["TRITIUM_DEFAULT_FP_FUSION", "TRITON_DEFAULT_FP_FUSION"])
def test_default_fp_fusion_from_the_environment(monkeypatch, var):
    t = GPUTarget("cuda", 90, 32)
    monkeypatch.setenv(var, "0")
    assert plugin.tritium_parse_options(t, {}).enable_fp_fusion is False
    assert plugin.tritium_parse_options(t, {"enable_fp_fusion": True}).enable_fp_fusion is True
    monkeypatch.setenv(var, "1")
    assert plugin.tritium_parse_options(t, {}).enable_fp_fusion is True


def test_a_negative_integer_argument_is_no_device_memory():
    # backend selection asks the plugin about every argument; a negative scalar (a kernel's int
    # parameter) crashed the address lookup before it reached the driver
    from tritium_nvidia.runtime import device_pointers
    assert device_pointers.device_of(-1) is None and device_pointers.device_of(-(1 << 70)) is None and device_pointers.device_of(1 << 64) is None
