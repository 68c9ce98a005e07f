"""``tt.dot_scaled`` prints in Triton's syntax (optional ``scale`` operands, ``lhs = .. rhs = ..``,
``{fastMath = ..}``), parses back, and its verifier checks the packed shapes and the scales."""
import pytest

from tritium.ttir.ir import parse_module, print_module

_OK = """builtin.module {
  tt.func @f(%a: tensor<128x32xi8>, %as: tensor<128x2xi8>, %b: tensor<64x64xf8E4M3FN>, %bs: tensor<64x2xi8>,
             %h: tensor<64x64xbf16>, %c: tensor<128x64xf32>) {
    %0 = tt.dot_scaled %a scale %as, %b scale %bs, %c lhs = e2m1 rhs = e4m3 {fastMath = true} : tensor<128x32xi8>, tensor<128x2xi8> * tensor<64x64xf8E4M3FN>, tensor<64x2xi8> -> tensor<128x64xf32>
    %1 = tt.dot_scaled %a scale %as, %h, %c lhs = e2m1 rhs = bf16 {fastMath = false} : tensor<128x32xi8>, tensor<128x2xi8> * tensor<64x64xbf16> -> tensor<128x64xf32>
    %2 = tt.dot_scaled %a, %b scale %bs, %0 lhs = e2m1 rhs = e4m3 {fastMath = false} : tensor<128x32xi8> * tensor<64x64xf8E4M3FN>, tensor<64x2xi8> -> tensor<128x64xf32>
    tt.return
  }
}
"""


def test_custom_form_round_trips():
    text = print_module(parse_module(_OK), locations=False)
    assert print_module(parse_module(text), locations=False) == text
    assert ("tt.dot_scaled %a scale %as, %b scale %bs, %c lhs = e2m1 rhs = e4m3 {fastMath = true} : tensor<128x32xi8>, "
            "tensor<128x2xi8> * tensor<64x64xf8E4M3FN>, tensor<64x2xi8> -> tensor<128x64xf32>") in text
    assert "tt.dot_scaled %a scale %as, %h, %c lhs = e2m1 rhs = bf16 {fastMath = false} : tensor<128x32xi8>, " \
           "tensor<128x2xi8> * tensor<64x64xbf16> -> tensor<128x64xf32>" in text
    assert "tt.dot_scaled %a, %b scale %bs, %0 lhs = e2m1 rhs = e4m3 {fastMath = false} : tensor<128x32xi8> * " \
           "tensor<64x64xf8E4M3FN>, tensor<64x2xi8>" in text


def test_generic_form_round_trips():
    m = parse_module(_OK)
    generic = print_module(m, generic=True)
    assert '"tt.dot_scaled"' in generic and "a_elem_type = 4 : i32" in generic and "b_elem_type = 0 : i32" in generic
    assert "operandSegmentSizes = array<i32: 1, 1, 1, 0, 1>" in generic
    assert print_module(parse_module(generic)) == print_module(m)


def _one(line: str, args: str) -> str:
    return f"builtin.module {{\n  tt.func @f({args}) {{\n    {line}\n    tt.return\n  }}\n}}"


@pytest.mark.parametrize("line, args, message", [
    # e2m1 packs two values a byte: 128x32 bytes hold K = 64, the rhs has K = 32
    ("%0 = tt.dot_scaled %a, %b, %c lhs = e2m1 rhs = bf16 : tensor<128x32xi8> * tensor<32x64xbf16> -> tensor<128x64xf32>",
     "%a: tensor<128x32xi8>, %b: tensor<32x64xbf16>, %c: tensor<128x64xf32>", "shapes do not agree"),
    ("%0 = tt.dot_scaled %a scale %s, %b, %c lhs = e4m3 rhs = bf16 : tensor<64x64xf8E4M3FN>, tensor<64x4xi8> * "
     "tensor<64x64xbf16> -> tensor<64x64xf32>",
     "%a: tensor<64x64xf8E4M3FN>, %s: tensor<64x4xi8>, %b: tensor<64x64xbf16>, %c: tensor<64x64xf32>",
     "lhs scale must be i8 of shape [64, 2]"),
    ("%0 = tt.dot_scaled %a, %b, %c lhs = e2m1 rhs = bf16 : tensor<64x32xf16> * tensor<64x64xbf16> -> tensor<64x64xf32>",
     "%a: tensor<64x32xf16>, %b: tensor<64x64xbf16>, %c: tensor<64x64xf32>", "cannot be stored as f16"),
])
def test_verifier_rejects(line, args, message):
    with pytest.raises(Exception, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_module(_one(line, args))
