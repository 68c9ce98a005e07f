"""fp32 ``exp2`` / ``exp`` / ``log2`` on AMD follow Triton 3.6's denormal rule: ``tl.exp2`` is
``v_exp_f32`` alone under any options (the instruction flushes denormals, which Triton accepts for
it); ``tl.exp`` and ``tl.log2`` keep LLVM's denormal scaling around ``v_exp_f32`` / ``v_log_f32``
unless the kernel sets ``allow_flush_denorm``, which marks it ``"denormal-fp-math-f32"="preserve-sign"``.
Compile-only: the instructions are read from the assembly, nothing is run."""
import re

import pytest

import tritium as triton
import tritium.language as tl

TARGETS = ["hip:gfx942", "hip:gfx1100"]
SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32"}


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))


@triton.jit
def exp2_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.exp2(tl.load(x_ptr + offs)))


@triton.jit
def exp_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs)))


@triton.jit
def log2_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.log2(tl.load(x_ptr + offs)))


def _body(asm: str) -> list[str]:
    """The instructions of the kernel's code, all of it (past the first ``s_endpgm`` too)."""
    out = []
    for line in asm.splitlines():
        s = line.strip()
        if s and not s.startswith((".", ";", "//")) and not s.endswith(":") and re.match(r"[sv]_|global_|buffer_|ds_|flat_", s):
            out.append(s.split()[0])
    return out


def _compile(fn, target, **opts):
    return triton.compile(fn, target=target, signature=SIG, constexprs={"BLOCK": 64 if "1100" in target else 128},
                          attrs={}, **opts)


# the denormal-range handling LLVM wraps around v_exp_f32 / v_log_f32: an fp32 compare against the
# smallest normal (or -126), selects of the scale factors, a scaling multiply / ldexp / add; these
# kernels have no other fp32 compare
def _scaled(body: list[str]) -> list[str]:
    return [i for i in body if re.match(r"v_cmp_\w*_f32|v_ldexp_f32", i)]


@pytest.mark.parametrize("target", TARGETS)
def test_exp2_is_a_bare_v_exp_f32_under_default_options(target):
    k = _compile(exp2_kernel, target)
    assert "llvm.amdgcn.exp2.f32" in k.asm["llir"] and "llvm.exp2.f32" not in k.asm["llir"]
    body = _body(k.asm["amdgcn"])
    assert "v_exp_f32" in body or "v_exp_f32_e32" in body
    assert not _scaled(body), _scaled(body)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, instr", [(exp_kernel, "v_exp_f32"), (log2_kernel, "v_log_f32")])
def test_exp_and_log2_keep_the_denormal_scaling_unless_flushing_is_allowed(target, fn, instr):
    k = _compile(fn, target)
    assert '"denormal-fp-math-f32"="ieee,ieee"' in k.asm["llir"]
    body = _body(k.asm["amdgcn"])
    assert any(i.startswith(instr) for i in body) and _scaled(body)
    k = _compile(fn, target, allow_flush_denorm=True)
    assert '"denormal-fp-math-f32"="preserve-sign,preserve-sign"' in k.asm["llir"]
    body = _body(k.asm["amdgcn"])
    assert any(i.startswith(instr) for i in body) and not _scaled(body), _scaled(body)
