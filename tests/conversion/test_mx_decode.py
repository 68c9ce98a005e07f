"""The shared LLVM lowering of the microscaling decode ops, run on the host CPU through LLVM's JIT:
every byte through ``e2m1_to_float`` (both nibbles, bf16 / f16 / f32) and ``e8m0_to_float`` (bf16
and f32, with and without fast math) against the formats' definitions.  The integer arithmetic
is the same on every target; only the f16 scale's final ``fptrunc`` is left to the target (an
x86 JIT would need a runtime library call for it), so that one is checked in the IR text."""
import ctypes
import os
import sys

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np
import pytest

from tritium.conversion.ttgir_to_llvm.mx_decode import e2m1_to_float, e8m0_to_float
from tritium.conversion.ttgir_to_llvm.types import BF16, F16, F32, I8

sys.path.insert(0, os.path.dirname(__file__))
from simt import host_engine  # noqa: E402

_DST = {"bf16": (BF16, 16), "f16": (F16, 16), "f32": (F32, 32)}


def _bits_of(values, dst: str) -> np.ndarray:
    v = np.asarray(values, np.float64)
    if dst == "f16":
        return v.astype(np.float16).view(np.uint16).astype(np.uint64)
    f = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    return f >> 16 if dst == "bf16" else f  # the values below are exact in bf16: truncation is exact


@pytest.fixture(scope="module")
def jit():
    mod = ir.Module("mx")
    mod.triple = llvm.get_process_triple()
    names = []

    def define(name, build, dst):
        ity = ir.IntType(_DST[dst][1])
        fn = ir.Function(mod, ir.FunctionType(ity, [I8]), name)
        b = ir.IRBuilder(fn.append_basic_block())
        b.ret(b.bitcast(build(b, fn.args[0], _DST[dst][0]), ity))
        names.append(name)

    for dst in _DST:
        for high in (False, True):
            define(f"e2m1_{dst}_{high}", lambda b, x, t, h=high: e2m1_to_float(b, x, h, t), dst)
    for dst in ("bf16", "f32"):
        for fast in (False, True):
            define(f"e8m0_{dst}_{fast}", lambda b, x, t, f=fast: e8m0_to_float(b, x, t, f), dst)
    engine = host_engine(mod)

    def call(name: str, dst: str) -> np.ndarray:
        ret = ctypes.c_uint16 if _DST[dst][1] == 16 else ctypes.c_uint32
        f = ctypes.CFUNCTYPE(ret, ctypes.c_uint8)(engine.get_function_address(name))
        return np.array([f(x) for x in range(256)], np.uint64)
    call.engine = engine  # keep the engine alive with the functions
    return call


def _e2m1(code):
    mag = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0][code & 7]
    return -mag if code & 8 else mag


@pytest.mark.parametrize("dst", list(_DST))
@pytest.mark.parametrize("high", [False, True])
def test_e2m1_every_byte_both_nibbles(jit, dst, high):
    codes = [(x >> 4) if high else (x & 0xF) for x in range(256)]
    want = _bits_of([_e2m1(c) for c in codes], dst)
    want |= np.array([(c & 8) << (_DST[dst][1] - 4) for c in codes], np.uint64)  # -0.0 keeps its sign
    assert np.array_equal(jit(f"e2m1_{dst}_{high}", dst), want)


@pytest.mark.parametrize("dst", ["bf16", "f32"])
def test_e8m0_every_code(jit, dst):
    got = jit(f"e8m0_{dst}_False", dst)
    want = _bits_of(np.exp2(np.arange(255) - 127.0), dst)
    assert np.array_equal(got[:255], want)  # 0 is the subnormal 2^-127, not zero
    assert got[255] == (0x7FC0 if dst == "bf16" else 0x7FC00000)  # 0xFF: NaN


@pytest.mark.parametrize("dst", ["bf16", "f32"])
def test_e8m0_fast_math_keeps_the_plain_exponent_bits(jit, dst):
    got = jit(f"e8m0_{dst}_True", dst)
    shift = 7 if dst == "bf16" else 23
    assert np.array_equal(got, np.arange(256, dtype=np.uint64) << np.uint64(shift))  # 0 -> +0, 0xFF -> +inf


def test_e8m0_to_f16_rounds_the_f32_value():
    mod = ir.Module("f16")
    fn = ir.Function(mod, ir.FunctionType(F16, [I8]), "s")
    b = ir.IRBuilder(fn.append_basic_block())
    b.ret(e8m0_to_float(b, fn.args[0], F16))
    text = str(mod)
    # the f32 bits checked above (2^-127 for code 0, NaN 0x7FC00000 for 0xFF), then one rounding
    assert f"i32 {1 << 22}," in text and f"i32 {0x7FC00000}," in text
    assert "bitcast i32" in text and "fptrunc float" in text and "to half" in text
