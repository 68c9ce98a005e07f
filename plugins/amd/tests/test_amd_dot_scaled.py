"""CPU-only: ``tl.dot_scaled`` on gfx942 (no native microscaled MFMA there) is decomposed by the
core into an upcast and an ordinary dot, which lands on the bf16 MFMA instruction."""
import re

import pytest

import tritium
import tritium.language as tl
from tritium_amd.toolchain.elf import check_hsaco


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))


@tritium.jit
def _scaled(a_ptr, s_ptr, b_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, FB: tl.constexpr):
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    a = tl.load(a_ptr + rm[:, None] * (K // 2) + tl.arange(0, K // 2)[None, :])
    s = tl.load(s_ptr + rm[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    b = tl.load(b_ptr + tl.arange(0, K)[:, None] * N + rn[None, :])
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], tl.dot_scaled(a, s, "e2m1", b, None, FB))


@pytest.mark.parametrize("fb, sig", [("bf16", "*bf16"), ("e5m2", "*u8")])
def test_gfx942_runs_the_upcast_dot_on_bf16_mfma(fb, sig):
    k = tritium.compile(_scaled, target="hip:gfx942", constexprs={"M": 64, "N": 64, "K": 64, "FB": fb},
                        signature={"a_ptr": "*u8", "s_ptr": "*u8", "b_ptr": sig, "z_ptr": "*fp32"})
    assert "tt.dot_scaled" not in k.asm["ttgir"] and "#ttg.amd_mfma" in k.asm["ttgir"]
    assert set(re.findall(r"^\s*(v_mfma\w*)", k.asm["amdgcn"], flags=re.M)) == {"v_mfma_f32_32x32x8_bf16"}
    check_hsaco(k.asm["hsaco"], k.metadata)
