"""remove-layout-conversions carries a loaded tile's layout through ``tt.reshape`` and ``tt.trans``
(blocked where a blocked layout can say it, else ``#ttg.linear``), so a reshape / permute / reshape
chain renames registers and converts once, before the store (Triton's test_trans_reshape counts
one conversion).  The compiled TTGIR also runs on the host SIMT emulation of the lowering."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "conversion"))

import simt  # noqa: E402

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.hooks.types import GPUTarget  # noqa: E402
from tritium.ttgir.ir import parse_module  # noqa: E402
from tritium.ttgir.layouts import permuted_layout, reshaped_layout  # noqa: E402
from tritium.ttgir.encodings import BlockedEncodingAttr  # noqa: E402
from tritium.ttgir.linear_encoding import LinearEncodingAttr  # noqa: E402
from tritium.ttgir.pass_lists import make_ttgir  # noqa: E402


@triton.jit
def trans_reshape_kernel(in_base_ptr, out_base_ptr, IN_SHAPE0: tl.constexpr, IN_SHAPE1: tl.constexpr):
    in_block_ptr = tl.make_block_ptr(base=in_base_ptr, shape=(IN_SHAPE0, IN_SHAPE1), strides=(IN_SHAPE1, 1),
                                     offsets=(0, 0), block_shape=(IN_SHAPE0, IN_SHAPE1), order=(1, 0))
    x = tl.load(in_block_ptr)
    x = tl.reshape(x, (32, 4, 4, 2))
    x = tl.permute(x, (1, 2, 3, 0))
    x = tl.reshape(x, (IN_SHAPE0 * IN_SHAPE1, ))
    tl.store(out_base_ptr + tl.arange(0, IN_SHAPE0 * IN_SHAPE1), x)


def _compile(target):
    a = np.arange(1024, dtype=np.int32).reshape(32, 32)
    backend = "nvidia" if target.startswith("cuda") else "amd"
    return trans_reshape_kernel.warmup(a, np.zeros_like(a), 32, 32, grid=(1,), backend=backend, target=target)


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
def test_one_conversion(target):
    ttgir = _compile(target).asm["ttgir"]
    assert ttgir.count("ttg.convert_layout") == 1
    assert "-> tensor<1024xi32, #ttg.linear<" in ttgir  # the second reshape renames registers


@pytest.mark.parametrize("warp_size", [32, 64])
def test_runs_on_host_simt(warp_size):
    k = _compile("cuda:90")
    target = GPUTarget("cuda", 90, 32) if warp_size == 32 else GPUTarget("hip", "gfx942", 64)
    module = make_ttgir(parse_module(k.asm["ttir"]), target, {"num_warps": 4})
    a = np.arange(1024, dtype=np.int32).reshape(32, 32)
    out = np.full_like(a, -1)
    assert simt.run_ttgir(module, [a, out]) == 0
    np.testing.assert_array_equal(out, a.T)


def test_layout_helpers():
    b = BlockedEncodingAttr([1, 4], [4, 8], [4, 1], [1, 0])
    assert reshaped_layout(b, (32, 32), (32, 4, 4, 2)) == BlockedEncodingAttr([1, 1, 2, 2], [4, 4, 2, 1],
                                                                              [4, 1, 1, 1], [3, 2, 1, 0])
    p = permuted_layout(b, (1, 0))
    assert p == BlockedEncodingAttr([4, 1], [8, 4], [1, 4], [0, 1])
    lin = reshaped_layout(permuted_layout(reshaped_layout(b, (32, 32), (32, 4, 4, 2)), (1, 2, 3, 0)),
                          (4, 4, 2, 32), (1024,))
    assert isinstance(lin, LinearEncodingAttr)
    assert lin.register == ((32,), (64,), (16,)) and lin.warp == ((4,), (8,))
    assert permuted_layout(LinearEncodingAttr([[0, 1]], [[1, 0]], []), (1, 0)) == \
        LinearEncodingAttr([[1, 0]], [[0, 1]], [])
