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


# --- vector float adds (Triton's rule: sm_90 with PTX 8.1 updates up to 128 bits at once; older
# targets pack two f16 into one f16x2; every other kind and type stays one element an instruction)

@triton.jit
def add_runs(x_ptr, z_ptr, o_ptr, n, B: tl.constexpr):
    r = tl.program_id(0) * B + tl.arange(0, B)
    old = tl.atomic_add(z_ptr + r, tl.load(x_ptr + r, mask=r < n), mask=r < n, sem="relaxed")
    tl.store(o_ptr + r, old, mask=r < n)


def _runs(target, dtype, n_divisible=True, **options):
    sig = {"x_ptr": f"*{dtype}", "z_ptr": f"*{dtype}", "o_ptr": f"*{dtype}", "n": "i32"}
    aligned = ("x_ptr", "z_ptr", "o_ptr", "n") if n_divisible else ("x_ptr", "z_ptr", "o_ptr")
    # 1024 elements, 4 warps: a run of 8 consecutive elements a thread
    return triton.compile(add_runs, target=target, signature=sig, constexprs={"B": 1024}, num_warps=4,
                          attrs={a: {"tt.divisibility": 16} for a in aligned}, **options)


@pytest.mark.parametrize("target,dtype,want", [
    ("cuda:90", "fp32", ["atom.global.gpu.relaxed.add.v4.f32"] * 2),
    ("cuda:90", "fp16", ["atom.global.gpu.relaxed.add.noftz.v8.f16"]),
    ("cuda:90", "bf16", ["atom.global.gpu.relaxed.add.noftz.v8.bf16"]),
    ("cuda:80", "fp16", ["atom.global.gpu.relaxed.add.noftz.f16x2"] * 4),
    ("cuda:80", "fp32", ["atom.global.gpu.relaxed.add.f32"] * 8),
    ("cuda:90", "fp64", ["atom.global.gpu.relaxed.add.f64"] * 8),
    ("cuda:90", "i32", ["atom.global.gpu.relaxed.add.u32"] * 8),
])
def test_float_adds_on_runs_update_a_run_an_instruction(target, dtype, want, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = _runs(target, dtype)
    assert _atoms(k.asm["ptx"]) == want
    assert k.asm["cubin"][:4] == b"\x7fELF"  # ptxas takes the vector forms


def test_a_mask_that_flips_anywhere_keeps_adds_scalar(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    # n of unknown divisibility: the mask may change between any two elements of a run
    assert _atoms(_runs("cuda:90", "fp32", n_divisible=False).asm["ptx"]) == ["atom.global.gpu.relaxed.add.f32"] * 8


def test_ptx_older_than_8_1_keeps_adds_scalar(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = _runs("cuda:90", "fp32", ptx_version=80)
    assert _atoms(k.asm["ptx"]) == ["atom.global.gpu.relaxed.add.f32"] * 8


def test_bf16_add_before_sm90_is_a_compare_and_swap_loop(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    # sm_80 has no bf16 atom.add: LLVM's atomicrmw expands into a 32-bit compare-and-swap loop
    k = _runs("cuda:80", "bf16")
    atoms = _atoms(k.asm["ptx"])
    assert atoms and all(re.fullmatch(r"atom\.relaxed\.gpu\.global\.cas\.b32", a) for a in atoms), atoms
    assert k.asm["cubin"][:4] == b"\x7fELF"
