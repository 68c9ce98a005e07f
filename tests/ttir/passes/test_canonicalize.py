"""canonicalize: constant folding, identities, casts, shapes and control flow."""
from tritium.ttir.passes import DCE, Canonicalize


def canon(apply, body, args="", rets=""):
    src = f"tt.func public @k({args}){rets} {{\n{body}\n}}"
    return apply(src, Canonicalize(), DCE())


def test_fold_scalar_and_splat_constants(apply):
    out = canon(apply, """
      %a = arith.constant 7 : i32
      %b = arith.constant 5 : i32
      %s = arith.addi %a, %b : i32
      %t = arith.muli %s, %b : i32
      %ta = arith.constant dense<3> : tensor<4xi32>
      %tb = tt.splat %b : i32 -> tensor<4xi32>
      %tc = arith.subi %ta, %tb : tensor<4xi32>
      %f1 = arith.constant 1.5 : f32
      %f2 = arith.mulf %f1, %f1 : f32
      %d = arith.divsi %a, %b : i32
      %neg = arith.constant -7 : i32
      %r = arith.remsi %neg, %b : i32
      %ovf = arith.constant 2147483647 : i32
      %o = arith.addi %ovf, %b : i32
      tt.return %t, %tc, %f2, %d, %r, %o : i32, tensor<4xi32>, f32, i32, i32, i32""",
                rets=" -> (i32, tensor<4xi32>, f32, i32, i32, i32)")
    assert "arith.constant 60 : i32" in out
    assert "arith.constant dense<-2> : tensor<4xi32>" in out
    assert "arith.constant 2.250000e+00 : f32" in out
    assert "arith.constant 1 : i32" in out and "arith.constant -2 : i32" in out  # C semantics
    assert "arith.constant -2147483644 : i32" in out  # wraps at 32 bits
    assert "arith.addi" not in out and "arith.muli" not in out and "tt.splat" not in out


def test_identities(apply):
    out = canon(apply, """
      %z = arith.constant dense<0> : tensor<4xi32>
      %one = arith.constant 1 : i32
      %ones = tt.splat %one : i32 -> tensor<4xi32>
      %a = arith.addi %z, %x : tensor<4xi32>
      %b = arith.muli %a, %ones : tensor<4xi32>
      %c = arith.muli %b, %z : tensor<4xi32>
      %fz = arith.constant 0.0 : f32
      %g = arith.addf %f, %fz : f32
      %nz = arith.constant -0.0 : f32
      %h = arith.addf %g, %nz : f32
      tt.return %b, %c, %h : tensor<4xi32>, tensor<4xi32>, f32""",
                args="%x: tensor<4xi32>, %f: f32", rets=" -> (tensor<4xi32>, tensor<4xi32>, f32)")
    assert "%c = arith.constant dense<0> : tensor<4xi32>" in out  # x * 0 for integers
    assert "tt.return %x, %c, %g" in out
    assert "arith.addf %f, %fz" in out  # x + 0.0 is not x when x is -0.0
    assert "%nz" not in out


def test_select_constant_condition_and_casts(apply):
    out = canon(apply, """
      %t = arith.constant true
      %s = arith.select %t, %x, %y : i32
      %e = arith.extsi %s : i32 to i64
      %tr = arith.trunci %e : i64 to i32
      %e1 = arith.extui %x : i32 to i64
      %e2 = arith.extsi %e1 : i64 to i128
      %h = arith.truncf %f : f32 to f16
      %b = arith.extf %h : f16 to f32
      tt.return %tr, %e2, %b : i32, i128, f32""",
                args="%x: i32, %y: i32, %f: f32", rets=" -> (i32, i128, f32)")
    assert "tt.return %x, %e2, %b" in out
    assert "%e2 = arith.extui %x : i32 to i128" in out
    assert "arith.truncf" in out and "arith.extf" in out  # not exact: kept


def test_shape_ops_of_splats(apply):
    out = canon(apply, """
      %s = tt.splat %x : f32 -> tensor<1x64xf32>
      %b = tt.broadcast %s : tensor<1x64xf32> -> tensor<32x64xf32>
      %r = tt.splat %x : f32 -> tensor<64xf32>
      %e = tt.expand_dims %r {axis = 0 : i32} : tensor<64xf32> -> tensor<1x64xf32>
      %b1 = tt.broadcast %y : tensor<1x1xf32> -> tensor<1x64xf32>
      %b2 = tt.broadcast %b1 : tensor<1x64xf32> -> tensor<32x64xf32>
      tt.return %b, %e, %b2 : tensor<32x64xf32>, tensor<1x64xf32>, tensor<32x64xf32>""",
                args="%x: f32, %y: tensor<1x1xf32>", rets=" -> (tensor<32x64xf32>, tensor<1x64xf32>, tensor<32x64xf32>)")
    assert "%b = tt.splat %x : f32 -> tensor<32x64xf32>" in out
    assert "%e = tt.splat %x : f32 -> tensor<1x64xf32>" in out
    assert "%b2 = tt.broadcast %y : tensor<1x1xf32> -> tensor<32x64xf32>" in out
    assert "expand_dims" not in out and out.count("tt.broadcast") == 1


def test_constant_if_and_zero_trip_for(apply):
    out = canon(apply, """
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %f = arith.constant false
      %r = scf.if %f -> (i32) {
        %a = arith.addi %x, %x : i32
        scf.yield %a : i32
      } else {
        %m = arith.muli %x, %x : i32
        scf.yield %m : i32
      }
      %l = scf.for %i = %c1 to %c0 step %c1 iter_args(%acc = %r) -> (i32) : i32 {
        %n = arith.addi %acc, %i : i32
        scf.yield %n : i32
      }
      tt.return %l : i32""", args="%x: i32", rets=" -> i32")
    assert "scf." not in out
    assert "%m = arith.muli %x, %x : i32" in out and "tt.return %m : i32" in out
