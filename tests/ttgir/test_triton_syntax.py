"""Triton's spellings of TTGIR, before and after its late-2024 rename, and ``#ttg.linear``."""
import pytest
from xdsl.utils.exceptions import ParseError

from tritium.ttgir import BlockedEncodingAttr, LinearEncodingAttr, SliceEncodingAttr, SwizzledSharedEncodingAttr
from tritium.ttgir.ir import parse_module, print_module
from tritium.ttgir.triton_syntax import upgrade_triton_text


def test_upgrade_renames_every_old_spelling_but_messages():
    old = ('module attributes {"triton_gpu.num-warps" = 4 : i32, "triton_gpu.threads-per-warp" = 32 : i32} {\n'
           '%0 = triton_gpu.convert_layout %1 : tensor<4xf32, #triton_gpu.blocked<{}>>\n'
           '%2 = "triton_gpu.local_load"(%3) : (!tt.memdesc<4xf32, #triton_gpu.shared<{vec = 1}>, '
           '#triton_gpu.shared_memory>) -> tensor<4xf32>\n'
           'triton_nvidia_gpu.fence_async_shared\n'
           '%4 = arith.cmpi "sgt", %5, %6 : i32\n'
           'tt.assert %7, "triton_gpu.num-warps is wrong" : i1\n')
    new = upgrade_triton_text(old)
    assert '"ttg.num-warps" = 4' in new and '"ttg.threads-per-warp" = 32' in new
    assert "ttg.convert_layout" in new and "#ttg.blocked<" in new and '"ttg.local_load"(' in new
    assert "!ttg.memdesc<" in new and "#ttg.swizzled_shared<{vec = 1}>" in new and "#ttg.shared_memory" in new
    assert "ttng.fence_async_shared" in new and "arith.cmpi sgt, %5" in new
    assert '"triton_gpu.num-warps is wrong"' in new  # a message is text, not a name
    assert "triton_gpu" not in new.replace('"triton_gpu.num-warps is wrong"', "")
    assert upgrade_triton_text(new) == new


_KERNEL = """
#blocked = {blocked}
module attributes {{"{ns}.num-warps" = 4 : i32, "{ns}.num-ctas" = 1 : i32, "{ns}.threads-per-warp" = 32 : i32}} {{
  tt.func public @k(%arg0: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}) {{
    %0 = tt.make_range {{end = 64 : i32, start = 0 : i32}} : tensor<64xi32, #{ns}.slice<{{dim = 1, parent = #blocked}}>>
    %1 = tt.expand_dims %0 {{axis = 1 : i32}} : tensor<64xi32, #{ns}.slice<{{dim = 1, parent = #blocked}}>> -> tensor<64x1xi32, #blocked>
    %2 = {ns}.convert_layout %1 : tensor<64x1xi32, #blocked> -> tensor<64x1xi32, #{ns}.dot_op<{{opIdx = 0, parent = #blocked}}>>
    %3 = {ns}.local_alloc %1 : (tensor<64x1xi32, #blocked>) -> !{mem}.memdesc<64x1xi32, {shared}, #{ns}.shared_memory>
    tt.return
  }}
}}
"""

_LEGACY = dict(ns="triton_gpu", mem="tt",
               blocked="#triton_gpu.blocked<{sizePerThread=[1, 4], threadsPerWarp=[8, 4], warpsPerCTA=[4, 1], "
                       "order=[1, 0], CTAsPerCGA=[1, 1], CTASplitNum=[1, 1], CTAOrder=[0, 1]}>",
               shared="#triton_gpu.shared<{vec=1, perPhase=1, maxPhase=1, order=[0, 1], CTAsPerCGA=[1, 1], "
                      "CTASplitNum=[1, 1], CTAOrder=[0, 1], hasLeadingOffset = false}>")
_CURRENT = dict(ns="ttg", mem="ttg",
                blocked="#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], "
                        "order = [1, 0]}>",
                shared="#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0, 1]}>")


@pytest.mark.parametrize("spelling", [_LEGACY, _CURRENT], ids=["late-2024", "current"])
def test_both_spellings_parse_to_the_same_module(spelling):
    module = parse_module(_KERNEL.format(**spelling))
    assert module.attributes["ttg.num-warps"].value.data == 4
    assert module.attributes["ttg.threads-per-warp"].value.data == 32
    ops = list(module.walk())
    rng = next(op for op in ops if op.name == "tt.make_range")
    enc = rng.results[0].type.encoding
    assert isinstance(enc, SliceEncodingAttr) and isinstance(enc.parent, BlockedEncodingAttr)
    assert enc.parent.size_per_thread == (1, 4) and enc.parent.order == (1, 0)
    alloc = next(op for op in ops if op.name == "ttg.local_alloc")
    assert isinstance(alloc.results[0].type.encoding, SwizzledSharedEncodingAttr)
    assert {op.name for op in ops} >= {"ttg.convert_layout", "ttg.local_alloc"}
    assert "triton_gpu" not in print_module(module)


def test_shared_with_leading_offset_asks_for_nvmma_shared():
    text = _KERNEL.format(**dict(_LEGACY, shared=_LEGACY["shared"].replace("false", "true")))
    with pytest.raises(ParseError, match="nvmma_shared"):
        parse_module(text)


_LINEAR = ("#ttg.linear<{register = [[0, 1], [0, 2], [8, 0]], lane = [[0, 4], [0, 8], [1, 0], [2, 1], [4, 0]], "
           "warp = [[16, 0], [0, 0]], block = []}>")


def _linear(text=_LINEAR):
    module = parse_module(f"""
#l = {text}
module attributes {{"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32}} {{
  tt.func public @k(%a: !tt.ptr<f32>) {{
    %0 = tt.splat %a : !tt.ptr<f32> -> tensor<32x16x!tt.ptr<f32>, #l>
    tt.return
  }}
}}""")
    op = next(op for op in module.walk() if op.name == "tt.splat")
    return module, op.results[0].type.encoding


def test_linear_encoding_round_trips_and_is_its_bases():
    module, enc = _linear()
    assert isinstance(enc, LinearEncodingAttr)
    assert _LINEAR in print_module(module)
    ll = enc.linear_layout((32, 16))
    assert ll.register == ((0, 1), (0, 2), (8, 0)) and ll.lane[3] == (2, 1) and ll.warp == ((16, 0), (0, 0))
    assert not ll.is_additive  # the lane basis (2, 1) moves along both dimensions
    assert ll.free_masks() == {"register": 0, "lane": 0, "warp": 0b10}
    assert enc.warp_size == 32 and enc.num_warps == 4 and enc.order == (1, 0)
    # every element of the 32x16 tile is held, each by exactly two threads (the zero warp basis)
    owners = ll.owners()
    assert len(owners) == 32 * 16 and all(len(o) == 2 for o in owners.values())


def test_linear_encoding_fits_other_shapes():
    _, enc = _linear()
    bigger = enc.linear_layout((64, 16))  # wraps around in one more register
    assert bigger.register[-1] == (32, 0) and bigger.num_registers == 16
    smaller = enc.linear_layout((16, 16))  # the row-16 warp basis becomes a broadcast
    assert smaller.warp[0] == (0, 0)


@pytest.mark.parametrize("bad, message", [
    ("#ttg.linear<{register = [[0, 1]], lane = [[1]], warp = [], block = []}>", "rank"),
    ("#ttg.linear<{register = [], lane = [[1, 0]], warp = [], block = [[0, 1]]}>", "CTA"),
])
def test_linear_encoding_rejects(bad, message):
    with pytest.raises(Exception, match=message):
        _linear(bad)
