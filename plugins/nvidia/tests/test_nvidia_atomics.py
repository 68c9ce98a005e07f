"""CPU-only: atomics carry their memory ordering and scope into the PTX, spelled as Triton spells
them (``atom.global.<scope>.<sem>.<op>`` for read-modify-writes, ``atom.global.<sem>.<scope>.cas``
for compare-and-swap), and ptxas accepts every combination."""
import re

import pytest

import tritium as triton
import tritium.language as tl

SEMS = [None, "relaxed", "acquire", "release", "acq_rel"]
SCOPES = [None, "cta", "gpu", "sys"]


@triton.jit
def rmw_and_cas(x_ptr, z_ptr, lock_ptr, SEM: tl.constexpr, SCOPE: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0))
    tl.atomic_add(z_ptr, x, sem=SEM, scope=SCOPE)
    tl.atomic_cas(lock_ptr, 0, 1, sem=SEM, scope=SCOPE)


def _atoms(ptx: str) -> list[str]:
    return re.findall(r"\batom\.[\w.:]+", ptx)


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("sem", SEMS)
def test_sem_and_scope_reach_the_ptx(sem, scope, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = triton.compile(rmw_and_cas, target="cuda:90", signature={"x_ptr": "*fp32", "z_ptr": "*fp32", "lock_ptr": "*i32"},
                       constexprs={"SEM": sem, "SCOPE": scope})
    want_sem, want_scope = sem or "acq_rel", scope or "gpu"  # Triton's defaults
    assert _atoms(k.asm["ptx"]) == [f"atom.global.{want_scope}.{want_sem}.add.f32",
                                    f"atom.global.{want_sem}.{want_scope}.cas.b32"]
    assert k.asm["cubin"][:4] == b"\x7fELF"  # ptxas took the spelling


@triton.jit
def every_rmw_kind(i_ptr, u_ptr, l_ptr, d_ptr, h_ptr, b_ptr, SEM: tl.constexpr):
    r = tl.arange(0, 128)
    i = tl.load(i_ptr + r)
    tl.atomic_add(i_ptr + r, i, sem=SEM)
    tl.atomic_max(i_ptr + r, i, sem=SEM)
    tl.atomic_min(u_ptr + r, tl.load(u_ptr + r), sem=SEM)
    tl.atomic_xor(l_ptr + r, tl.load(l_ptr + r), sem=SEM)
    tl.atomic_xchg(l_ptr + r, tl.load(l_ptr + r), sem=SEM)
    tl.atomic_add(d_ptr + r, tl.load(d_ptr + r), sem=SEM)
    tl.atomic_add(h_ptr + r, tl.load(h_ptr + r), sem=SEM)
    tl.atomic_add(b_ptr + r, tl.load(b_ptr + r), sem=SEM)
    tl.atomic_cas(l_ptr + r, tl.load(l_ptr + r), tl.load(l_ptr + r) + 1, sem=SEM)


@pytest.mark.parametrize("sem", ["relaxed", "release"])
def test_every_kind_and_width_is_spelled_as_triton(sem, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    sig = {"i_ptr": "*i32", "u_ptr": "*u32", "l_ptr": "*i64", "d_ptr": "*fp64", "h_ptr": "*fp16", "b_ptr": "*bf16"}
    k = triton.compile(every_rmw_kind, target="cuda:90", signature=sig, constexprs={"SEM": sem}, num_warps=4)
    atoms = set(_atoms(k.asm["ptx"]))
    p = f"atom.global.gpu.{sem}"
    assert atoms == {f"{p}.add.u32", f"{p}.max.s32", f"{p}.min.u32", f"{p}.xor.b64", f"{p}.exch.b64",
                     f"{p}.add.f64", f"{p}.add.noftz.f16", f"{p}.add.noftz.bf16",
                     f"atom.global.{sem}.gpu.cas.b64"}
    assert k.asm["cubin"][:4] == b"\x7fELF"


def test_sm80_takes_the_orderings_too(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = triton.compile(rmw_and_cas, target="cuda:80", signature={"x_ptr": "*fp32", "z_ptr": "*fp32", "lock_ptr": "*i32"},
                       constexprs={"SEM": "acquire", "SCOPE": "sys"})
    assert _atoms(k.asm["ptx"]) == ["atom.global.sys.acquire.add.f32", "atom.global.acquire.sys.cas.b32"]
    assert k.asm["cubin"][:4] == b"\x7fELF"
