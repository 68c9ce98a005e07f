"""A dot operand made before the loops that read it is prepared once (sm_90, ``wgmma``): a tile in
registers that wgmma reads from registers (A computed, e.g. a scaled Q) is converted to the operand
layout before the loop, not every iteration; a tile two loops read from shared memory (the causal
form of attention: an unmasked loop, then the diagonal's) is written there once, before the first,
so its registers are free during both loops.  CPU: the TTGIR of sm_90 compiles.  GPU: the results
against float64."""
import re

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium_nvidia.plugin import nvidia_plugin as plugin


@triton.jit
def _two_loops(q_ptr, k_ptr, o_ptr, N, SCALE_Q: tl.constexpr):
    r = tl.arange(0, 64)
    d = tl.arange(0, 32)
    q = tl.load(q_ptr + r[:, None] * 32 + d[None, :])
    if SCALE_Q:
        q = tl.where(r[:, None] < N, q * 0.5, 0.0)  # computed in registers: wgmma reads A from there
    acc = tl.zeros([64, 64], dtype=tl.float32)
    for s in range(0, N, 64):
        kt = tl.load(k_ptr + (s + r)[None, :] * 32 + d[:, None])
        acc += tl.dot(q, kt)
    for s in range(N, 2 * N, 64):
        kt = tl.load(k_ptr + (s + r)[None, :] * 32 + d[:, None])
        acc += tl.dot(q, kt) * 2.0
    tl.store(o_ptr + r[:, None] * 64 + r[None, :], acc)


def _ttgir(monkeypatch, tmp_path, scale_q: bool) -> str:
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    sig = {"q_ptr": "*fp16", "k_ptr": "*fp16", "o_ptr": "*fp32", "N": "i32", "SCALE_Q": "constexpr"}
    k = triton.compile(_two_loops, target="cuda:90", signature=sig, constexprs={"SCALE_Q": scale_q},
                       attrs={n: {"tt.divisibility": 16} for n in ("q_ptr", "k_ptr", "o_ptr", "N")},
                       num_warps=4, num_stages=3)
    return k.asm["ttgir"]


def _loop_depth(lines: list[str]) -> list[int]:
    """Each line's count of enclosing ``scf.for`` bodies."""
    depth, out = 0, []
    for ln in lines:
        if re.search(r"^\s*\}", ln):
            depth = max(0, depth - 1)
        out.append(depth)
        if ln.rstrip().endswith("{"):
            depth += 1
    return out


def test_register_operand_converted_once_before_the_loops(monkeypatch, tmp_path):
    lines = _ttgir(monkeypatch, tmp_path, True).splitlines()
    depth = _loop_depth(lines)
    body = [i for i, ln in enumerate(lines) if "tt.func" in ln][0]
    cvts = [i for i, ln in enumerate(lines) if "ttg.convert_layout" in ln and "opIdx = 0" in ln.split("->")[-1]]
    dots = [i for i, ln in enumerate(lines) if "ttng.warp_group_dot " in ln]
    assert len(dots) == 2 and all(depth[i] - depth[body] >= 1 for i in dots), "both dots in their loops"
    assert len(cvts) == 1, cvts
    assert depth[cvts[0]] == depth[body + 1], "the operand conversion sits in the kernel's body, before the loops"
    assert not any(re.search(r"ttg\.local_alloc %\w+ .*tensor<64x32xf16", ln) for ln in lines), \
        "A stays in registers: no shared-memory copy"


def test_two_loops_read_one_shared_copy(monkeypatch, tmp_path):
    ttgir = _ttgir(monkeypatch, tmp_path, False)
    q_writes = [ln for ln in ttgir.splitlines() if re.search(r"ttg\.local_alloc %\w+ .*tensor<64x32xf16", ln)]
    assert len(q_writes) == 1, q_writes


@pytest.mark.skipif(not plugin.tritium_device_present("nvidia"), reason="no CUDA device")
@pytest.mark.parametrize("scale_q", [False, True])
@pytest.mark.parametrize("n", [64, 192])
def test_two_loops_on_the_gpu(scale_q, n):
    torch = pytest.importorskip("torch")
    g = torch.Generator(device="cuda").manual_seed(7)
    q = (torch.rand(64, 32, device="cuda", generator=g) * 2 - 1).half()
    k = (torch.rand(2 * n, 32, device="cuda", generator=g) * 2 - 1).half()
    o = torch.full((64, 64), float("nan"), device="cuda")
    _two_loops[(1,)](q, k, o, n, SCALE_Q=scale_q, num_warps=4, num_stages=3)
    qq = q.double().cpu().numpy() * (0.5 if scale_q else 1.0)
    kk = k.double().cpu().numpy().reshape(2, n // 64, 64, 32)
    ref = qq @ kk[0].sum(0).T + 2 * (qq @ kk[1].sum(0).T)
    np.testing.assert_allclose(o.cpu().numpy(), ref, rtol=1e-3, atol=1e-2)
