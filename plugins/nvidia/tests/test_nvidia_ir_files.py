"""CPU-only: ``tritium.compile`` on IR files for cuda:90 -- TTGIR in Triton's late-2024 spelling
over every NVIDIA layout down to cubin, PTX and LLVM IR sources -- and, on a GPU, launching them."""
import re

import numpy as np
import pytest

import tritium
from conformance import dtypes
from conformance.cases import ir_files
from conformance.cases import tutorials_basic as tb
from tritium.compiler import IRSource
from tritium_nvidia.plugin import nvidia_plugin as plugin

_CTA = "CTAsPerCGA = [1, 1], CTASplitNum = [1, 1], CTAOrder = [0, 1]"


def legacy(text: str) -> str:
    """``text`` in Triton's pre-rename spelling (what its late-2024 layout tests write)."""
    text = text.replace("#ttg.swizzled_shared<", "#ttg.shared<").replace("!ttg.memdesc<", "!tt.memdesc<")
    return re.sub(r"(?<![\w.])ttg\.", "triton_gpu.", text)


def _mma(version, warps, instr):
    return (f"#triton_gpu.nvidia_mma<{{versionMajor={version}, versionMinor=0, warpsPerCTA={warps}, {_CTA}, "
            f"instrShape={instr}}}>")


_CASES = {c.id: c for c in ir_files.CASES}


@pytest.mark.parametrize("case_id", [
    "ir_files/triton-test-scan-layouts-legacy-spelling",
    "ir_files/nvidia-reduce-sum-nvidia_mma3-axis1-64x64-fp32",
    "ir_files/nvidia-chain-reduce-nvidia_mma2-axis1-64x64",
    "ir_files/nvidia-convert-nvidia_dot_b-to-blocked_t-32x64-fp16",
    "ir_files/nvidia-convert-nvidia_mma2-to-blocked-via-nvmma-64x64-fp16",
    "ir_files/convert-linear_swizzled-to-blocked-via-legacy_shared-64x64-int32",
    "ir_files/reduce-sum-linear_swizzled-axis0-64x64-fp32",
    "ir_files/scan-linear_swizzled-axis0-64x64-int32",
])
def test_legacy_spelled_ttgir_compiles_to_cubin(case_id, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "kernel.ttgir"
    path.write_text(legacy(_CASES[case_id].kernel.text(32)))
    kernel = tritium.compile(str(path), target="cuda:90")
    assert kernel.asm["cubin"][:4] == b"\x7fELF"
    assert list(kernel.asm) == ["ttgir", "llir", "ptx", "cubin"]
    assert kernel.metadata.num_warps == 4 and kernel.runtime_signature[0].startswith("*")
    assert f".entry {kernel.name}(" in kernel.asm["ptx"]


@pytest.mark.parametrize("src, dst", [((2, 8), (8, 2)), ((1, 4), (4, 1))])
def test_mma_v3_conversions_of_any_warp_grid_fit_in_shared_memory(src, dst, tmp_path, monkeypatch):
    """Triton's mma-to-mma test converts 256x256 int32 tensors: a whole-tensor round trip would
    need 272 KiB of shared memory; the conversion moves it in row slices instead."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    warps = src[0] * src[1]
    text = f"""
#src = {_mma(3, list(src), [16, 64, 32])}
#dst = {_mma(3, list(dst), [16, 32, 32])}
module attributes {{"triton_gpu.num-warps" = {warps} : i32, "triton_gpu.num-ctas" = 1 : i32, "triton_gpu.threads-per-warp" = 32 : i32}} {{
  tt.func public @mma2mma(%x: !tt.ptr<i32> {{tt.divisibility = 16 : i32}}, %y: !tt.ptr<i32> {{tt.divisibility = 16 : i32}}) {{
    %r = tt.make_range {{end = 256 : i32, start = 0 : i32}} : tensor<256xi32, #triton_gpu.slice<{{dim = 1, parent = #src}}>>
    %r2 = tt.expand_dims %r {{axis = 1 : i32}} : tensor<256xi32, #triton_gpu.slice<{{dim = 1, parent = #src}}>> -> tensor<256x1xi32, #src>
    %c = tt.make_range {{end = 256 : i32, start = 0 : i32}} : tensor<256xi32, #triton_gpu.slice<{{dim = 0, parent = #src}}>>
    %c2 = tt.expand_dims %c {{axis = 0 : i32}} : tensor<256xi32, #triton_gpu.slice<{{dim = 0, parent = #src}}>> -> tensor<1x256xi32, #src>
    %n = arith.constant dense<256> : tensor<256x1xi32, #src>
    %rn = arith.muli %r2, %n : tensor<256x1xi32, #src>
    %rb = tt.broadcast %rn : tensor<256x1xi32, #src> -> tensor<256x256xi32, #src>
    %cb = tt.broadcast %c2 : tensor<1x256xi32, #src> -> tensor<256x256xi32, #src>
    %off = arith.addi %rb, %cb : tensor<256x256xi32, #src>
    %ps = tt.splat %x : !tt.ptr<i32> -> tensor<256x256x!tt.ptr<i32>, #src>
    %p = tt.addptr %ps, %off : tensor<256x256x!tt.ptr<i32>, #src>, tensor<256x256xi32, #src>
    %v = tt.load %p : tensor<256x256x!tt.ptr<i32>, #src>
    %w = triton_gpu.convert_layout %v : tensor<256x256xi32, #src> -> tensor<256x256xi32, #dst>
    %o = triton_gpu.convert_layout %off : tensor<256x256xi32, #src> -> tensor<256x256xi32, #dst>
    %qs = tt.splat %y : !tt.ptr<i32> -> tensor<256x256x!tt.ptr<i32>, #dst>
    %q = tt.addptr %qs, %o : tensor<256x256x!tt.ptr<i32>, #dst>, tensor<256x256xi32, #dst>
    tt.store %q, %w : tensor<256x256x!tt.ptr<i32>, #dst>
    tt.return
  }}
}}
"""
    kernel = tritium.compile(text, target="cuda:90")
    assert kernel.metadata.num_warps == warps
    assert 0 < kernel.metadata.shared <= 160 * 1024 + 1024
    assert kernel.asm["cubin"][:4] == b"\x7fELF"


def _add_kernel(tmp_path):
    return tritium.compile(tb.add_kernel, target="cuda:90", num_warps=2,
                           signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
                           constexprs={"BLOCK_SIZE": 256})


def test_ptx_source_is_assembled(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    ptx = _add_kernel(tmp_path).asm["ptx"]
    path = tmp_path / "add.ptx"
    path.write_text(ptx)
    src = IRSource(str(path))
    assert src.name == "add_kernel" and src.signature == {0: "*i8", 1: "*i8", 2: "*i8", 3: "i32"}
    assert src.parse_options() == {"num_warps": 2}
    kernel = tritium.compile(str(path), target="cuda:90", shared=0)
    assert list(kernel.asm) == ["ptx", "cubin"] and kernel.asm["cubin"][:4] == b"\x7fELF"
    assert kernel.asm["ptx"] == ptx and kernel.metadata.num_warps == 2


def test_llir_source_is_lowered(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    llir = _add_kernel(tmp_path).asm["llir"]
    kernel = tritium.compile(llir, target="cuda:90", num_warps=2)
    assert list(kernel.asm) == ["llir", "ptx", "cubin"]
    assert kernel.runtime_signature == {0: "*i8", 1: "*i8", 2: "*i8", 3: "i32"}


@pytest.mark.skipif(not plugin.tritium_device_present("nvidia"), reason="no CUDA device")
@pytest.mark.parametrize("case_id", [c.id for c in ir_files.CASES if "/amd-" not in c.id])
def test_ir_case_runs_on_the_gpu(case_id):
    """Every IR conformance case, launched from a legacy-spelled .ttgir text with raw addresses and
    with tensors (what Triton's layout tests do)."""
    torch = pytest.importorskip("torch")
    case = _CASES[case_id]
    (name, out), = case.outputs.items()
    kernel = tritium.compile(legacy(case.kernel.text(32)))
    x = case.inputs["x"].values(np.random.default_rng(0))
    host = dtypes.encode(x, case.inputs["x"].dtype)
    xt = torch.from_numpy(host).cuda()
    zt = torch.from_numpy(dtypes.poison(out.dtype, out.shape, "sentinel")).cuda()
    kernel[(1, 1, 1)](xt.data_ptr(), zt)
    torch.cuda.synchronize()
    got = dtypes.decode(zt.cpu().numpy(), out.dtype)
    expected = case.reference(x=dtypes.decode(host, case.inputs["x"].dtype))
    rtol, atol = case.tolerance(out.dtype)
    np.testing.assert_allclose(got.astype(np.float64), np.asarray(expected, np.float64).reshape(got.shape),
                               rtol=rtol, atol=atol)
