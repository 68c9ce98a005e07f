"""The LLVM IR fp8 conversions (what every GPU target runs) agree bit for bit with the formats'
numpy definitions in ``tritium.ttir.float_formats``: the IR is compiled for the host CPU and run
on every fp8 code and on a spread of f32 values (ties, overflow, underflow, NaN, infinities)."""
import ctypes
import os
import sys

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np
import pytest

from tritium.conversion.ttgir_to_llvm.fp8 import f32_to_fp8, fp8_to_f32
from tritium.ttir.float_formats import FP8_FORMATS, decode_table, encode

sys.path.insert(0, os.path.dirname(__file__))
from simt import host_engine  # noqa: E402

F32, I8, I64 = ir.FloatType(), ir.IntType(8), ir.IntType(64)


def _compile(fmt, rtz: bool):
    """``decode(const u8*, float*, n)`` and ``encode(const float*, u8*, n)`` loops, JIT-compiled."""
    m = ir.Module(name="fp8")
    m.triple = llvm.get_process_triple()
    ptr = ir.PointerType()
    for name, src_ty, dst_ty, conv in (("decode", I8, F32, lambda b, v: fp8_to_f32(b, v, fmt)),
                                       ("encode", F32, I8, lambda b, v: f32_to_fp8(b, v, fmt, rtz))):
        fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [ptr, ptr, I64]), name)
        entry, loop, done = fn.append_basic_block(), fn.append_basic_block(), fn.append_basic_block()
        b = ir.IRBuilder(entry)
        b.branch(loop)
        b.position_at_end(loop)
        i = b.phi(I64)
        i.add_incoming(ir.Constant(I64, 0), entry)
        v = b.load(b.gep(fn.args[0], [i], source_etype=src_ty), typ=src_ty)
        b.store(conv(b, v), b.gep(fn.args[1], [i], source_etype=dst_ty))
        nxt = b.add(i, ir.Constant(I64, 1))
        i.add_incoming(nxt, loop)
        b.cbranch(b.icmp_unsigned("<", nxt, fn.args[2]), loop, done)
        b.position_at_end(done)
        b.ret_void()
    engine = host_engine(m)
    sig = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    return engine, sig(engine.get_function_address("decode")), sig(engine.get_function_address("encode"))


def _run(fn, src: np.ndarray, out_dtype) -> np.ndarray:
    src = np.ascontiguousarray(src)
    out = np.zeros(src.shape, out_dtype)
    fn(src.ctypes.data, out.ctypes.data, src.size)
    return out


def _inputs(fmt) -> np.ndarray:
    vals = decode_table(fmt)[:fmt.max_code + 1]
    rng = np.random.default_rng(7)
    ties = (vals[:-1] + vals[1:]) / 2
    spread = np.exp2(rng.uniform(np.log2(vals[1]) - 4, np.log2(vals[-1]) + 3, 4000))
    special = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 3e38, 1e-40]
    x = np.concatenate([vals, ties, spread, ties * (1 + 2.0 ** -20), ties * (1 - 2.0 ** -20)])
    return np.concatenate([x, -x, special]).astype(np.float32)


@pytest.mark.parametrize("rtz", [False, True], ids=["rtne", "rtz"])
@pytest.mark.parametrize("name", sorted(FP8_FORMATS))
def test_llvm_conversions_match_the_format_definitions(name, rtz):
    fmt = FP8_FORMATS[name]
    engine, decode, encode_ir = _compile(fmt, rtz)
    codes = np.arange(256, dtype=np.uint8)
    got = _run(decode, codes, np.float32)
    want = decode_table(fmt)
    assert np.array_equal(got, want.astype(np.float32), equal_nan=True)
    assert np.array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))  # -0.0 too
    x = _inputs(fmt)
    got = _run(encode_ir, x, np.uint8)
    want = encode(x, fmt, rtz=rtz)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]
    del engine
