"""``longest-programs-first`` (``core/ttgir/passes/program_order.py``, option ``longest_first``): a
kernel whose loops run longer for larger ``program_id(0)`` reads its program id backwards, so the
longest programs start first; kernels whose work does not grow with it, or whose program order can
be observed (atomics), are left alone.  CPU: the TTGIR of sm_90.  GPU: results unchanged."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium_nvidia.plugin import nvidia_plugin as plugin


@triton.jit(noinline=True)
def _row_of(BLOCK: tl.constexpr):
    return tl.program_id(0) * BLOCK


@triton.jit
def _triangle(x_ptr, out_ptr, BLOCK: tl.constexpr, MODE: tl.constexpr = 0):
    """Row block ``m`` sums blocks 0..m of ``x`` (causal attention's shape of work); ``MODE`` 1
    adds the sums atomically into one block, 2 stores through a ``noinline`` callee reading the id."""
    m = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, (m + 1) * BLOCK, BLOCK):
        acc += tl.load(x_ptr + start + offs)
    if MODE == 1:
        tl.atomic_add(out_ptr + offs, acc)
    elif MODE == 2:
        tl.store(out_ptr + _row_of(BLOCK) + offs, acc)
    else:
        tl.store(out_ptr + m * BLOCK + offs, acc)


@triton.jit
def _shrinking(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Program ``p`` sums blocks p..n-1: less work for larger ids (already longest first)."""
    p = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(p * BLOCK, n * BLOCK, BLOCK):
        acc += tl.load(x_ptr + start + offs)
    tl.store(out_ptr + p * BLOCK + offs, acc)


def _ttgir(monkeypatch, tmp_path, fn, sig, mode=None, **opts) -> str:
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    consts = {"BLOCK": 128} if mode is None else {"BLOCK": 128, "MODE": mode}
    sig = sig if mode is None else dict(sig, MODE="constexpr")
    k = triton.compile(fn, target="cuda:90", signature=sig, constexprs=consts,
                       attrs={n: {"tt.divisibility": 16} for n in sig if sig[n] != "constexpr"}, num_warps=4, **opts)
    return k.asm["ttgir"]


_SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32", "BLOCK": "constexpr"}


def test_growing_work_reads_the_id_backwards(monkeypatch, tmp_path):
    ttgir = _ttgir(monkeypatch, tmp_path, _triangle, _SIG)
    assert "tt.get_num_programs x" in ttgir, "the program id is read as num_programs - 1 - id"


def test_option_off_keeps_the_order(monkeypatch, tmp_path):
    assert "tt.get_num_programs" not in _ttgir(monkeypatch, tmp_path, _triangle, _SIG, longest_first=False)


def test_shrinking_work_and_atomics_keep_the_order(monkeypatch, tmp_path):
    assert "tt.get_num_programs" not in _ttgir(monkeypatch, tmp_path, _shrinking, dict(_SIG, n="i32"))
    assert "tt.get_num_programs" not in _ttgir(monkeypatch, tmp_path, _triangle, _SIG, mode=1)


def test_a_callee_reading_the_id_keeps_the_order(monkeypatch, tmp_path):
    ttgir = _ttgir(monkeypatch, tmp_path, _triangle, _SIG, mode=2)
    assert "tt.call" in ttgir and "tt.get_num_programs" not in ttgir


@pytest.mark.skipif(not plugin.tritium_device_present("nvidia"), reason="no CUDA device")
@pytest.mark.parametrize("programs", [1, 2, 37])
def test_triangle_on_the_gpu(programs):
    torch = pytest.importorskip("torch")
    x = torch.rand(programs * 128, device="cuda", generator=torch.Generator(device="cuda").manual_seed(3))
    out = torch.full((programs * 128,), float("nan"), device="cuda")
    _triangle[(programs,)](x, out, BLOCK=128)
    xs = x.double().cpu().numpy().reshape(programs, 128)
    np.testing.assert_allclose(out.cpu().numpy().reshape(programs, 128), np.cumsum(xs, axis=0), rtol=1e-5)
