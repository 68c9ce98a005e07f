"""CPU-only: which sm_90 kernels are marked for paired launches (``passes/pair_programs.py``): tiled
dot kernels of at most 4 warps whose two blocks fit an SM and whose programs do equal work; not
8-warp tiles, causal attention (its programs' loops grow with the program id), kernels without a
dot, or other targets.  (The launches themselves: ``fakecuda/cases_torch_launch.py``.)"""
import os
import sys

import pytest

import tritium
import tritium.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_files import bench_kernels  # noqa: E402

D16 = {"tt.divisibility": 16}


@pytest.fixture(scope="module")
def kernels():
    return bench_kernels("pair_programs_test", "matmul_kernels.py")


def _matmul(kernels, target, bm, bn, bk, warps, stages):
    ints = ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", **{n: "i32" for n in ints}}
    consts = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8, "ACC_INT": False,
              "stride_ak": 1, "stride_bn": 1, "stride_cn": 1}
    return tritium.compile(kernels.matmul_kernel, target=target, signature=sig, constexprs=consts,
                           attrs={n: D16 for n in sig}, num_warps=warps, num_stages=stages)


def _attention(kernels, causal, warps=4):
    names = ["Q", "K", "V", "sm_scale", "Out", "stride_qz", "stride_qh", "stride_qm", "stride_kz", "stride_kh",
             "stride_kn", "stride_vz", "stride_vh", "stride_vk", "stride_oz", "stride_oh", "stride_om", "H", "N_CTX"]
    sig = {n: ("fp32" if n == "sm_scale" else "*fp16" if n in ("Q", "K", "V", "Out") else "i32") for n in names}
    consts = {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": causal,
              "stride_qk": 1, "stride_kk": 1, "stride_vn": 1, "stride_on": 1}
    return tritium.compile(kernels.attn_fwd, target="cuda:90", signature=sig, constexprs=consts,
                           attrs={n: D16 for n, t in sig.items() if t != "fp32"}, num_warps=warps, num_stages=3)


@tritium.jit
def _scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def _marked(k) -> bool:
    return k.metadata.get("pair_programs") is True


def test_two_block_tiles_are_marked_and_one_block_tiles_not(kernels, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    assert _marked(_matmul(kernels, "cuda:90", 64, 256, 32, 4, 4))       # 80 KiB, 4 warps
    assert _marked(_matmul(kernels, "cuda:90", 128, 128, 64, 4, 3))      # 96 KiB
    assert not _marked(_matmul(kernels, "cuda:90", 128, 256, 64, 8, 3))  # 8 warps: one block an SM
    assert not _marked(_matmul(kernels, "cuda:90", 128, 256, 64, 4, 4))  # 192 KiB: one block an SM
    assert not _marked(_matmul(kernels, "cuda:80", 64, 256, 32, 4, 4))   # no clusters before sm_90


def test_programs_of_unequal_work_and_kernels_without_a_dot_are_not(kernels, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    assert _marked(_attention(kernels, causal=False))
    assert not _marked(_attention(kernels, causal=True))
    k = tritium.compile(_scale, target="cuda:90", signature={"x_ptr": "*fp32", "n": "i32"},
                        constexprs={"BLOCK": 1024})
    assert not _marked(k)
