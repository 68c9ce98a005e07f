"""rewrite_tensor_pointer: block pointers become tensors of pointers, masks and padding."""
from tritium.ttir.passes import CSE, DCE, SCCP, RewriteTensorPointer

LOOP = """
tt.func public @k(%a: !tt.ptr<f16>, %M: i64, %K: i64, %sm: i64, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c16 = arith.constant 16 : i32
  %one = arith.constant 1 : i64
  %pid = tt.get_program_id x : i32
  %bp = tt.make_tensor_ptr %a, [%M, %K], [%sm, %one], [%pid, %c0] {order = array<i32: 1, 0>} : <tensor<32x16xf16>>
  %z = arith.constant dense<0.0> : tensor<32x16xf16>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%p = %bp, %acc = %z) -> (!tt.ptr<tensor<32x16xf16>>, tensor<32x16xf16>) : i32 {
    %x = tt.load %p {boundaryCheck = array<i32: 1>, padding = 1 : i32} : !tt.ptr<tensor<32x16xf16>>
    %s = arith.addf %acc, %x : tensor<32x16xf16>
    %q = tt.advance %p, [%c0, %c16] : <tensor<32x16xf16>>
    scf.yield %q, %s : !tt.ptr<tensor<32x16xf16>>, tensor<32x16xf16>
  }
  tt.store %r#0, %r#1 : !tt.ptr<tensor<32x16xf16>>
  tt.return
}"""


def test_loop_carried_block_pointer_becomes_its_moving_offset(apply):
    out = apply(LOOP, RewriteTensorPointer(), SCCP(), CSE(), DCE())
    assert "make_tensor_ptr" not in out and "tt.advance" not in out and "!tt.ptr<tensor" not in out
    # only the advanced (column) offset is carried, starting at 0 and stepping by 16
    assert "iter_args(%1 = %c0, %acc = %z) -> (i32, tensor<32x16xf16>)" in out
    loop = out[out.index("scf.for"):out.index("scf.yield")]
    assert "arith.addi %1, %c16 : i32" in loop
    # row offsets come from the program id, scaled by the row stride %sm; the column stride is 1
    assert "arith.extsi %pid : i32 to i64" in out and "tt.splat %sm : i64 -> tensor<32xi64>" in loop
    assert "tt.splat %one" not in out
    # boundary check on dim 1 only: 0 <= col < K, no check on rows
    assert "tt.splat %K : i64 -> tensor<16xi64>" in loop and "tt.splat %M" not in out
    assert "arith.constant dense<0.000000e+00> : tensor<32x16xf16>" in out  # padding = zero
    assert "tt.load %" in loop and ", %" in loop.split("tt.load")[1].split(":")[0]  # masked
    # the store after the loop uses the loop's final offset, unmasked
    tail = out[out.index("scf.yield"):]
    assert "arith.extsi %0 : i32 to i64" in tail
    store = [line for line in tail.splitlines() if "tt.store" in line][0]
    assert store.count("%") == 2 and "tensor<32x16x!tt.ptr<f16>>" in store


def test_nan_padding_and_full_boundary_check(apply):
    out = apply("""
    tt.func public @k(%a: !tt.ptr<f32>, %M: i64, %s: i64, %o: i32) -> tensor<8xf32> {
      %bp = tt.make_tensor_ptr %a, [%M], [%s], [%o] {order = array<i32: 0>} : <tensor<8xf32>>
      %x = tt.load %bp {boundaryCheck = array<i32: 0>, padding = 2 : i32} : !tt.ptr<tensor<8xf32>>
      tt.return %x : tensor<8xf32>
    }""", RewriteTensorPointer(), DCE())
    assert "arith.cmpi sge" in out and "arith.cmpi slt" in out and "tt.splat %M" in out
    assert "0x7fc00000" in out  # padding = nan
    assert "tt.addptr" in out and "tensor<8x!tt.ptr<f32>>, tensor<8xi64>" in out


def test_block_pointer_through_scf_if(apply):
    out = apply("""
    tt.func public @k(%a: !tt.ptr<f32>, %M: i64, %s: i64, %c: i1) -> tensor<8xf32> {
      %c0 = arith.constant 0 : i32
      %c8 = arith.constant 8 : i32
      %bp = tt.make_tensor_ptr %a, [%M], [%s], [%c0] {order = array<i32: 0>} : <tensor<8xf32>>
      %p = scf.if %c -> (!tt.ptr<tensor<8xf32>>) {
        %q = tt.advance %bp, [%c8] : <tensor<8xf32>>
        scf.yield %q : !tt.ptr<tensor<8xf32>>
      } else {
        scf.yield %bp : !tt.ptr<tensor<8xf32>>
      }
      %x = tt.load %p : !tt.ptr<tensor<8xf32>>
      tt.return %x : tensor<8xf32>
    }""", RewriteTensorPointer(), SCCP(), DCE())
    assert "!tt.ptr<tensor" not in out
    # the if now yields the pointer's fields; the branches differ only in the offset (8 or 0)
    assert "scf.if %c -> (!tt.ptr<f32>, i64, i64, i32)" in out
    assert "arith.constant 8 : i32" in out and "scf.yield %a, %M, %s, %c0 : !tt.ptr<f32>, i64, i64, i32" in out
    assert "tt.load" in out and "tensor<8x!tt.ptr<f32>>" in out
