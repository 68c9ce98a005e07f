"""The persistent matmul of ``bench/persistent_kernels.py`` (an outer loop over output tiles around
the K loop, ``C = A @ B.T`` with both operands K-contiguous) gets its inner loop software-pipelined
for sm_90 as the one-tile matmul does: both operand tiles copied asynchronously into multi-slot
buffers (``B`` too, though it is transposed on its way to the dot), the wgmma left in flight across
iterations, and no layout conversion through shared memory in the loop (the block pointers' masks
are recomputed in the copies' layout).  A block-pointer loop of the same mask shape also runs on the
host SIMT emulation of the lowering."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.hooks.types import GPUTarget
from tritium.ttgir.ir import parse_module
from tritium.ttgir.pass_lists import make_ttgir
from tritium.ttir.ir import print_module

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "conversion"))
sys.path.insert(0, os.path.abspath(HERE))

import simt  # noqa: E402
from bench_files import bench_kernels  # noqa: E402

PTXAS = shutil.which("ptxas") or ("/usr/local/bin/ptxas" if os.path.exists("/usr/local/bin/ptxas") else None)


def _bench_kernels():
    return bench_kernels("pm_tritium_pipeline_test", "persistent_kernels.py")


def _inner_loop(ttgir: str) -> str:
    """The text of the second ``scf.for``'s body (the K loop inside the tile loop)."""
    starts = [m.start() for m in re.finditer(r"= scf\.for |scf\.for %", ttgir)]
    assert len(starts) >= 2, "expected a loop nested in the tile loop"
    body = ttgir[starts[1]:]
    return body[:body.index("scf.yield")]


@pytest.mark.parametrize("version", ["plain", "block_ptr", "device_desc"])
def test_persistent_inner_loop_is_pipelined(version, tmp_path):
    k = _bench_kernels()
    sig = dict(a_ptr="*fp16", b_ptr="*fp16", c_ptr="*fp16", M="i32", N="i32", K="i32", stride_am="i32",
               stride_bn="i32", stride_cm="i32")
    hints = {n: {"tt.divisibility": 16} for n in sig}
    cons = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, NUM_SMS=132)
    c = tritium.compile(getattr(k, f"persistent_{version}"), target="cuda:90", signature=sig, constexprs=cons,
                        attrs=hints, num_warps=8, num_stages=3)
    loop = _inner_loop(c.asm["ttgir"])
    assert "tt.load" not in loop, "an operand tile is still loaded synchronously"
    assert "ttg.local_alloc" not in loop  # no tile written to shared memory from registers
    ptx = c.asm["ptx"]
    if version == "device_desc":
        # the descriptors the kernel makes are TMA tensor maps: bulk copies into the slots
        assert loop.count("ttg.async_copy_descriptor_to_local") == 2 and "ttg.wait_barrier" in loop
        assert ptx.count("tensormap.cp_fenceproxy") == 3 and "cp.async.bulk.tensor.2d" in ptx
        assert c.metadata.global_scratch_size == 3 * 128
    else:
        assert loop.count("ttg.async_copy_global_to_local") == 2 and "ttg.async_wait" in loop
        # B's copy reads 16 contiguous bytes per thread along K, like A's
        assert ptx.count("cp.async.cg.shared.global") >= 12 and "cp.async.ca" not in ptx
    assert "ttng.warp_group_dot_wait" in loop and "pendings = 1" in loop  # the wgmma stays in flight
    assert "ttg.convert_layout" not in loop
    if PTXAS is None:
        pytest.skip("no ptxas on this machine to assemble the PTX with")
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    subprocess.run([PTXAS, "-arch=sm_90a", str(src), "-o", str(tmp_path / "k.cubin")], check=True,
                   capture_output=True)


@tritium.jit
def row_block_sum(x_ptr, out_ptr, M, K, stride_m, BM: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    bp = tl.make_block_ptr(x_ptr, (M, K), (stride_m, 1), (pid * BM, 0), (BM, BK), (1, 0))
    acc = tl.zeros((BM, BK), dtype=tl.float32)
    for _ in range(tl.cdiv(K, BK)):
        acc += tl.load(bp, boundary_check=(0, 1))
        bp = tl.advance(bp, (0, BK))
    out = tl.make_block_ptr(out_ptr, (M, BK), (BK, 1), (pid * BM, 0), (BM, BK), (1, 0))
    tl.store(out, acc, boundary_check=(0, 1))


def test_block_ptr_mask_is_recomputed_in_the_load_layout_and_runs_on_host_simt():
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "M": "i32", "K": "i32", "stride_m": "i32"}
    k = tritium.compile(row_block_sum, target="cuda:90", signature=sig, constexprs={"BM": 32, "BK": 64},
                        attrs={n: {"tt.divisibility": 16} for n in ("x_ptr", "out_ptr", "stride_m")}, stage="ttir")
    module = make_ttgir(parse_module(k.asm["ttir"]), GPUTarget("cuda", 90, 32), {"num_warps": 4})
    text = print_module(module)
    loop = text[text.index("scf.for"):]
    assert "ttg.convert_layout" not in loop[:loop.index("scf.yield")]
    m, kk, stride = 45, 150, 160
    x = np.random.default_rng(7).standard_normal((m, stride)).astype(np.float32) + 3.0
    out = np.full((m, 64), np.nan, np.float32)
    assert simt.run_ttgir(module, [x, out, m, kk, stride], grid=(2, 1, 1)) == 0
    ref = np.zeros((m, 64))
    for k0 in range(0, kk, 64):
        w = min(64, kk - k0)
        ref[:, :w] += x[:, k0:k0 + w].astype(np.float64)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
