"""The ``ttg`` dialect round-trips in Triton's syntax, verifies its ops, and accepts vendor encodings."""
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.ir import ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition

from tritium.ttgir import DistributedEncoding, register_encodings
from tritium.ttgir.encodings import ints, print_fields, parse_fields
from tritium.ttgir.ir import parse_module, print_module
from tritium.ttgir.layouts import coordinates, total_elems_per_thread
from tritium.ttgir.linear_layout import LinearLayout, fit_to_shape, identity_bases

HERE = Path(__file__).parent
BLOCKED = "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>"


def test_round_trip_custom_and_generic():
    m = parse_module((HERE / "roundtrip_ttgir.mlir").read_text())
    text = print_module(m)
    assert print_module(parse_module(text)) == text
    assert print_module(parse_module(print_module(m, generic=True))) == text
    assert f"tensor<64xi32, #ttg.slice<{{dim = 1, parent = {BLOCKED}}}>>" in text
    assert '"ttg.num-warps" = 4 : i32' in text and 'ttg.target = "cuda:90"' in text
    assert "!ttg.memdesc<64x64xf16, #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>, " \
           "#ttg.shared_memory, mutable>" in text
    assert "ttg.async_wait %11 {num = 0 : i32}" in text


def _func(body: str) -> str:
    return "builtin.module {\n tt.func @f(%x: tensor<64xf32, " + BLOCKED.replace("[1, 4]", "[4]").replace(
        "[8, 4]", "[32]").replace("[4, 1]", "[4]").replace("[1, 0]", "[0]") + ">) {\n" + body + "\n tt.return\n }\n}"


def test_convert_layout_must_keep_shape():
    with pytest.raises(Exception, match="changes only the encoding"):
        parse_module(_func("%y = ttg.convert_layout %x : tensor<64xf32, #ttg.blocked<{sizePerThread = [4], "
                           "threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>> -> tensor<64xf16, "
                           "#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>>"))


def test_local_store_needs_mutable_buffer():
    src = ("%m = ttg.local_alloc : () -> !ttg.memdesc<64xf32, #ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, "
           "order = [0]}>, #ttg.shared_memory>\n")
    store = ("ttg.local_store %x, %m : tensor<64xf32, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], "
             "warpsPerCTA = [4], order = [0]}>> -> !ttg.memdesc<64xf32, #ttg.swizzled_shared<{vec = 1, perPhase = 1, "
             "maxPhase = 1, order = [0]}>, #ttg.shared_memory>")
    with pytest.raises(Exception, match="mutable"):
        parse_module(_func(src + store))


def test_blocked_verifier():
    with pytest.raises(Exception, match="permutation"):
        parse_module(_func("").replace("order = [0]", "order = [1]"))


@irdl_attr_definition
class ToyMmaEncodingAttr(ParametrizedAttribute, DistributedEncoding):
    """A vendor-style encoding living outside the core: each warp owns a 16x(warp_size/2) tile."""

    name = "ttg.toy_mma"
    warpsPerCTA: ArrayAttr
    lanes: IntAttr

    threads_per_warp = property(lambda self: (2, self.lanes.data // 2))
    warps_per_cta = property(lambda self: tuple(x.data for x in self.warpsPerCTA.data))
    size_per_thread = property(lambda self: (8, 1))
    order = property(lambda self: (1, 0))

    def linear_layout(self, shape):
        o = self.order
        return fit_to_shape(identity_bases((8, 1), o), identity_bases(self.threads_per_warp, o, (8, 1)),
                            identity_bases(self.warps_per_cta, o, (16, self.lanes.data // 2)), tuple(shape), o)

    def print_parameters(self, printer):
        print_fields(printer, [("warpsPerCTA", self.warps_per_cta), ("lanes", self.lanes.data)])

    @classmethod
    def parse_parameters(cls, parser):
        f = parse_fields(parser, {"warpsPerCTA": "ints", "lanes": "int"})
        return (ints(f["warpsPerCTA"]), IntAttr(f["lanes"]))


@pytest.mark.parametrize("lanes", [32, 64])
def test_vendor_encoding_plugs_in(lanes):
    register_encodings([ToyMmaEncodingAttr])
    register_encodings([ToyMmaEncodingAttr])  # idempotent
    enc = f"#ttg.toy_mma<{{warpsPerCTA = [2, 2], lanes = {lanes}}}>"
    text = f"builtin.module {{\n tt.func @f(%x: tensor<64x64xf32, {enc}>) {{\n tt.return\n }}\n}}"
    m = parse_module(text)
    assert enc in print_module(m)
    attr = m.body.block.ops.first.function_type.inputs.data[0].encoding
    tab = coordinates(attr, (64, 64)).reshape(-1, 2)
    assert len({tuple(c) for c in tab}) == 64 * 64 == len(tab)  # exact cover, no duplicates
    assert total_elems_per_thread(attr, (64, 64)) == 64 * 64 // (4 * lanes)
    assert isinstance(attr.linear_layout((64, 64)), LinearLayout)
