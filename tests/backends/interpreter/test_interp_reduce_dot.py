"""Reductions, scans, argmax with NaNs, dot and atomics on the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

LOAD_2D = """
    %ri = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
    %rj = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %ei = tt.expand_dims %ri {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>
    %c32 = arith.constant dense<32> : tensor<8x1xi32>
    %rowoff = arith.muli %ei, %c32 : tensor<8x1xi32>
    %ej = tt.expand_dims %rj {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %bi = tt.broadcast %rowoff : tensor<8x1xi32> -> tensor<8x32xi32>
    %bj = tt.broadcast %ej : tensor<1x32xi32> -> tensor<8x32xi32>
    %offs = arith.addi %bi, %bj : tensor<8x32xi32>
    %xp = tt.splat %x : !tt.ptr<f32> -> tensor<8x32x!tt.ptr<f32>>
    %xa = tt.addptr %xp, %offs : tensor<8x32x!tt.ptr<f32>>, tensor<8x32xi32>
    %xv = tt.load %xa : tensor<8x32x!tt.ptr<f32>>
"""

STORE_ROWS = """
    %op = tt.splat %out : !tt.ptr<T> -> tensor<8x!tt.ptr<T>>
    %oa = tt.addptr %op, %ri : tensor<8x!tt.ptr<T>>, tensor<8xi32>
    tt.store %oa, %RES : tensor<8x!tt.ptr<T>>
"""

ROW_SUM_MAX = """
module {
  tt.func public @k(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>, %out2: !tt.ptr<f32>) {
""" + LOAD_2D + """
    %s = "tt.reduce"(%xv) <{axis = 1 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tt.reduce.return %t : f32
    }) : (tensor<8x32xf32>) -> tensor<8xf32>
    %m = "tt.reduce"(%xv) <{axis = 1 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %t = arith.maxnumf %a, %b : f32
      tt.reduce.return %t : f32
    }) : (tensor<8x32xf32>) -> tensor<8xf32>
""" + STORE_ROWS.replace("T", "f32").replace("RES", "s") + STORE_ROWS.replace("T", "f32").replace(
    "RES", "m").replace("%out", "%out2").replace("%op", "%op2").replace("%oa", "%oa2") + """
    tt.return
  }
}
"""


def test_reduce_sum_and_maxnum_ignoring_nan(run, rng):
    x = rng.standard_normal((8, 32)).astype(np.float32)
    x[2, 5] = np.nan
    s, m = np.zeros(8, np.float32), np.zeros(8, np.float32)
    run(ROW_SUM_MAX, (1,), x, s, m)
    ref = x.astype(np.float64).sum(1)
    np.testing.assert_allclose(s[np.arange(8) != 2], ref[np.arange(8) != 2], rtol=1e-5)
    assert np.isnan(s[2])
    np.testing.assert_array_equal(m, np.nanmax(x, axis=1))  # maxnumf ignores NaN


# Triton's argmax combine: keep the larger value, NaN counting as the largest, ties to the lower index.
ARGMAX = """
module {
  tt.func public @k(%x: !tt.ptr<f32>, %out: !tt.ptr<i32>, %outv: !tt.ptr<f32>) {
""" + LOAD_2D + """
    %idx = tt.broadcast %ej : tensor<1x32xi32> -> tensor<8x32xi32>
    %v, %i = "tt.reduce"(%xv, %idx) <{axis = 1 : i32}> ({
    ^bb0(%a: f32, %ia: i32, %b: f32, %ib: i32):
      %gt = arith.cmpf ogt, %a, %b : f32
      %eq = arith.cmpf oeq, %a, %b : f32
      %lt = arith.cmpi slt, %ia, %ib : i32
      %tie = arith.andi %eq, %lt : i1
      %anan = arith.cmpf une, %a, %a : f32
      %bnan = arith.cmpf une, %b, %b : f32
      %nb = arith.constant true
      %notbnan = arith.xori %bnan, %nb : i1
      %anan_only = arith.andi %anan, %notbnan : i1
      %bothnan = arith.andi %anan, %bnan : i1
      %nantie = arith.andi %bothnan, %lt : i1
      %c0 = arith.ori %gt, %tie : i1
      %c1 = arith.ori %c0, %anan_only : i1
      %c2 = arith.ori %c1, %nantie : i1
      %notanan = arith.xori %anan, %nb : i1
      %bwins_nan = arith.andi %bnan, %notanan : i1
      %nbw = arith.xori %bwins_nan, %nb : i1
      %pick = arith.andi %c2, %nbw : i1
      %rv = arith.select %pick, %a, %b : f32
      %ri2 = arith.select %pick, %ia, %ib : i32
      tt.reduce.return %rv, %ri2 : f32, i32
    }) : (tensor<8x32xf32>, tensor<8x32xi32>) -> (tensor<8xf32>, tensor<8xi32>)
""" + STORE_ROWS.replace("T", "i32").replace("RES", "i") + STORE_ROWS.replace("T", "f32").replace(
    "RES", "v").replace("%out", "%outv").replace("%op", "%opv").replace("%oa", "%oav") + """
    tt.return
  }
}
"""


def test_argmax_with_nans_and_ties(run, rng):
    x = rng.standard_normal((8, 32)).astype(np.float32)
    x[1, [3, 20]] = np.nan         # first NaN wins
    x[4, [7, 30]] = 10.0           # tie: lower index
    x[6, :] = np.nan
    idx, val = np.zeros(8, np.int32), np.zeros(8, np.float32)
    run(ARGMAX, (1,), x, idx, val)
    ref = np.argmax(x, axis=1)  # numpy: NaN is the maximum, first occurrence on ties
    np.testing.assert_array_equal(idx, ref)
    np.testing.assert_array_equal(val, x[np.arange(8), ref])


CUMSUM = """
module {
  tt.func public @k(%x: !tt.ptr<i32>, %out: !tt.ptr<i32>) {
    %r = tt.make_range {end = 100 : i32, start = 0 : i32} : tensor<100xi32>
    %xp = tt.splat %x : !tt.ptr<i32> -> tensor<100x!tt.ptr<i32>>
    %xa = tt.addptr %xp, %r : tensor<100x!tt.ptr<i32>>, tensor<100xi32>
    %xv = tt.load %xa : tensor<100x!tt.ptr<i32>>
    %s = "tt.scan"(%xv) <{axis = 0 : i32, reverse = REV}> ({
    ^bb0(%a: i32, %b: i32):
      %t = arith.addi %a, %b : i32
      tt.scan.return %t : i32
    }) : (tensor<100xi32>) -> tensor<100xi32>
    %op = tt.splat %out : !tt.ptr<i32> -> tensor<100x!tt.ptr<i32>>
    %oa = tt.addptr %op, %r : tensor<100x!tt.ptr<i32>>, tensor<100xi32>
    tt.store %oa, %s : tensor<100x!tt.ptr<i32>>
    tt.return
  }
}
"""


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_scan(run, rng, reverse):
    x = rng.integers(-2**31, 2**31 - 1, 100, dtype=np.int32)  # wraps: exact either way
    out = np.zeros(100, np.int32)
    run(CUMSUM.replace("REV", "true" if reverse else "false"), (1,), x, out)
    with np.errstate(over="ignore"):
        ref = np.cumsum(x[::-1], dtype=np.int32)[::-1] if reverse else np.cumsum(x, dtype=np.int32)
    np.testing.assert_array_equal(out, ref)


ATOMIC = """
module {
  tt.func public @k(%bins: !tt.ptr<T>, %keys: !tt.ptr<i32>, %vals: !tt.ptr<T>, %old: !tt.ptr<T>) {
    %pid = tt.get_program_id x : i32
    %c64 = arith.constant 64 : i32
    %start = arith.muli %pid, %c64 : i32
    %s = tt.splat %start : i32 -> tensor<64xi32>
    %r0 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %r = arith.addi %s, %r0 : tensor<64xi32>
    %kp = tt.splat %keys : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
    %ka = tt.addptr %kp, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    %k = tt.load %ka : tensor<64x!tt.ptr<i32>>
    %vp = tt.splat %vals : !tt.ptr<T> -> tensor<64x!tt.ptr<T>>
    %va = tt.addptr %vp, %r : tensor<64x!tt.ptr<T>>, tensor<64xi32>
    %v = tt.load %va : tensor<64x!tt.ptr<T>>
    %bp = tt.splat %bins : !tt.ptr<T> -> tensor<64x!tt.ptr<T>>
    %ba = tt.addptr %bp, %k : tensor<64x!tt.ptr<T>>, tensor<64xi32>
    %c3 = arith.constant dense<3> : tensor<64xi32>
    %m = arith.cmpi ne, %r0, %c3 : tensor<64xi32>
    %o = tt.atomic_rmw RMW, acq_rel, gpu, %ba, %v, %m : (tensor<64x!tt.ptr<T>>, tensor<64xT>, tensor<64xi1>) -> tensor<64xT>
    %op = tt.splat %old : !tt.ptr<T> -> tensor<64x!tt.ptr<T>>
    %oa = tt.addptr %op, %r : tensor<64x!tt.ptr<T>>, tensor<64xi32>
    tt.store %oa, %o : tensor<64x!tt.ptr<T>>
    tt.return
  }
}
"""


@pytest.mark.parametrize("rmw, ty, fn", [("fadd", "f32", lambda a, b: np.float32(a + b)),
                                         ("add", "i32", lambda a, b: np.int32(a + b)),
                                         ("max", "i32", max), ("exch", "i32", lambda a, b: b)])
def test_atomics_with_duplicate_addresses_apply_in_lane_order(run, rng, rmw, ty, fn):
    dt = np.float32 if ty == "f32" else np.int32
    n, nbins = 256, 5
    keys = rng.integers(0, nbins, n, dtype=np.int32)
    vals = (rng.standard_normal(n) * 100).astype(dt)
    bins = (rng.standard_normal(nbins) * 10).astype(dt)
    old = np.zeros(n, dt)
    ref_bins, ref_old = bins.copy(), np.zeros(n, dt)
    for lane in range(n):  # programs in order, lanes in order; lane 3 of each program is masked
        if lane % 64 == 3:
            continue
        ref_old[lane] = ref_bins[keys[lane]]
        ref_bins[keys[lane]] = fn(ref_bins[keys[lane]], vals[lane])
    run(ATOMIC.replace("RMW", rmw).replace("T", ty), (n // 64,), bins, keys, vals, old)
    np.testing.assert_array_equal(bins, ref_bins)
    keep = np.arange(n) % 64 != 3
    np.testing.assert_array_equal(old[keep], ref_old[keep])
    assert (old[~keep] == 0).all()  # masked-off lanes return 0


DOT = """
module {
  tt.func public @k(%a: !tt.ptr<TA>, %b: !tt.ptr<TA>, %c: !tt.ptr<TC>) {
    %ri = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %ei = tt.expand_dims %ri {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %c16 = arith.constant dense<16> : tensor<16x1xi32>
    %row = arith.muli %ei, %c16 : tensor<16x1xi32>
    %ej = tt.expand_dims %ri {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %bi = tt.broadcast %row : tensor<16x1xi32> -> tensor<16x16xi32>
    %bj = tt.broadcast %ej : tensor<1x16xi32> -> tensor<16x16xi32>
    %offs = arith.addi %bi, %bj : tensor<16x16xi32>
    %ap = tt.splat %a : !tt.ptr<TA> -> tensor<16x16x!tt.ptr<TA>>
    %aa = tt.addptr %ap, %offs : tensor<16x16x!tt.ptr<TA>>, tensor<16x16xi32>
    %av = tt.load %aa : tensor<16x16x!tt.ptr<TA>>
    %bp = tt.splat %b : !tt.ptr<TA> -> tensor<16x16x!tt.ptr<TA>>
    %ba = tt.addptr %bp, %offs : tensor<16x16x!tt.ptr<TA>>, tensor<16x16xi32>
    %bv = tt.load %ba : tensor<16x16x!tt.ptr<TA>>
    %cp = tt.splat %c : !tt.ptr<TC> -> tensor<16x16x!tt.ptr<TC>>
    %ca = tt.addptr %cp, %offs : tensor<16x16x!tt.ptr<TC>>, tensor<16x16xi32>
    %cv = tt.load %ca : tensor<16x16x!tt.ptr<TC>>
    %d = tt.dot %av, %bv, %cv PREC : tensor<16x16xTA> * tensor<16x16xTA> -> tensor<16x16xTC>
    tt.store %ca, %d : tensor<16x16x!tt.ptr<TC>>
    tt.return
  }
}
"""


def test_dot_fp32_ieee_and_tf32(run, rng):
    a, b = rng.standard_normal((16, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    c0 = rng.standard_normal((16, 16)).astype(np.float32)
    c = c0.copy()
    run(DOT.replace("TA", "f32").replace("TC", "f32").replace(" PREC", ""), (1,), a, b, c)
    ref = (a.astype(np.float64) @ b.astype(np.float64) + c0).astype(np.float32)
    np.testing.assert_allclose(c, ref, rtol=1e-6, atol=1e-6)
    c = c0.copy()
    run(DOT.replace("TA", "f32").replace("TC", "f32").replace(" PREC", ", inputPrecision = tf32"), (1,), a, b, c)
    err = np.abs(c - ref).max()
    assert 1e-5 < err < 5e-2  # inputs rounded to 10 mantissa bits


def test_dot_int8_accumulates_in_int32(run, rng):
    a = rng.integers(-128, 127, (16, 16), dtype=np.int8)
    b = rng.integers(-128, 127, (16, 16), dtype=np.int8)
    c0 = rng.integers(-1000, 1000, (16, 16), dtype=np.int32)
    c = c0.copy()
    run(DOT.replace("TA", "i8").replace("TC", "i32").replace(" PREC", ""), (1,), a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32) + c0)
