"""reorder_broadcast, sccp and the optimize_ttir pipeline."""
import time
from types import SimpleNamespace

from tritium.ttir.ir import parse_module, print_module
from tritium.ttir.passes import DCE, SCCP, ReorderBroadcast
from tritium.ttir.pass_lists import optimize_ttir


def test_elementwise_moves_after_splat_and_broadcast(apply):
    out = apply("""
    tt.func public @k(%x: f32, %y: f32, %a: tensor<1x64xf32>, %b: tensor<1x64xf32>) -> (tensor<64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) {
      %sx = tt.splat %x : f32 -> tensor<64xf32>
      %sy = tt.splat %y : f32 -> tensor<64xf32>
      %m = arith.mulf %sx, %sy : tensor<64xf32>
      %ba = tt.broadcast %a : tensor<1x64xf32> -> tensor<32x64xf32>
      %bb = tt.broadcast %b : tensor<1x64xf32> -> tensor<32x64xf32>
      %s = arith.addf %ba, %bb : tensor<32x64xf32>
      %two = arith.constant dense<2.0> : tensor<32x64xf32>
      %t = arith.mulf %ba, %two : tensor<32x64xf32>
      tt.return %m, %s, %t : tensor<64xf32>, tensor<32x64xf32>, tensor<32x64xf32>
    }""", ReorderBroadcast(), DCE())
    assert "arith.mulf %x, %y : f32" in out and "-> tensor<64xf32>" in out
    assert "arith.addf %a, %b : tensor<1x64xf32>" in out
    assert "arith.constant dense<2.000000e+00> : tensor<1x64xf32>" in out
    assert "arith.mulf %a, %" in out and "tensor<32x64xf32>" not in out.split("arith.addf")[1].split("\n")[0]


def test_sccp_propagates_constant_through_loop_and_if(apply):
    out = apply("""
    tt.func public @k(%n: i32, %p: !tt.ptr<i32>) {
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %c4 = arith.constant 4 : i32
      %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%k = %c4, %acc = %c0) -> (i32, i32) : i32 {
        %k2 = arith.muli %k, %c1 : i32
        %big = arith.cmpi sgt, %k2, %c1 : i32
        %v = scf.if %big -> (i32) {
          %w = arith.addi %acc, %k2 : i32
          scf.yield %w : i32
        } else {
          scf.yield %acc : i32
        }
        scf.yield %k2, %v : i32, i32
      }
      tt.store %p, %r#1 : !tt.ptr<i32>
      tt.return
    }""", SCCP(), DCE())
    assert "scf.if" not in out and "arith.cmpi" not in out
    assert "arith.addi %acc, %c4 : i32" in out


MATMUL = """
tt.func private @zero_acc() -> tensor<32x32xf32> attributes {noinline = false} {
  %z = arith.constant dense<0.0> : tensor<32x32xf32>
  tt.return %z : tensor<32x32xf32>
}
tt.func public @matmul(%a: !tt.ptr<f16>, %b: !tt.ptr<f16>, %c: !tt.ptr<f32>, %K: i32, %sa: i32) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %acc0 = tt.call @zero_acc() : () -> tensor<32x32xf32>
  %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %re = tt.expand_dims %r {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ce = tt.expand_dims %r {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %sas = tt.splat %sa : i32 -> tensor<32x1xi32>
  %rows = arith.muli %re, %sas : tensor<32x1xi32>
  %rb = tt.broadcast %rows : tensor<32x1xi32> -> tensor<32x32xi32>
  %cb = tt.broadcast %ce : tensor<1x32xi32> -> tensor<32x32xi32>
  %off = arith.addi %rb, %cb : tensor<32x32xi32>
  %pa = tt.splat %a : !tt.ptr<f16> -> tensor<32x32x!tt.ptr<f16>>
  %pb = tt.splat %b : !tt.ptr<f16> -> tensor<32x32x!tt.ptr<f16>>
  %res = scf.for %k = %c0 to %K step %c32 iter_args(%acc = %acc0) -> (tensor<32x32xf32>) : i32 {
    %ks = tt.splat %k : i32 -> tensor<32x32xi32>
    %o = arith.addi %off, %ks : tensor<32x32xi32>
    %pa1 = tt.addptr %pa, %o : tensor<32x32x!tt.ptr<f16>>, tensor<32x32xi32>
    %pb1 = tt.addptr %pb, %o : tensor<32x32x!tt.ptr<f16>>, tensor<32x32xi32>
    %x = tt.load %pa1 : tensor<32x32x!tt.ptr<f16>>
    %y = tt.load %pb1 : tensor<32x32x!tt.ptr<f16>>
    %z = arith.constant dense<0.0> : tensor<32x32xf32>
    %d = tt.dot %x, %y, %z : tensor<32x32xf16> * tensor<32x32xf16> -> tensor<32x32xf32>
    %n = arith.addf %acc, %d : tensor<32x32xf32>
    scf.yield %n : tensor<32x32xf32>
  }
  %pc = tt.splat %c : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  %pc1 = tt.addptr %pc, %off : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xi32>
  tt.store %pc1, %res : tensor<32x32x!tt.ptr<f32>>
  tt.return
}"""


def test_optimize_ttir_on_a_matmul():
    m = parse_module("module {" + MATMUL + "}")
    out = print_module(optimize_ttir(m), locations=False)
    assert "@zero_acc" not in out and "tt.call" not in out
    loop = out[out.index("scf.for"):]
    assert "tt.dot %x, %y, %acc" in loop and "arith.addf" not in loop  # add folded into the dot
    assert "tt.make_range" not in loop and "tt.broadcast" not in loop  # invariant index math hoisted
    assert loop.count("tt.load") == 2


def test_optimize_ttir_is_fast_on_a_300_op_module():
    body = ["%c0 = arith.constant 0 : i32", "%c1 = arith.constant 1 : i32",
            "%r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>",
            "%s0 = tt.splat %x : i32 -> tensor<128xi32>", "%v0 = arith.addi %r, %s0 : tensor<128xi32>"]
    for i in range(1, 95):
        body += [f"%s{i} = tt.splat %c{i % 2} : i32 -> tensor<128xi32>",
                 f"%w{i} = arith.addi %v{i - 1}, %s{i} : tensor<128xi32>",
                 f"%v{i} = arith.muli %w{i}, %r : tensor<128xi32>"]
    body += ["%pp = tt.splat %p : !tt.ptr<i32> -> tensor<128x!tt.ptr<i32>>",
             "%pa = tt.addptr %pp, %r : tensor<128x!tt.ptr<i32>>, tensor<128xi32>",
             "tt.store %pa, %v94 : tensor<128x!tt.ptr<i32>>", "tt.return"]
    src = "module { tt.func public @k(%x: i32, %p: !tt.ptr<i32>) {\n" + "\n".join(body) + "\n} }"
    m = parse_module(src)
    assert sum(1 for _ in m.walk()) > 280
    t = time.perf_counter()
    optimize_ttir(m, SimpleNamespace(rewrite_tensor_pointer=True))
    elapsed = time.perf_counter() - t
    assert elapsed < 1.0, elapsed  # generous bound for slow CI; typically well under 100 ms
