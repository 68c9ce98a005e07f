"""loop-unroll: tt.loop_unroll_factor loops become F body copies plus an epilogue."""
import re

import pytest

import tritium
import tritium.language as tl
from tritium.ttir.passes import LoopUnroll

LOOP = """
tt.func public @k(%p: !tt.ptr<f32>, %lo: i32, %hi: i32) {
  %c0 = arith.constant 0 : i32
  %c10 = arith.constant 10 : i32
  %c1 = arith.constant 1 : i32
  %s = arith.constant 0.0 : f32
  %r = scf.for %i = %LB to %UB step %c1 iter_args(%a = %s) -> (f32) : i32 {
    %f = arith.sitofp %i : i32 to f32
    %b = arith.addf %a, %f : f32
    scf.yield %b : f32
  } {tt.loop_unroll_factor = F : i32}
  tt.store %p, %r : !tt.ptr<f32>
  tt.return
}"""


def _loop(lb, ub, factor):
    return LOOP.replace("%LB", lb).replace("%UB", ub).replace("F : i32", f"{factor} : i32")


def _loops(out):
    return out.count("scf.for")


@pytest.mark.parametrize("factor, loops, copies", [(2, 1, 2), (5, 1, 5), (4, 2, 5), (3, 2, 4)])
def test_constant_trip_count(apply, factor, loops, copies):
    out = apply(_loop("%c0", "%c10", factor), LoopUnroll())
    assert "tt.loop_unroll_factor" not in out
    assert _loops(out) == loops  # an epilogue only when 10 % F != 0
    assert out.count("arith.addf") == copies
    if loops == 2:
        assert "tt.num_stages = 1" in out  # the epilogue is not pipelined


def test_fewer_trips_than_factor_and_factor_one_keep_the_loop(apply):
    for factor in (1, 16):
        out = apply(_loop("%c0", "%c10", factor), LoopUnroll())
        assert _loops(out) == 1 and out.count("arith.addf") == 1
        assert "tt.loop_unroll_factor" not in out


def test_dynamic_bounds_compute_the_trip_count(apply):
    out = apply(_loop("%lo", "%hi", 4), LoopUnroll())
    assert _loops(out) == 2 and out.count("arith.addf") == 5
    # max(0, ceildiv(hi - lo, step)) rounded down to a multiple of 4
    assert "arith.maxsi" in out and "arith.remsi" in out
    main, epilogue = re.findall(r"scf.for %\S+ = (%\S+) to (%\S+) step (%\S+)", out)
    assert main[0] == "%lo" and epilogue[1] == "%hi" and main[1] == epilogue[0]


@tritium.jit
def _atomic_kernel(dst, UF: tl.constexpr):
    pid = tl.program_id(axis=0)
    for i in tl.range(0, 10, loop_unroll_factor=UF):
        tl.atomic_add(dst + pid, i + pid)


@pytest.mark.parametrize("factor", [1, 2, 4, 5, 8])
def test_triton_unroll_attr_count_in_ttir(factor, monkeypatch, tmp_path):
    # Triton's test_unroll_attr: at least F copies of the atomic in the TTIR
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = tritium.compile(_atomic_kernel, signature={"dst": "*fp32"}, constexprs={"UF": factor}, target="interpreter")
    assert k.asm["ttir"].count("tt.atomic_rmw") >= factor


@tritium.jit
def _hinted(x, y, n, FL: tl.constexpr, NOMB: tl.constexpr):
    acc = tl.zeros((16,), tl.float32)
    for i in tl.range(0, n, num_stages=2, flatten=FL, disallow_acc_multi_buffer=NOMB):
        acc += tl.load(x + i * 16 + tl.arange(0, 16))
    tl.store(y + tl.arange(0, 16), acc)


def test_hints_are_recorded_as_triton_does(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = tritium.compile(_hinted, signature={"x": "*fp32", "y": "*fp32", "n": "i32"},
                        constexprs={"FL": True, "NOMB": True}, target="interpreter")
    line = next(l for l in k.asm["ttir"].splitlines() if "tt.num_stages" in l)
    assert "tt.flatten" in line and "tt.disallow_acc_multi_buffer" in line
