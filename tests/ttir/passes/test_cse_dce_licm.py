"""cse, dce and licm on tt ops."""
from tritium.ttir.passes import CSE, DCE, LICM


def test_cse_merges_pure_ops_and_same_block_loads(apply):
    out = apply("""
    tt.func public @k(%p: !tt.ptr<f32>) {
      %a = tt.splat %p : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %b = tt.splat %p : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %x = tt.load %a : tensor<16x!tt.ptr<f32>>
      %y = tt.load %b : tensor<16x!tt.ptr<f32>>
      %s = arith.addf %x, %y : tensor<16xf32>
      tt.store %a, %s : tensor<16x!tt.ptr<f32>>
      %z = tt.load %b : tensor<16x!tt.ptr<f32>>
      tt.store %b, %z : tensor<16x!tt.ptr<f32>>
      tt.return
    }""", CSE())
    assert out.count("tt.splat") == 1
    # the first two loads merge; the load after the store must stay
    assert out.count("tt.load") == 2
    assert "arith.addf %x, %x" in out


def test_cse_keeps_volatile_loads(apply):
    out = apply("""
    tt.func public @k(%p: !tt.ptr<f32>) {
      %x = tt.load %p {isVolatile = true} : !tt.ptr<f32>
      %y = tt.load %p {isVolatile = true} : !tt.ptr<f32>
      %s = arith.addf %x, %y : f32
      tt.store %p, %s : !tt.ptr<f32>
      tt.return
    }""", CSE())
    assert out.count("tt.load") == 2


def test_dce_removes_unused_pure_ops_and_loads_not_effects(apply):
    out = apply("""
    tt.func public @k(%p: !tt.ptr<f32>, %n: i32) {
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %unused = arith.addi %n, %c1 : i32
      %ld = tt.load %p : !tt.ptr<f32>
      %vol = tt.load %p {isVolatile = true} : !tt.ptr<f32>
      %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c0) -> (i32) : i32 {
        %x = tt.load %p : !tt.ptr<f32>
        %b = arith.addi %a, %i : i32
        scf.yield %b : i32
      }
      %v = tt.load %p : !tt.ptr<f32>
      tt.print " v: " {hex = false, isSigned = array<i32: 0>} : %v : f32
      tt.return
    }""", DCE())
    assert "arith.addi %n" not in out and "scf.for" not in out
    assert "%ld" not in out
    assert "tt.load %p {isVolatile = true}" in out  # a volatile load is an effect
    assert "%v = tt.load %p" in out and "tt.print" in out


LOOP = """
tt.func public @k(%p: !tt.ptr<f32>, %n: i32, %s: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %init = arith.constant dense<0.0> : tensor<16xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<16xf32>) : i32 {
    %range = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %ss = tt.splat %s : i32 -> tensor<16xi32>
    %off = arith.muli %range, %ss : tensor<16xi32>
    %base = tt.splat %p : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %ptrs = tt.addptr %base, %off : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %x = tt.load %ptrs : tensor<16x!tt.ptr<f32>>
    %si = tt.splat %i : i32 -> tensor<16xi32>
    %y = arith.addi %off, %si : tensor<16xi32>
    %yf = arith.sitofp %y : tensor<16xi32> to tensor<16xf32>
    %a1 = arith.addf %acc, %x : tensor<16xf32>
    %a2 = arith.addf %a1, %yf : tensor<16xf32>
    scf.yield %a2 : tensor<16xf32>
  }
  %base2 = tt.splat %p : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  tt.store %base2, %r : tensor<16x!tt.ptr<f32>>
  tt.return
}"""


def test_licm_hoists_pure_tensor_math_not_loads(apply):
    out = apply(LOOP, LICM())
    head, loop = out.split("scf.for")
    for hoisted in ("tt.make_range", "%ss = tt.splat", "%off = arith.muli", "%ptrs = tt.addptr"):
        assert hoisted in head, hoisted
    assert "tt.load" in loop and "tt.load" not in head
    assert "%si = tt.splat %i" in loop and "%y = arith.addi" in loop
