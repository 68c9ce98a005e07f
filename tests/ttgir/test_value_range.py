"""value_range: signed bounds of integer values from how they are built (what AMD's buffer
accesses need to prove their 32-bit byte offsets stay in [0, 2 GiB))."""
from tritium.ttgir.analysis.value_range import ValueRanges
from tritium.ttgir.ir import parse_module

B = "#ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>"

TEXT = """builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32} {
  tt.func @f(%n: i32, %p: !tt.ptr<f32>) {
    %r = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32, #B>
    %c4 = arith.constant 4 : i32
    %c7 = arith.constant dense<7> : tensor<1024xi32, #B>
    %s = tt.splat %c4 : i32 -> tensor<1024xi32, #B>
    %add = arith.addi %r, %s : tensor<1024xi32, #B>
    %mul = arith.muli %add, %c7 : tensor<1024xi32, #B>
    %sub = arith.subi %r, %c7 : tensor<1024xi32, #B>
    %rem = arith.remsi %sub, %c7 : tensor<1024xi32, #B>
    %and = arith.andi %sub, %c7 : tensor<1024xi32, #B>
    %pid = tt.get_program_id x : i32
    %big = arith.constant 1024 : i32
    %row = arith.muli %pid, %big : i32
    %nb = tt.splat %n : i32 -> tensor<1024xi32, #B>
    %arg = arith.addi %r, %nb : tensor<1024xi32, #B>
    %huge = arith.constant dense<4194304> : tensor<1024xi32, #B>
    %over = arith.muli %r, %huge : tensor<1024xi32, #B>
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %c8 = arith.constant 8 : i32
    scf.for %i = %c0 to %c64 step %c8 : i32 {
      %iv = tt.splat %i : i32 -> tensor<1024xi32, #B>
      %off = arith.addi %iv, %r : tensor<1024xi32, #B>
      %q = tt.splat %p : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>, #B>
      %a = tt.addptr %q, %off : tensor<1024x!tt.ptr<f32>, #B>, tensor<1024xi32, #B>
      scf.yield
    }
    tt.return
  }
}""".replace("#B", B)


def _values():
    m = parse_module(TEXT)
    out = {}
    for op in m.walk():
        if op.name == "tt.func":
            out.update((a.name_hint, a) for a in op.body.block.args)
        for r in op.results:
            out[r.name_hint] = r
        if op.name == "tt.addptr":
            out["loop_off"] = op.operands[1]
            out["iv"] = op.parent_op().body.block.args[0]
    return out


def test_ranges_follow_the_arithmetic():
    v, vr = _values(), ValueRanges()
    assert vr.of(v["r"]) == (0, 1023)
    assert vr.of(v["s"]) == (4, 4)
    assert vr.of(v["add"]) == (4, 1027)
    assert vr.of(v["mul"]) == (28, 7189)
    assert vr.of(v["sub"]) == (-7, 1016)
    assert vr.of(v["rem"]) == (-6, 6)      # C remainder: the dividend's sign
    assert vr.of(v["and"]) == (0, 7)       # a non-negative mask bounds the result
    assert vr.of(v["pid"]) == (0, 2**31 - 1)


def test_unbounded_values():
    v, vr = _values(), ValueRanges()
    assert vr.of(v["n"]) is None and vr.of(v["arg"]) is None   # a kernel argument
    assert vr.of(v["row"]) is None                             # program_id * 1024 may pass i32
    assert vr.of(v["over"]) is None                            # 1023 * 2^22 wraps


def test_loop_induction_variable():
    v, vr = _values(), ValueRanges()
    assert vr.of(v["iv"]) == (0, 63)
    assert vr.of(v["loop_off"]) == (0, 1086)
