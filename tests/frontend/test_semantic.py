"""Typing rules the frontend takes from Triton, read in the TTIR they produce: the shift kind of
``>>`` with mixed signedness, broadcasting between ranks, and the types reductions and scans
promote to."""
import re

import pytest

import tritium
import tritium as triton
import tritium.language as tl


def _ttir(fn, sig, **constexprs):
    return tritium.compile(fn, signature=sig, constexprs=constexprs, target="interpreter").asm["ttir"]


@triton.jit
def _shr(x_ptr, y_ptr, z_ptr):
    offs = tl.arange(0, 16)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs) >> tl.load(y_ptr + offs))


@pytest.mark.parametrize("x, y, z, op", [
    ("i32", "u32", "u32", "arith.shrsi"),   # C would make this a logical shift of uint32
    ("i8", "u16", "u16", "arith.shrsi"),    # the int8 is sign-extended, then shifted arithmetically
    ("u32", "i32", "u32", "arith.shrui"),
    ("u8", "i32", "i32", "arith.shrui"),    # zero-extended: logical and arithmetic agree
    ("i64", "i64", "i64", "arith.shrsi"),
])
def test_shift_kind_follows_the_left_operand(x, y, z, op):
    ttir = _ttir(_shr, {"x_ptr": f"*{x}", "y_ptr": f"*{y}", "z_ptr": f"*{z}"})
    assert op in ttir
    assert ({"arith.shrsi", "arith.shrui"} - {op}).pop() not in ttir


@triton.jit
def _rank_broadcast(x_ptr, y_ptr, z_ptr):
    offs = tl.arange(0, 8)[:, None] * 64 + tl.arange(0, 64)[None, :]
    tl.store(z_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + tl.arange(0, 64)))


def test_lower_rank_operand_gets_a_leading_unit_dimension():
    ttir = _ttir(_rank_broadcast, {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32"})
    assert re.search(r"tt.expand_dims %\d+ \{axis = 0 : i32\} : tensor<64xf32> -> tensor<1x64xf32>", ttir)
    assert re.search(r"tt.broadcast %\d+ : tensor<1x64xf32> -> tensor<8x64xf32>", ttir)


@triton.jit
def _broadcast_to_rank(x_ptr):
    y = tl.broadcast_to(tl.arange(0, 64), [8, 64])
    tl.store(x_ptr + tl.arange(0, 64), tl.sum(y, 0))


def test_broadcast_to_keeps_the_rank_as_in_triton():
    with pytest.raises(tritium.CompilationError, match=r"Cannot broadcast, rank mismatch: \[64\], \[8, 64\]"):
        _ttir(_broadcast_to_rank, {"x_ptr": "*i32"})


@triton.jit
def _scan_and_max(x_ptr, z_ptr, w_ptr, OP: tl.constexpr):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs)
    if OP == "cumsum":
        tl.store(z_ptr + offs, tl.cumsum(x, 0))
    elif OP == "cumprod":
        tl.store(z_ptr + offs, tl.cumprod(x, 0))
    else:
        tl.store(z_ptr + offs, x - tl.max(x, 0))
    tl.store(w_ptr + offs, x)


@pytest.mark.parametrize("op, src, acc", [
    ("cumsum", "bf16", "f32"), ("cumprod", "bf16", "f32"), ("cumsum", "i8", "i32"), ("cumprod", "i8", "i8"),
    ("max", "fp16", "f32"), ("max", "u8", "i32"), ("max", "fp64", "f64"),
])
def test_reductions_and_scans_promote_as_triton(op, src, acc):
    ttir = _ttir(_scan_and_max, {"x_ptr": f"*{src}", "z_ptr": "*fp32", "w_ptr": f"*{src}"}, OP=op)
    region = ttir[ttir.index('"tt.scan"' if op != "max" else '"tt.reduce"'):]
    block_args = region.splitlines()[1]  # ^bb0(%a: T loc(...), %b: T loc(...)): the combine's type
    assert block_args.strip().startswith("^bb0(") and block_args.count(f": {acc} ") == 2, block_args
