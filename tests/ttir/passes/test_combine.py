"""combine: Triton's TTIR combine patterns."""
from tritium.ttir.passes import DCE, Canonicalize, Combine


def test_addptr_chains_and_zero_offsets(apply):
    # Triton's rule: two offsets are added before the pointer only where their sum cannot wrap
    # (each is sign-extended on its own): i64 offsets, or constants whose sum fits
    out = apply("""
    tt.func public @k(%p: tensor<8x!tt.ptr<f32>>, %a: tensor<8xi32>, %b: tensor<8xi32>, %c: tensor<8xi64>,
                      %d: tensor<8xi64>) {
      %z = arith.constant dense<0> : tensor<8xi32>
      %p0 = tt.addptr %p, %z : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
      %p1 = tt.addptr %p0, %a : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
      %p2 = tt.addptr %p1, %b : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
      %p3 = tt.addptr %p2, %c : tensor<8x!tt.ptr<f32>>, tensor<8xi64>
      %p4 = tt.addptr %p3, %d : tensor<8x!tt.ptr<f32>>, tensor<8xi64>
      %v = tt.load %p4 : tensor<8x!tt.ptr<f32>>
      tt.store %p, %v : tensor<8x!tt.ptr<f32>>
      tt.return
    }""", Combine(), DCE())
    assert "tt.addptr %p, %a" in out  # the zero offset is gone
    assert "arith.addi %a, %b" not in out  # two i32 offsets: a + b could wrap
    assert "arith.addi %c, %d : tensor<8xi64>" in out
    assert out.count("tt.addptr") == 3


def test_addptr_constant_offsets_merge_unless_they_wrap(apply):
    out = apply("""
    tt.func public @k(%p: tensor<8x!tt.ptr<f32>>) {
      %c1 = arith.constant dense<1> : tensor<8xi32>
      %c2 = arith.constant dense<2> : tensor<8xi32>
      %big = arith.constant dense<2147483647> : tensor<8xi32>
      %p1 = tt.addptr %p, %c1 : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
      %p2 = tt.addptr %p1, %c2 : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
      %p3 = tt.addptr %p2, %big : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
      %v = tt.load %p3 : tensor<8x!tt.ptr<f32>>
      tt.store %p, %v : tensor<8x!tt.ptr<f32>>
      tt.return
    }""", Combine(), Canonicalize(), DCE())
    # 1 + 2 fits and folds to 3; 3 + (2^31 - 1) would wrap, so that add stays separate
    assert "dense<3>" in out and out.count("tt.addptr") == 2


def test_select_of_masked_load(apply):
    out = apply("""
    tt.func public @k(%p: tensor<8x!tt.ptr<f32>>, %m: tensor<8xi1>, %o: tensor<8xf32>) {
      %v = tt.load %p, %m cacheModifier = cg : tensor<8x!tt.ptr<f32>>
      %s = arith.select %m, %v, %o : tensor<8xi1>, tensor<8xf32>
      tt.store %p, %s : tensor<8x!tt.ptr<f32>>
      tt.return
    }""", Combine(), DCE())
    assert "arith.select" not in out
    assert "tt.load %p, %m, %o cacheModifier = cg : tensor<8x!tt.ptr<f32>>" in out


def test_dot_add_into_zero_accumulator(apply):
    src = """
    tt.func public @k(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %c: tensor<16x16xf32>,
                      %ai: tensor<16x16xi8>, %ci: tensor<16x16xi32>) -> (tensor<16x16xf32>, tensor<16x16xi32>, tensor<16x16xf32>) {
      %z = arith.constant dense<0.0> : tensor<16x16xf32>
      %d = tt.dot %a, %b, %z : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
      %r = arith.addf %c, %d : tensor<16x16xf32>
      %zi = arith.constant dense<0> : tensor<16x16xi32>
      %di = tt.dot %ai, %ai, %zi : tensor<16x16xi8> * tensor<16x16xi8> -> tensor<16x16xi32>
      %ri = arith.addi %di, %ci : tensor<16x16xi32>
      %d2 = tt.dot %a, %b, %c : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
      %r2 = arith.addf %d2, %c : tensor<16x16xf32>
      tt.return %r, %ri, %r2 : tensor<16x16xf32>, tensor<16x16xi32>, tensor<16x16xf32>
    }"""
    out = apply(src, Combine(), DCE())
    assert "tt.dot %a, %b, %c : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>" in out
    assert "tt.dot %ai, %ai, %ci :" in out
    assert out.count("arith.addf") == 1  # the dot with a non-zero accumulator keeps its add


def test_constant_masks(apply):
    out = apply("""
    tt.func public @k(%p: tensor<8x!tt.ptr<f32>>, %o: tensor<8xf32>) {
      %t = arith.constant dense<true> : tensor<8xi1>
      %f = arith.constant dense<false> : tensor<8xi1>
      %a = tt.load %p, %t, %o : tensor<8x!tt.ptr<f32>>
      %b = tt.load %p, %f, %o : tensor<8x!tt.ptr<f32>>
      %s = arith.addf %a, %b : tensor<8xf32>
      tt.store %p, %s, %t : tensor<8x!tt.ptr<f32>>
      tt.store %p, %s, %f : tensor<8x!tt.ptr<f32>>
      tt.return
    }""", Combine(), DCE())
    assert "%a = tt.load %p : tensor<8x!tt.ptr<f32>>" in out
    assert "%s = arith.addf %a, %o" in out
    assert out.count("tt.store") == 1 and "tt.store %p, %s : tensor<8x!tt.ptr<f32>>" in out


def test_cmpi_on_make_range(apply):
    out = apply("""
    tt.func public @k(%x: tensor<128xi32>) -> (tensor<128xi1>, tensor<128xi1>, tensor<128xi1>, tensor<128xi1>) {
      %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
      %c128 = arith.constant dense<128> : tensor<128xi32>
      %c64 = arith.constant dense<64> : tensor<128xi32>
      %a = arith.cmpi slt, %r, %c128 : tensor<128xi32>
      %b = arith.cmpi sge, %r, %c128 : tensor<128xi32>
      %c = arith.cmpi slt, %r, %c64 : tensor<128xi32>
      %d = arith.cmpi sgt, %c128, %r : tensor<128xi32>
      tt.return %a, %b, %c, %d : tensor<128xi1>, tensor<128xi1>, tensor<128xi1>, tensor<128xi1>
    }""", Canonicalize(), DCE())
    assert "%a = arith.constant dense<true> : tensor<128xi1>" in out
    assert "%b = arith.constant dense<false> : tensor<128xi1>" in out
    assert "%c = arith.cmpi slt, %r, %c64" in out  # undecidable: half true, half false
    assert "%d = arith.constant dense<true>" in out


_MUL_REDUCE = """
tt.func public @k(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>, %c: tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %ae = tt.expand_dims %a {{axis = 2 : i32}} : tensor<{m}x{k}xf32> -> tensor<{m}x{k}x1xf32>
  %be = tt.expand_dims %b {{axis = 0 : i32}} : tensor<{k}x{n}xf32> -> tensor<1x{k}x{n}xf32>
  %ab = tt.broadcast %ae : tensor<{m}x{k}x1xf32> -> tensor<{m}x{k}x{n}xf32>
  %bb = tt.broadcast %be : tensor<1x{k}x{n}xf32> -> tensor<{m}x{k}x{n}xf32>
  %p = arith.mulf %ab, %bb : tensor<{m}x{k}x{n}xf32>
  %s = "tt.reduce"(%p) <{{axis = {axis} : i32}}> ({{
  ^bb0(%x: f32, %y: f32):
    %t = {combine} %x, %y : f32
    tt.reduce.return %t : f32
  }}) : (tensor<{m}x{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %r = arith.addf %s, %c : tensor<{m}x{n}xf32>
  tt.return %r : tensor<{m}x{n}xf32>
}}"""


def test_broadcast_mul_reduce_is_a_dot(apply):
    """Triton's test_dot_mulbroadcasted pattern: the sum over the shared axis of the broadcast
    product is a tf32 dot, and the add after it its accumulator."""
    out = apply(_MUL_REDUCE.format(m=128, k=32, n=32, axis=1, combine="arith.addf"), Combine(), DCE())
    assert "tt.dot %a, %b, %c, inputPrecision = tf32 : tensor<128x32xf32> * tensor<32x32xf32> -> tensor<128x32xf32>" in out
    assert "tt.reduce" not in out and "arith.mulf" not in out and "arith.addf" not in out


def test_broadcast_mul_reduce_left_alone(apply):
    # another axis, another combine, or a dimension under 16: not a matrix product Triton rewrites
    for kw in (dict(m=32, k=32, n=32, axis=0, combine="arith.addf"),
               dict(m=32, k=32, n=32, axis=1, combine="arith.maxnumf"),
               dict(m=32, k=8, n=32, axis=1, combine="arith.addf")):
        out = apply(_MUL_REDUCE.format(**kw), Combine(), DCE())
        assert "tt.dot" not in out and "tt.reduce" in out, kw
