"""The ``tt`` dialect prints in Triton's syntax and parses back to the same text, custom and
generic forms alike."""
from pathlib import Path

import pytest

from tritium.ttir.ir import parse_module, print_module

HERE = Path(__file__).parent


def test_custom_form_round_trips():
    text = print_module(parse_module((HERE / "roundtrip_ops.mlir").read_text()))
    assert print_module(parse_module(text)) == text
    # Triton's own spelling survives: keywords, elided defaults, block-pointer types.
    assert "tt.load %11, %6 cacheModifier = cg evictionPolicy = evict_last {isVolatile = true}" in text
    assert "tt.dot %ld, %ld, %ld, inputPrecision = tf32 :" in text
    assert 'loc("/u/x/01-vector-add.py":37:24)' in text
    assert "llvm.intr.assume %cond : i1 loc" in text and "    gpu.barrier loc" in text


def test_generic_form_round_trips():
    m = parse_module((HERE / "roundtrip_ops.mlir").read_text())
    generic = print_module(m, generic=True)
    assert '"tt.load"(%8, %6) <{' in generic and "operandSegmentSizes = array<i32: 1, 1, 0>" in generic
    assert print_module(parse_module(generic)) == print_module(m)


def test_verifier_rejects_bad_broadcast():
    bad = """
    tt.func @f(%x: tensor<2x4xf32>) {
      %y = tt.broadcast %x : tensor<2x4xf32> -> tensor<3x4xf32>
      tt.return
    }"""
    with pytest.raises(Exception, match="cannot broadcast"):
        parse_module("builtin.module {" + bad + "}")
