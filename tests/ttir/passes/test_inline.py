"""inline and symbol_dce."""
import pytest

from tritium.passes import PassError
from tritium.ttir.passes import DCE, Inline, SymbolDCE

CALLS = """
tt.func private @square(%x: i32) -> i32 attributes {noinline = false} {
  %y = arith.muli %x, %x : i32
  tt.return %y : i32
}
tt.func private @sq_plus(%x: i32, %c: i1) -> i32 attributes {noinline = false} {
  %s = tt.call @square(%x) : (i32) -> i32
  %r = scf.if %c -> (i32) {
    %t = tt.call @square(%s) : (i32) -> i32
    scf.yield %t : i32
  } else {
    scf.yield %s : i32
  }
  tt.return %r : i32
}
tt.func private @kept(%p: !tt.ptr<i32>, %v: i32) attributes {noinline = true} {
  tt.store %p, %v : !tt.ptr<i32>
  tt.return
}
tt.func private @unused() attributes {noinline = false} {
  tt.return
}
tt.func public @kernel(%p: !tt.ptr<i32>, %x: i32, %c: i1) attributes {noinline = false} {
  %v = tt.call @sq_plus(%x, %c) : (i32, i1) -> i32
  tt.call @kept(%p, %v) : (!tt.ptr<i32>, i32) -> ()
  tt.return
}"""


def test_inline_recursively_then_drop_private_functions(apply):
    out = apply(CALLS, Inline(), SymbolDCE())
    kernel = out[out.index("@kernel"):]
    assert "tt.call @sq_plus" not in kernel and "tt.call @square" not in kernel
    # square(x) inlined at the top, square(square(x)) inside the if
    assert "arith.muli %x, %x : i32" in kernel
    assert kernel.index("scf.if") < kernel.rindex("arith.muli")
    assert "tt.call @kept(%p, " in kernel  # noinline calls stay
    assert "tt.func private @kept" in out
    assert "@unused" not in out and "tt.func private @sq_plus" not in out and "@square(" not in out


def test_inlined_result_replaces_call_uses(apply):
    out = apply("""
    tt.func private @inc(%x: tensor<4xi32>) -> tensor<4xi32> {
      %one = arith.constant dense<1> : tensor<4xi32>
      %y = arith.addi %x, %one : tensor<4xi32>
      tt.return %y : tensor<4xi32>
    }
    tt.func public @k(%x: tensor<4xi32>, %p: tensor<4x!tt.ptr<i32>>) {
      %a = tt.call @inc(%x) : (tensor<4xi32>) -> tensor<4xi32>
      %b = tt.call @inc(%a) : (tensor<4xi32>) -> tensor<4xi32>
      tt.store %p, %b : tensor<4x!tt.ptr<i32>>
      tt.return
    }""", Inline(), SymbolDCE(), DCE())
    assert "tt.call" not in out and "@inc" not in out
    assert "%y = arith.addi %x, %one" in out
    assert "%y_1 = arith.addi %y, %one_1" in out
    assert "tt.store %p, %y_1" in out


def test_recursion_is_an_error(apply):
    with pytest.raises(PassError, match="recursive"):
        apply("""
        tt.func public @k(%x: i32) -> i32 {
          %y = tt.call @k(%x) : (i32) -> i32
          tt.return %y : i32
        }""", Inline())


def test_symbol_dce_keeps_public_and_reachable(apply):
    out = apply("""
    tt.func private @leaf() attributes {noinline = true} {
      tt.return
    }
    tt.func private @mid() attributes {noinline = true} {
      tt.call @leaf() : () -> ()
      tt.return
    }
    tt.func private @dead() {
      tt.call @leaf() : () -> ()
      tt.return
    }
    tt.func public @k() {
      tt.call @mid() : () -> ()
      tt.return
    }""", SymbolDCE())
    assert "@leaf()" in out and "tt.func private @mid" in out and "@dead" not in out
