"""coalesce and remove-layout-conversions on a layer norm whose row pointer has no known alignment
(``X + row * stride``) beside aligned weight pointers: Triton's rules, checked on the TTGIR."""
import re

import pytest

import tritium as triton
import tritium.language as tl


@triton.jit
def layer_norm_rows(X, Y, W, B, stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.)
        tl.store(Y + cols, x * w + b, mask=mask)


SIG = {"X": "*fp32", "Y": "*fp32", "W": "*fp32", "B": "*fp32", "stride": "i32", "N": "i32"}


def _spt(line: str) -> str:
    return re.search(r"sizePerThread = \[(\d+)\]", line).group(1)


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
def test_loads_take_the_widest_connected_access_and_one_conversion_feeds_the_store(target):
    k = triton.compile(layer_norm_rows, target=target, signature=SIG, constexprs={"BLOCK": 1024},
                       attrs={n: {"tt.divisibility": 16} for n in ("X", "Y", "W", "B")}, stage="ttgir")
    ttgir = k.asm["ttgir"]
    loads = [ln for ln in ttgir.splitlines() if " tt.load " in ln]
    stores = [ln for ln in ttgir.splitlines() if " tt.store " in ln]
    # W and B are 16-byte aligned (4 fp32 a thread); X + row * stride is not, yet it is combined
    # with them, so its load takes their layout too (Triton's coalesce rule)
    assert len(loads) == 3 and {_spt(ln) for ln in loads} == {"4"}
    # the store keeps the width its own alignment allows, and the one conversion sits before it
    # (not three after the loads)
    assert len(stores) == 1 and _spt(stores[0]) == "1"
    assert ttgir.count("ttg.convert_layout") == 1
