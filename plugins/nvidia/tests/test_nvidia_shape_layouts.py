"""CPU-only: the shared memory cuda:90 kernels ask for around expand_dims / broadcast / reshape.

Triton's layouts make ``x[None, :, :]`` into a broadcast store and a reshape that keeps every
element in its thread free; a 32x32x32 store once asked for 288 KiB (more than a Hopper block may
have).  Pointer arguments carry ``tt.divisibility = 16``, as a launch with torch tensors gives."""
import pytest

import tritium
from conformance.cases import shapes_3d
from tritium.ttgir.encodings import BlockedEncodingAttr
from tritium.ttgir.layouts import linear_layout, reshaped_blocked

D16 = {"tt.divisibility": 16}


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))


def _shared(kernel, sig, constexprs, num_warps=4):
    k = tritium.compile(kernel, target="cuda:90", signature=sig, constexprs=constexprs, num_warps=num_warps,
                        attrs={name: D16 for name, t in sig.items() if t.startswith("*")})
    return k.metadata["shared"]


@pytest.mark.parametrize("num_warps", [1, 4])
def test_new_leading_axis_into_a_3d_store_needs_no_shared_memory(num_warps):
    sig = {"z_ptr": "*i32", "x_ptr": "*i32"}
    assert _shared(shapes_3d.none_first_kernel, sig, {"S": 32}, num_warps) == 0


@pytest.mark.parametrize("num_warps", [1, 4])
def test_new_trailing_axis_converts_only_the_2d_tile(num_warps):
    # the loaded 32x32 tile changes threads once (as in Triton); the 32x32x32 pointers do not
    sig = {"z_ptr": "*i32", "x_ptr": "*i32"}
    assert _shared(shapes_3d.none_last_kernel, sig, {"S": 32}, num_warps) <= 2 * 32 * 32 * 4


@pytest.mark.parametrize("kernel, constexprs", [
    (shapes_3d.reshape_1d_2d_kernel, {"N": 64, "R": 8, "C": 8}),
    (shapes_3d.reshape_1d_2d_kernel, {"N": 4096, "R": 64, "C": 64}),
    (shapes_3d.reshape_2d_3d_kernel, {"R0": 64, "C0": 32, "A": 16, "B": 8, "C": 16}),
    (shapes_3d.reshape_2d_3d_kernel, {"R0": 64, "C0": 64, "A": 16, "B": 16, "C": 16}),
])
def test_reshape_keeping_elements_in_their_threads_needs_no_shared_memory(kernel, constexprs):
    assert _shared(kernel, {"z_ptr": "*i32", "x_ptr": "*i32"}, constexprs) == 0


def test_reshaped_blocked_keeps_lanes_and_warps():
    src = BlockedEncodingAttr([1, 4], [4, 8], [4, 1], [1, 0])
    dst = reshaped_blocked(src, (64, 32), (16, 8, 16))
    assert dst == BlockedEncodingAttr([1, 1, 4], [1, 8, 4], [4, 1, 1], [2, 1, 0])
    a, b = linear_layout(src, (64, 32)), linear_layout(dst, (16, 8, 16))
    # the same (warp, lane, register) holds the same row-major element
    flat_a = (a.table() * [32, 1]).sum(-1)
    flat_b = (b.table() * [128, 16, 1]).sum(-1)
    per_thread_a = [sorted(row) for row in flat_a.reshape(-1, a.num_registers).tolist()]
    per_thread_b = [sorted(row) for row in flat_b.reshape(-1, b.num_registers).tolist()]
    assert per_thread_a == per_thread_b


def test_reshaped_blocked_declines_a_layout_no_blocked_one_matches():
    src = BlockedEncodingAttr([1, 4], [32, 1], [4, 1], [1, 0])
    assert reshaped_blocked(src, (128, 4), (2, 256)) is not None
    # flattened, lanes hold linear bits 0-1 and 5-7 with warps between: a 1-D blocked layout's lanes
    # are one run of bits, so the reshape must move data
    mixed = BlockedEncodingAttr([1, 1], [8, 4], [1, 4], [1, 0])
    assert reshaped_blocked(mixed, (8, 32), (256,)) is None
