"""Elementwise semantics on the interpreter: masks, integer wrap-around and division, small floats."""
from __future__ import annotations

import numpy as np
import pytest

VECTOR_ADD = """
module {
  tt.func public @add(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>, %out: !tt.ptr<f32>, %n: i32) {
    %c64 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %start = arith.muli %pid, %c64 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %s = tt.splat %start : i32 -> tensor<64xi32>
    %offs = arith.addi %s, %r : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %mask = arith.cmpi slt, %offs, %ns : tensor<64xi32>
    %xp = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xa = tt.addptr %xp, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %xv = tt.load %xa, %mask : tensor<64x!tt.ptr<f32>>
    %yp = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %ya = tt.addptr %yp, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %other = arith.constant dense<100.0> : tensor<64xf32>
    %yv = tt.load %ya, %mask, %other : tensor<64x!tt.ptr<f32>>
    %sum = arith.addf %xv, %yv : tensor<64xf32>
    %op = tt.splat %out : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %oa = tt.addptr %op, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %oa, %sum, %mask : tensor<64x!tt.ptr<f32>>
    tt.return
  }
}
"""


def test_vector_add_with_mask(run, rng):
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n + 24, -7.0, np.float32)  # the tail beyond n must stay untouched
    run(VECTOR_ADD, ((n + 63) // 64,), x, y, out, n)
    np.testing.assert_array_equal(out[:n], x + y)
    assert (out[n:] == -7.0).all()


def test_vector_add_torch_tensors(run):
    torch = pytest.importorskip("torch")
    x, y = torch.randn(300), torch.randn(300)
    out = torch.empty(300)
    run(VECTOR_ADD, (5,), x, y, out, 300)
    assert torch.equal(out, x + y)


def _binary_kernel(op: str, ty: str, n: int = 64) -> str:
    return f"""
module {{
  tt.func public @k(%a: !tt.ptr<{ty}>, %b: !tt.ptr<{ty}>, %o: !tt.ptr<{ty}>) {{
    %r = tt.make_range {{end = {n} : i32, start = 0 : i32}} : tensor<{n}xi32>
    %ap = tt.splat %a : !tt.ptr<{ty}> -> tensor<{n}x!tt.ptr<{ty}>>
    %aa = tt.addptr %ap, %r : tensor<{n}x!tt.ptr<{ty}>>, tensor<{n}xi32>
    %av = tt.load %aa : tensor<{n}x!tt.ptr<{ty}>>
    %bp = tt.splat %b : !tt.ptr<{ty}> -> tensor<{n}x!tt.ptr<{ty}>>
    %ba = tt.addptr %bp, %r : tensor<{n}x!tt.ptr<{ty}>>, tensor<{n}xi32>
    %bv = tt.load %ba : tensor<{n}x!tt.ptr<{ty}>>
    %v = {op} %av, %bv : tensor<{n}x{ty}>
    %op = tt.splat %o : !tt.ptr<{ty}> -> tensor<{n}x!tt.ptr<{ty}>>
    %oa = tt.addptr %op, %r : tensor<{n}x!tt.ptr<{ty}>>, tensor<{n}xi32>
    tt.store %oa, %v : tensor<{n}x!tt.ptr<{ty}>>
    tt.return
  }}
}}
"""


def _c_div(a, b):
    """C division (truncation) in Python integers."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _wrap(v, bits):
    return ((v + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))


@pytest.mark.parametrize("bits", [8, 16, 32, 64])
def test_integer_wraparound_and_division(run, rng, bits):
    dt = getattr(np, f"int{bits}")
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, 64, dtype=dt, endpoint=True)
    b = rng.integers(info.min, info.max, 64, dtype=dt, endpoint=True)
    b[:4] = [0, -1, 1, 0]
    a[:4] = [5, info.min, info.min, -9]
    b[4:12] = rng.integers(-20, 20, 8)  # small divisors give non-trivial quotients
    ty = f"i{bits}"
    ai, bi = [int(v) for v in a], [int(v) for v in b]
    ua, ub = [v % (1 << bits) for v in ai], [v % (1 << bits) for v in bi]
    expect = {
        "arith.addi": [_wrap(x + y, bits) for x, y in zip(ai, bi)],
        "arith.muli": [_wrap(x * y, bits) for x, y in zip(ai, bi)],
        # division by zero: quotient all ones (-1), remainder the dividend
        "arith.divsi": [_wrap(_c_div(x, y), bits) if y else -1 for x, y in zip(ai, bi)],
        "arith.remsi": [x - _wrap(_c_div(x, y), bits) * y if y else x for x, y in zip(ai, bi)],
        "arith.divui": [_wrap(x // y, bits) if y else -1 for x, y in zip(ua, ub)],
        "arith.remui": [_wrap(x % y, bits) if y else _wrap(x, bits) for x, y in zip(ua, ub)],
        "arith.maxui": [_wrap(max(x, y), bits) for x, y in zip(ua, ub)],
        "arith.minsi": [min(x, y) for x, y in zip(ai, bi)],
    }
    for op, ref in expect.items():
        out = np.zeros(64, dt)
        run(_binary_kernel(op, ty), (1,), a, b, out)
        got = [int(v) for v in out]
        ref = [_wrap(v, bits) for v in ref]
        assert got == ref, f"{op} on {ty}"


def test_shifts_beyond_width(run, rng):
    a = rng.integers(-2**31, 2**31 - 1, 64, dtype=np.int32)
    a[0] = -5
    b = rng.integers(0, 40, 64, dtype=np.int32)
    b[:3] = [32, 33, -1]  # -1 is 2**32-1 unsigned: beyond the width
    for op, ref in (
        ("arith.shli", lambda x, s: _wrap(x << s, 32) if 0 <= s < 32 else 0),
        ("arith.shrsi", lambda x, s: x >> s if 0 <= s < 32 else (-1 if x < 0 else 0)),
        ("arith.shrui", lambda x, s: _wrap((x % 2**32) >> s, 32) if 0 <= s < 32 else 0),
    ):
        out = np.zeros(64, np.int32)
        run(_binary_kernel(op, "i32"), (1,), a, b, out)
        assert [int(v) for v in out] == [ref(int(x), int(s)) for x, s in zip(a, b)], op


def test_fp16_arithmetic_rounds_each_result(run, rng):
    a = (rng.standard_normal(64) * 100).astype(np.float16)
    b = (rng.standard_normal(64) * 3).astype(np.float16)
    for op, fn in (("arith.mulf", np.multiply), ("arith.divf", np.divide), ("arith.addf", np.add)):
        out = np.zeros(64, np.float16)
        run(_binary_kernel(op, "f16"), (1,), a, b, out)
        ref = fn(a.astype(np.float64), b.astype(np.float64)).astype(np.float16)  # one rounding
        np.testing.assert_array_equal(out, ref)


def test_bf16_arithmetic_rounds_each_result(run, rng):
    torch = pytest.importorskip("torch")
    a = torch.randn(64, dtype=torch.float32).to(torch.bfloat16) * 37
    b = torch.randn(64, dtype=torch.float32).to(torch.bfloat16)
    for op, fn in (("arith.mulf", torch.mul), ("arith.addf", torch.add), ("arith.divf", torch.div)):
        out = torch.zeros(64, dtype=torch.bfloat16)
        run(_binary_kernel(op, "bf16"), (1,), a, b, out)
        # torch computes bf16 ops in float32 and rounds to nearest even once
        ref = fn(a.float(), b.float()).to(torch.bfloat16)
        assert torch.equal(out, ref), op


CONVERT = """
module {
  tt.func public @k(%a: !tt.ptr<f32>, %o: !tt.ptr<SMALL>, %back: !tt.ptr<f32>) {
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ap = tt.splat %a : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %aa = tt.addptr %ap, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %av = tt.load %aa : tensor<64x!tt.ptr<f32>>
    %s = CONV %av : tensor<64xf32> -> tensor<64xSMALL>
    %op = tt.splat %o : !tt.ptr<SMALL> -> tensor<64x!tt.ptr<SMALL>>
    %oa = tt.addptr %op, %r : tensor<64x!tt.ptr<SMALL>>, tensor<64xi32>
    tt.store %oa, %s : tensor<64x!tt.ptr<SMALL>>
    %w = tt.fp_to_fp %s : tensor<64xSMALL> -> tensor<64xf32>
    %bp = tt.splat %back : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %ba = tt.addptr %bp, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %ba, %w : tensor<64x!tt.ptr<f32>>
    tt.return
  }
}
"""


@pytest.mark.parametrize("small, torch_name", [("f8E4M3FN", "float8_e4m3fn"), ("f8E5M2", "float8_e5m2"),
                                               ("bf16", "bfloat16")])
def test_small_float_conversion_round_to_nearest_even(run, rng, small, torch_name):
    torch = pytest.importorskip("torch")
    tdt = getattr(torch, torch_name)
    a = (rng.standard_normal(64) * 4).astype(np.float32)
    a[:3] = [0.0, -0.0, 1.0 + 2.0 ** -9]
    conv = "tt.fp_to_fp" if small.startswith("f8") else "arith.truncf"
    text = CONVERT.replace("SMALL", small).replace("CONV %av", f"{conv} %av" + (", rounding = rtne" if conv == "tt.fp_to_fp" else ""))
    text = text.replace("tensor<64xf32> -> tensor<64xbf16>", "tensor<64xf32> to tensor<64xbf16>")
    out, back = torch.zeros(64, dtype=tdt), np.zeros(64, np.float32)
    run(text, (1,), a, out, back)
    ref = torch.from_numpy(a).to(tdt)
    assert torch.equal(out.view(torch.uint8 if tdt.itemsize == 1 else torch.int16),
                       ref.view(torch.uint8 if tdt.itemsize == 1 else torch.int16))
    np.testing.assert_array_equal(back, ref.float().numpy())


def test_int_to_bf16_rounds_once():
    """2**24 + 2**16 + 1 lies just above halfway between two bf16 values; rounding through fp32
    first lands exactly on the halfway point and then rounds down (double rounding)."""
    from tritium.backends.interpreter.numerics import rounder, type_info
    from xdsl.dialects.builtin import BFloat16Type
    v = 2**24 + 2**16 + 1
    got = float(rounder(type_info(BFloat16Type()))(np.float64(v)))
    assert got == 2**24 + 2**17
    got = rounder(type_info(BFloat16Type()))(np.array([v, -v, 3.0], np.float64))
    assert list(got) == [2**24 + 2**17, -(2**24 + 2**17), 3.0]
