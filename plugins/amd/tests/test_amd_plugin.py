"""CPU-only: hook implementations, targets, options, the toolchain search, the driver without
ROCm, argument packing and the TTGIR text of the AMD encodings."""
import ctypes
import importlib.util

import numpy as np
import pytest

from tritium.hooks import GPUTarget, Options
from tritium_amd.runtime import device_pointers, driver
from tritium_amd.plugin import amd_plugin as plugin
from tritium_amd.toolchain import tools
from tritium_amd.toolchain.elf import explicit_kernarg_layout
from tritium_amd.options import HIPOptions


def test_backend_info():
    info = plugin.tritium_backend_info()
    assert info.name == "amd" and info.api_version == plugin.TRITIUM_PLUGIN_API == 1
    assert info.stages == ("ttir", "ttgir", "llir", "amdgcn", "hsaco") and info.binary_ext == "hsaco"
    assert {"hip:gfx90a", "hip:gfx942", "hip:gfx1100"} <= set(info.targets)


def test_parse_target():
    assert plugin.tritium_parse_target("hip:gfx942") == GPUTarget("hip", "gfx942", 64)
    assert plugin.tritium_parse_target("hip:gfx90a:sramecc+:xnack-") == GPUTarget("hip", "gfx90a", 64)
    assert plugin.tritium_parse_target("hip:gfx1100") == GPUTarget("hip", "gfx1100", 32)
    assert plugin.tritium_parse_target("cuda:90") is None
    for bad in ("hip:gfx803", "hip:", "hip:sm_90"):
        with pytest.raises(ValueError, match="hip:gfx942"):
            plugin.tritium_parse_target(bad)


def test_parse_options_warp_size_from_target():
    o = plugin.tritium_parse_options(GPUTarget("hip", "gfx942", 64), {"num_warps": 8, "threads_per_warp": 32})
    assert isinstance(o, HIPOptions) and isinstance(o, Options)
    assert o.num_warps == 8 and o.threads_per_warp == 64 and o.arch == "gfx942"
    assert plugin.tritium_parse_options(GPUTarget("hip", "gfx1100", 32), {}).threads_per_warp == 32
    hash(o)
    with pytest.raises(ValueError, match="matrix_instr_nonkdim"):
        plugin.tritium_parse_options(GPUTarget("hip", "gfx942", 64), {"matrix_instr_nonkdim": 8})
    with pytest.raises(ValueError, match="1024 work-items"):
        plugin.tritium_parse_options(GPUTarget("hip", "gfx942", 64), {"num_warps": 32})
    assert plugin.tritium_parse_options(GPUTarget("cuda", 90, 32), {}) is None


def test_other_backends_get_none():
    assert plugin.tritium_device_present("nvidia") is None
    assert plugin.tritium_driver("nvidia") is None
    assert plugin.tritium_add_stages(GPUTarget("cuda", 90, 32), {}, None) is None
    assert plugin.tritium_membar_filter(GPUTarget("cuda", 90, 32)) is None


def test_membar_rule_through_the_hook():
    from tritium.hooks import manager
    backend = manager.get_backend("amd")
    rule = backend.membar_filter(GPUTarget("hip", "gfx942", 64))
    assert rule is plugin.tritium_membar_filter(GPUTarget("hip", "gfx942", 64))
    assert rule(None, None) is False


def test_encodings_registered_and_round_trip():
    from tritium.ttgir.ir import parse_module, print_module
    text = """
#mfma = #ttg.amd_mfma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [32, 32], isTransposed = false}>
#wmma = #ttg.amd_wmma<{version = 1, warpsPerCTA = [4, 1]}>
module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 64 : i32} {
  tt.func public @k(%a: tensor<64x64xf32, #mfma>, %b: tensor<64x32xf16, #ttg.dot_op<{opIdx = 0, parent = #mfma, kWidth = 4}>>, %c: tensor<32x32xf32, #wmma>) {
    tt.return
  }
}
"""
    printed = print_module(parse_module(text))
    assert "#ttg.amd_mfma<{versionMajor = 3, warpsPerCTA = [2, 2], instrShape = [32, 32], isTransposed = false}>" in printed
    assert "#ttg.amd_wmma<{version = 1, warpsPerCTA = [4, 1]}>" in printed
    assert print_module(parse_module(printed)) == printed


def test_device_absent_without_rocm():
    drv = driver.HipDriver()
    if importlib.util.find_spec("hip") is not None:
        pytest.skip("hip-python is installed here; this checks the compile-only path without it")
    assert drv.is_active() is False and plugin.tritium_device_present("amd") is False
    assert "hip-python" in drv.inactive_reason() and "pip install" in drv.inactive_reason()
    with pytest.raises(RuntimeError, match="no usable AMD GPU"):
        drv.get_device_properties(0)


def test_tritium_backends_says_why(capsys):
    if importlib.util.find_spec("hip") is not None:
        pytest.skip("hip-python is installed here")
    from tritium.cli import main
    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    assert "amd: no device: hip-python is not installed" in out and "compile-only" in out


def test_lld_search_and_missing_message(monkeypatch):
    assert "pip install ziglang" in tools.missing_lld_message()
    tools.find_lld.cache_clear()
    monkeypatch.setenv("TRITIUM_LLD_PATH", "/nonexistent/ld.lld")
    with pytest.raises(tools.ToolchainError, match="TRITIUM_LLD_PATH"):
        tools.find_lld()
    monkeypatch.delenv("TRITIUM_LLD_PATH")
    tools.find_lld.cache_clear()
    assert tools.find_lld() is not None
    assert "LLD" in (tools.lld_version() or "")


def test_link_without_lld_names_what_to_install(monkeypatch):
    from tritium_amd.toolchain import binary
    monkeypatch.setattr(tools, "find_lld", lambda: None)
    with pytest.raises(tools.ToolchainError, match="pip install ziglang"):
        binary.link_hsaco(b"\x7fELF")


def test_kernarg_layout():
    assert explicit_kernarg_layout(["*fp32", "i32", "*fp16", "fp16", "i64", "i1"]) == \
        [(0, 8), (8, 4), (16, 8), (24, 2), (32, 8), (40, 1)]


def test_arg_packers_match_the_layout():
    packers = driver.arg_packers({0: "*fp32", 1: "constexpr", 2: "i32", 3: "fp16", 4: "bf16", 5: "fp32"})
    vals = [p(v) for p, v in zip(packers, [0x1000, 7, 1.0, 1.0, 2.5])]
    assert [type(v) for v in vals] == [ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint16, ctypes.c_uint16, ctypes.c_float]
    assert vals[0].value == 0x1000 and vals[2].value == 0x3C00 and vals[3].value == 0x3F80
    assert [ctypes.sizeof(v) for v in vals] == [s for _, s in explicit_kernarg_layout(["*fp32", "i32", "fp16", "bf16", "fp32"])]
    with pytest.raises(ValueError, match="unsupported type"):
        driver.arg_packers({0: "tensor"})


class _CAI:
    __cuda_array_interface__ = {"data": (0x2000, False), "shape": (1,), "typestr": "<f4", "version": 3}


def test_pointer_getters():
    assert device_pointers.pointer_getter(None)(None) == 0
    assert device_pointers.pointer_getter(1234)(1234) == 1234
    assert device_pointers.pointer_getter(_CAI())(_CAI()) == 0x2000
    a = np.arange(4, dtype=np.float32)
    assert device_pointers.pointer_getter(a)(a) == a.ctypes.data   # DLPack
    assert device_pointers.device_of(a) is None                    # host memory is not ours
    with pytest.raises(TypeError, match="pointer argument"):
        device_pointers.pointer_getter("x")


def test_ttgir_stage_is_one_visible_pass_list():
    """The AMD ttgir stage runs ``compiler.ttgir_passes``: the core's list, then AMD's passes in
    order, each a pass object; the stage records accelerate-matmul's per-dot lines."""
    import tritium
    import tritium.language as tl
    from tritium_amd.compiler import ttgir_passes
    from tritium_amd.options import parse_options, parse_target

    target = parse_target("hip:gfx942")
    names = [p.name for p in ttgir_passes(target, parse_options(target, {}))]
    assert names[-7:] == ["tritonamdgpu-accelerate-matmul", "tritonamdgpu-in-thread-transpose",
                          "tritonamdgpu-optimize-epilogue", "tritonamdgpu-stream-pipeline", "cse", "dce",
                          "tritonamdgpu-bound-epilogue-scratch"]
    assert names.index("convert-to-ttgir") < names.index("tritonamdgpu-accelerate-matmul")

    @tritium.jit
    def dot(a, b, c):
        r = tl.arange(0, 32)
        x = tl.load(a + r[:, None] * 32 + r[None, :])
        y = tl.load(b + r[:, None] * 32 + r[None, :])
        tl.store(c + r[:, None] * 32 + r[None, :], tl.dot(x, y))
    k = tritium.compile(dot, target="hip:gfx942", signature={"a": "*fp16", "b": "*fp16", "c": "*fp32"},
                        stage="ttgir")
    assert [line.split(":")[0] for line in k.metadata["dot_lowering"]] == ["mfma"]
