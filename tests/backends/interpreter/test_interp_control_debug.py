"""Control flow, calls, block pointers, out-of-bounds reports, assert and print on the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from tritium.backends.interpreter import InterpreterError, KernelAssertionError
from tritium.backends.interpreter import plugin
from tritium.hooks.manager import TritiumPluginManager

# out[pid] = sum over chunks of 16 of x[pid*n : (pid+1)*n], n a multiple of 16, via scf.for and tt.call
LOOP = """
module {
  tt.func private @chunk_sum(%p: !tt.ptr<f32>, %off: i32) -> f32 attributes {noinline = true} {
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %s = tt.splat %off : i32 -> tensor<16xi32>
    %o = arith.addi %s, %r : tensor<16xi32>
    %pp = tt.splat %p : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %pa = tt.addptr %pp, %o : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %pa : tensor<16x!tt.ptr<f32>>
    %t = "tt.reduce"(%v) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %q = arith.addf %a, %b : f32
      tt.reduce.return %q : f32
    }) : (tensor<16xf32>) -> f32
    tt.return %t : f32
  }
  tt.func public @k(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>, %n: i32) {
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %n : i32
    %c0 = arith.constant 0 : i32
    %c16 = arith.constant 16 : i32
    %z = arith.constant 0.0 : f32
    %acc = scf.for %i = %c0 to %n step %c16 iter_args(%a = %z) -> (f32) : i32 {
      %off = arith.addi %base, %i : i32
      %part = tt.call @chunk_sum(%x, %off) : (!tt.ptr<f32>, i32) -> f32
      %na = arith.addf %a, %part : f32
      scf.yield %na : f32
    }
    %op = tt.addptr %out, %pid : !tt.ptr<f32>, i32
    tt.store %op, %acc : !tt.ptr<f32>
    tt.return
  }
}
"""


def test_for_loop_and_noinline_call(run, rng):
    x = rng.standard_normal((6, 64)).astype(np.float32)
    out = np.zeros(6, np.float32)
    run(LOOP, (6,), x, out, 64)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(1), rtol=1e-5)


# collatz steps of pid+1 with scf.while and scf.if
WHILE = """
module {
  tt.func public @k(%out: !tt.ptr<i32>) {
    %pid = tt.get_program_id x : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %c3 = arith.constant 3 : i32
    %c0 = arith.constant 0 : i32
    %start = arith.addi %pid, %c1 : i32
    %res:2 = scf.while (%v = %start, %n = %c0) : (i32, i32) -> (i32, i32) {
      %more = arith.cmpi ne, %v, %c1 : i32
      scf.condition(%more) %v, %n : i32, i32
    } do {
    ^bb0(%v2: i32, %n2: i32):
      %rem = arith.remsi %v2, %c2 : i32
      %odd = arith.cmpi ne, %rem, %c0 : i32
      %next = scf.if %odd -> (i32) {
        %t = arith.muli %v2, %c3 : i32
        %t1 = arith.addi %t, %c1 : i32
        scf.yield %t1 : i32
      } else {
        %h = arith.divsi %v2, %c2 : i32
        scf.yield %h : i32
      }
      %n3 = arith.addi %n2, %c1 : i32
      scf.yield %next, %n3 : i32, i32
    }
    %op = tt.addptr %out, %pid : !tt.ptr<i32>, i32
    tt.store %op, %res#1 : !tt.ptr<i32>
    tt.return
  }
}
"""


def _collatz(v):
    n = 0
    while v != 1:
        v, n = (3 * v + 1 if v % 2 else v // 2), n + 1
    return n


def test_while_and_if(run):
    out = np.full(40, -1, np.int32)
    run(WHILE, (40,), out)
    assert list(out) == [_collatz(v) for v in range(1, 41)]


# copy the 16x16 tile at (pid*16, 20) of a 40x30 matrix: rows past 40 and columns past 30 are padded
# with zeros, and the store drops rows past 40
BLOCK_PTR = """
module {
  tt.func public @k(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>, %M: i64, %N: i64, %sM: i64) {
    %pid = tt.get_program_id x : i32
    %c16 = arith.constant 16 : i32
    %c8 = arith.constant 20 : i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i64
    %c16l = arith.constant 16 : i64
    %row = arith.muli %pid, %c16 : i32
    %bp = tt.make_tensor_ptr %x, [%M, %N], [%sM, %c1], [%c0, %c0] {order = array<i32: 1, 0>} : <tensor<16x16xf32>>
    %bp2 = tt.advance %bp, [%row, %c8] : <tensor<16x16xf32>>
    %v = tt.load %bp2 {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<16x16xf32>>
    %rows = arith.muli %pid, %c16 : i32
    %ob = tt.make_tensor_ptr %out, [%M, %c16l], [%c16l, %c1], [%rows, %c0] {order = array<i32: 1, 0>} : <tensor<16x16xf32>>
    tt.store %ob, %v {boundaryCheck = array<i32: 0>} : !tt.ptr<tensor<16x16xf32>>
    tt.return
  }
}
"""


def test_block_pointer_load_with_boundary_check_and_padding(run, rng):
    x = rng.standard_normal((40, 30)).astype(np.float32)
    out = np.full((40, 16), 5.0, np.float32)
    run(BLOCK_PTR, (3,), x, out, 40, 30, 30)
    ref = np.zeros((40, 16), np.float32)
    ref[:, :10] = x[:, 20:30]
    np.testing.assert_array_equal(out, ref)


OOB = """
module {
  tt.func public @k(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>) {
    %pid = tt.get_program_id x : i32
    %c32 = arith.constant 32 : i32
    %s = arith.muli %pid, %c32 : i32
    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %ss = tt.splat %s : i32 -> tensor<32xi32>
    %o = arith.addi %ss, %r : tensor<32xi32>
    %xp = tt.splat %x : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %xa = tt.addptr %xp, %o : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %v = tt.load %xa : tensor<32x!tt.ptr<f32>> loc("my_kernel.py":17:12)
    %op = tt.splat %out : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %oa = tt.addptr %op, %o : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    tt.store %oa, %v : tensor<32x!tt.ptr<f32>>
    tt.return
  }
}
"""


def test_out_of_bounds_load_names_line_pid_and_offset(run, rng):
    x = rng.standard_normal(100).astype(np.float32)
    out = np.zeros(128, np.float32)
    with pytest.raises(InterpreterError) as info:
        run(OOB, (4,), x, out)
    msg = str(info.value)
    assert "my_kernel.py:17" in msg and "program id (3, 0, 0)" in msg
    assert "element offset 100" in msg and "argument #0" in msg
    np.testing.assert_array_equal(out[:96], x[:96])  # programs before the faulty one ran


def test_out_of_bounds_before_the_buffer(run, rng):
    text = OOB.replace("%o = arith.addi %ss, %r", "%c5 = arith.constant dense<5> : tensor<32xi32>\n"
                       "    %o0 = arith.addi %ss, %r : tensor<32xi32>\n    %o = arith.subi %o0, %c5")
    with pytest.raises(InterpreterError, match=r"program id \(0, 0, 0\).*element offset -5"):
        run(text, (1,), rng.standard_normal(64).astype(np.float32), np.zeros(64, np.float32))


ASSERT = """
module {
  tt.func public @k(%x: !tt.ptr<i32>) {
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %xp = tt.splat %x : !tt.ptr<i32> -> tensor<16x!tt.ptr<i32>>
    %xa = tt.addptr %xp, %r : tensor<16x!tt.ptr<i32>>, tensor<16xi32>
    %v = tt.load %xa : tensor<16x!tt.ptr<i32>>
    %z = arith.constant dense<0> : tensor<16xi32>
    %ok = arith.cmpi sge, %v, %z : tensor<16xi32>
    tt.assert %ok, "x must be non-negative" : tensor<16xi1> loc("check.py":9:4)
    tt.return
  }
}
"""


def test_failing_assert_reports_message_line_and_pid(run, rng):
    x = rng.integers(0, 100, 16, dtype=np.int32)
    run(ASSERT, (2,), x)  # passes
    x[11] = -3
    with pytest.raises(KernelAssertionError) as info:
        run(ASSERT, (2, 1, 1), x)
    msg = str(info.value)
    assert "check.py:9" in msg and "x must be non-negative" in msg and "program id (0, 0, 0)" in msg
    assert "(11,)" in msg


PRINT = """
module {
  tt.func public @k(%x: !tt.ptr<i32>) {
    %pid = tt.get_program_id x : i32
    %r = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
    %xp = tt.splat %x : !tt.ptr<i32> -> tensor<4x!tt.ptr<i32>>
    %xa = tt.addptr %xp, %r : tensor<4x!tt.ptr<i32>>, tensor<4xi32>
    %v = tt.load %xa : tensor<4x!tt.ptr<i32>>
    tt.print " x: " {hex = false, isSigned = array<i32: 1>} : %v : tensor<4xi32>
    tt.print " pid: " {hex = false, isSigned = array<i32: 1>} : %pid : i32
    tt.return
  }
}
"""


def test_print_format(run, rng, capsys):
    x = rng.integers(-50, 50, 4, dtype=np.int32)
    run(PRINT, (2,), x)
    lines = capsys.readouterr().out.splitlines()
    expect = []
    for p in range(2):
        expect += [f"pid ({p}, 0, 0) idx ({i}) x: {int(v)}" for i, v in enumerate(x)]
        expect.append(f"pid ({p}, 0, 0) idx () pid: {p}")
    assert lines == expect


def test_registered_through_the_plugin_hooks():
    pm = TritiumPluginManager(entry_point_group=None)
    assert pm.register(plugin, "interpreter")
    b = pm.get_backend("interpreter")
    assert b.device_present() and b.default_target().warp_size == 1
    assert b.parse_options(b.default_target(), {"num_warps": 8}).threads_per_warp == 1
    stages = b.make_stages(b.default_target(), b.parse_options(b.default_target()), lambda src, md: src)
    assert list(stages) == ["ttir", "interp"]
    md = {}
    binary = stages["interp"](OOB, md)
    assert md["name"] == "k"
    drv = b.driver()
    drv.check_binary(binary, md)
    with pytest.raises(ValueError):
        drv.check_binary(binary, {"name": "missing"})
    assert drv.owns(np.zeros(3)) and not drv.owns([1, 2])
    assert [e.case for e in b.conformance_exclusions(b.default_target())] == ["inline_asm/*", "inline_asm_amdgcn/*",
                                                                             "errors/dot-too-small"]
