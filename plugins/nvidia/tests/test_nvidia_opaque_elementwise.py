"""Library calls and inline assembly marked pure are elementwise ops like any other: they take the
layout of what feeds them (a dot's accumulator stays in the tensor cores' layout, no round trip
through shared memory), CSE merges two equal ones and DCE drops an unused one; unmarked ones keep
every effect.  CPU: the TTIR and TTGIR of sm_90 compiles.  GPU: the results against float64."""
import re

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.language.extra import libdevice
from tritium_nvidia.plugin import nvidia_plugin as plugin

# 2x + 1 on four packed elements at a time: each output register from its own input
_FMA4 = tl.constexpr(" ".join(f"fma.rn.f32 ${i}, ${i + 4}, 0f40000000, 0f3F800000;" for i in range(4)))


@triton.jit
def _dot_then(a_ptr, b_ptr, c_ptr, FN: tl.constexpr, PURE: tl.constexpr):
    r = tl.arange(0, 64)
    a = tl.load(a_ptr + r[:, None] * 64 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 64 + r[None, :])
    acc = tl.dot(a, b)
    if FN == "asm":
        acc = tl.inline_asm_elementwise(_FMA4, "=r,=r,=r,=r,r,r,r,r", [acc], dtype=tl.float32, is_pure=PURE, pack=4)
    elif FN == "libdevice":
        acc = libdevice.tanh(acc * 0.125)
    else:
        acc = acc * 2.0 + 1.0
    acc = tl.dot(acc.to(tl.float16), b)  # as attention's P V: the result feeds another dot
    tl.store(c_ptr + r[:, None] * 64 + r[None, :], acc)


_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "FN": "constexpr", "PURE": "constexpr"}


def _compile(fn, monkeypatch, tmp_path, **constexprs):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    sig = {k: v for k, v in _SIG.items() if k in fn.arg_names}
    return triton.compile(fn, target="cuda:90", signature=sig, constexprs=constexprs, num_warps=4)


def _conversions(ttgir: str) -> int:
    return ttgir.count("ttg.convert_layout")


@pytest.mark.parametrize("fn, op", [("asm", "tt.elementwise_inline_asm"), ("libdevice", "tt.extern_elementwise")])
def test_pure_opaque_op_keeps_the_dots_layout(fn, op, monkeypatch, tmp_path):
    plain = _compile(_dot_then, monkeypatch, tmp_path, FN="plain", PURE=True).asm["ttgir"]
    k = _compile(_dot_then, monkeypatch, tmp_path, FN=fn, PURE=True).asm["ttgir"]
    line = next(ln for ln in k.splitlines() if op in ln)
    assert "nvidia_mma" in line and "blocked" not in line.split("->")[0], line
    assert _conversions(k) == _conversions(plain), (_conversions(k), _conversions(plain))


def test_impure_inline_asm_still_compiles(monkeypatch, tmp_path):
    k = _compile(_dot_then, monkeypatch, tmp_path, FN="asm", PURE=False)
    assert k.asm["ttgir"].count("tt.elementwise_inline_asm") == 1
    assert "fma.rn.f32" in k.asm["ptx"]


@triton.jit
def _twice(x_ptr, y_ptr, PURE: tl.constexpr, USE: tl.constexpr):
    r = tl.arange(0, 128)
    x = tl.load(x_ptr + r)
    a = tl.inline_asm_elementwise("add.s32 $0, $1, 7;", "=r,r", [x], dtype=tl.int32, is_pure=PURE, pack=1)
    b = tl.inline_asm_elementwise("add.s32 $0, $1, 7;", "=r,r", [x], dtype=tl.int32, is_pure=PURE, pack=1)
    if USE:
        tl.store(y_ptr + r, a + b)
    else:
        tl.store(y_ptr + r, x)


@pytest.mark.parametrize("pure, use, left", [(True, True, 1), (False, True, 2), (True, False, 0), (False, False, 2)])
def test_cse_and_dce_follow_the_pure_flag(pure, use, left, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = triton.compile(_twice, target="cuda:90", signature={"x_ptr": "*i32", "y_ptr": "*i32", "PURE": "constexpr",
                                                             "USE": "constexpr"},
                       constexprs={"PURE": pure, "USE": use}, num_warps=4)
    assert k.asm["ttir"].count("tt.elementwise_inline_asm") == left
    assert len(re.findall(r"add\.s32 %r\d+, %r\d+, 7;", k.asm["ptx"])) == left


@pytest.mark.skipif(not plugin.tritium_device_present("nvidia"), reason="no CUDA device")
@pytest.mark.parametrize("fn, pure", [("asm", True), ("asm", False), ("libdevice", True), ("plain", True)])
def test_opaque_op_on_a_dot_result_on_the_gpu(fn, pure):
    torch = pytest.importorskip("torch")
    g = torch.Generator(device="cuda").manual_seed(1)
    a = (torch.rand(64, 64, device="cuda", generator=g) * 2 - 1).half()
    b = (torch.rand(64, 64, device="cuda", generator=g) * 2 - 1).half()
    c = torch.full((64, 64), float("nan"), device="cuda")
    _dot_then[(1,)](a, b, c, FN=fn, PURE=pure, num_warps=4)
    ref = a.double().cpu().numpy() @ b.double().cpu().numpy()
    ref = np.tanh(ref * 0.125) if fn == "libdevice" else ref * 2 + 1
    ref = ref.astype(np.float16).astype(np.float64) @ b.double().cpu().numpy()
    np.testing.assert_allclose(c.cpu().numpy(), ref, rtol=1e-3, atol=1e-2)  # P rounds to fp16
