"""Tensor descriptors as Triton 3.6 has them: ``tritium.set_allocator``, descriptor values that
flow through tuples, loops and calls, their shape/strides/block_shape, gathers, scatters and
reductions through a descriptor, and the errors for bad descriptors (host and device)."""
import contextvars

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.runtime import _allocation
from tritium.tools.tensor_descriptor import TensorDescriptor


def _has_nvidia() -> bool:
    try:
        from tritium.hooks import manager
        manager.parse_target("cuda:90")
        return True
    except Exception:  # noqa: BLE001 - the plugin is not installed
        return False


def _cuda_device() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


# -- the allocator -------------------------------------------------------------------------------
def test_null_allocator_says_to_call_set_allocator():
    with pytest.raises(RuntimeError, match=r"set_allocator"):
        _allocation.NullAllocator()(256, 128, 0)


def test_set_allocator_is_per_context_and_sizes_scratch_per_program():
    calls = []

    def alloc(size, align, stream):
        calls.append((size, align, stream))
        return np.empty(size, np.int8)

    def inside():
        triton.set_allocator(alloc)
        assert _allocation.get_allocator() is alloc
        buf = _allocation.allocate_scratch(128, 128, grid_size=6, num_ctas=2, stream=0)
        assert buf.size == 128 * 6 * 2
        assert _allocation.allocate_scratch(0, 128, grid_size=6, num_ctas=1, stream=0) is None

    contextvars.copy_context().run(inside)
    assert calls == [(1536, 128, 0)]
    # the setting stayed in that context
    assert isinstance(_allocation.get_allocator(), _allocation.NullAllocator)
    with pytest.raises(TypeError, match="callable"):
        triton.set_allocator(42)


@triton.jit
def _copy_kernel(x_ptr, z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(z_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    tl.static_assert(src.block_shape == [BM, BN])
    tl.static_assert(dst.block_shape == (BM, BN))
    assert src.strides[1] == 1  # strides are run-time values in a descriptor (as in Triton)
    assert src.shape[0] == M
    off = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    dst.store(off, src.load(off) + 1)


def test_interpreter_needs_no_allocator_and_never_calls_it():
    calls = []

    def alloc(size, align, stream):
        calls.append(size)
        raise AssertionError("the interpreter asked for scratch memory")

    def run():
        triton.set_allocator(alloc)
        x = np.random.rand(20, 45).astype(np.float32)
        z = np.full_like(x, np.nan)
        _copy_kernel[(3, 2)](x, z, 20, 45, BM=8, BN=32, backend="interpreter")
        np.testing.assert_allclose(z, x + 1)

    contextvars.copy_context().run(run)
    assert calls == []


# -- descriptor values -----------------------------------------------------------------------------
@triton.jit
def _loop_kernel(x_ptr, z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    d = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    acc = tl.zeros([BM, BN], tl.float32)
    for j in range(0, N, BN):
        assert isinstance(d, tl.tensor_descriptor)
        if j % (2 * BN) == 0:
            d = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
        acc += d.load([tl.program_id(0) * BM, j])
    out = tl.make_tensor_descriptor(z_ptr, [M, BN], [BN, 1], [BM, BN])
    out.store([tl.program_id(0) * BM, 0], acc)


def test_loop_carried_descriptor_sums_column_blocks():
    x = np.random.rand(24, 100).astype(np.float32)
    z = np.full((24, 32), np.nan, np.float32)
    _loop_kernel[(3,)](x, z, 24, 100, BM=8, BN=32)
    padded = np.zeros((24, 128), np.float32)
    padded[:, :100] = x
    np.testing.assert_allclose(z, padded.reshape(24, 4, 32).sum(1), rtol=1e-5)


@triton.jit
def _gather_scatter_kernel(x_ptr, idx_ptr, z_ptr, X, Y, y, BX: tl.constexpr, BY: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, [X, Y], [Y, 1], [1, BY])
    dst = tl.make_tensor_descriptor(z_ptr, [X, Y], [Y, 1], [1, BY])
    rows = tl.load(idx_ptr + tl.arange(0, BX))
    dst.scatter(src.gather(rows, y) * 2, rows, y)


def test_gather_then_scatter_rows_with_ragged_columns():
    X, Y, y = 32, 40, 16
    x = np.random.rand(X, Y).astype(np.float32)
    z = np.full_like(x, -1)
    idx = np.random.permutation(X)[:8].astype(np.int32)
    _gather_scatter_kernel[(1,)](x, idx, z, X, Y, y, BX=8, BY=32)
    want = np.full_like(x, -1)
    want[idx, y:] = x[idx, y:] * 2  # columns past Y are neither read nor written
    np.testing.assert_array_equal(z, want)


@triton.jit
def _reduce_kernel(x_ptr, z_ptr, M, N, KIND: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    d = tl.make_tensor_descriptor(z_ptr, [M, N], [N, 1], [BM, BN])
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    v = tl.load(x_ptr + rm * N + rn, mask=(rm < M) & (rn < N), other=0)
    if KIND == "add":
        d.atomic_add([0, 0], v)
    elif KIND == "max":
        d.atomic_max([0, 0], v)
    else:
        d.atomic_min([0, 0], v)


@pytest.mark.parametrize("kind,dtype", [("add", np.float32), ("max", np.int32), ("min", np.uint32)])
def test_reductions_through_a_descriptor(kind, dtype):
    M, N = 7, 20  # a ragged edge in both dimensions of the 8x32 block
    rng = np.random.default_rng(0)
    x = (rng.random((M, N)) * 100).astype(dtype)
    z = (rng.random((M, N)) * 100).astype(dtype)
    want = {"add": lambda: z + 2 * x, "max": lambda: np.maximum(z, x), "min": lambda: np.minimum(z, x)}[kind]()
    _reduce_kernel[(2,)](x, z, M, N, kind, BM=8, BN=32)
    np.testing.assert_allclose(z, want, rtol=1e-6)


def test_sixteen_bit_float_min_is_refused_without_native_reductions():
    x = np.ones((8, 32), np.float16)
    with pytest.raises(triton.CompilationError, match=r"atomic_min does not support fp16") as e:
        _reduce_kernel[(1,)](x, x.copy(), 8, 32, "min", BM=8, BN=32, backend="interpreter")
    assert "d.atomic_min([0, 0], v)" in str(e.value)


# -- errors ------------------------------------------------------------------------------------------
@triton.jit
def _narrow_kernel(x_ptr, BN: tl.constexpr):
    d = tl.make_tensor_descriptor(x_ptr, [16, 16], [16, 1], [8, BN])
    d.load([0, 0])


@triton.jit
def _nan_int_kernel(x_ptr):
    d = tl.make_tensor_descriptor(x_ptr, [16, 16], [16, 1], [8, 16], padding_option="nan")
    d.load([0, 0])


@triton.jit
def _store_shape_kernel(x_ptr):
    d = tl.make_tensor_descriptor(x_ptr, [16, 16], [16, 1], [8, 16])
    d.store([0, 0], tl.zeros([8, 8], tl.float32))


@triton.jit
def _gather_rows_kernel(x_ptr):
    d = tl.make_tensor_descriptor(x_ptr, [16, 16], [16, 1], [1, 16])
    d.gather(tl.arange(0, 4), 0)


@pytest.mark.parametrize("kernel,args,fragment,cause", [
    (_narrow_kernel, (np.zeros((16, 16), np.int32), 2),
     "Descriptor block shape must have at least 16 bytes in the last dimension, but got 2 * 4 = 8 bytes", ValueError),
    (_nan_int_kernel, (np.zeros((16, 16), np.int32),), "Padding option `nan` is not supported for integer blocks",
     ValueError),
    (_store_shape_kernel, (np.zeros((16, 16), np.float32),), "does not match the descriptor's block shape [8, 16]",
     ValueError),
    (_gather_rows_kernel, (np.zeros((16, 16), np.float32),), "descriptor gather must have at least 8 rows, but got [4]",
     ValueError),
])
def test_bad_device_descriptors_name_the_problem_and_line(kernel, args, fragment, cause):
    with pytest.raises(triton.CompilationError) as e:
        kernel[(1,)](*args)
    assert fragment in str(e.value)
    assert isinstance(e.value.__cause__, cause)
    assert str(e.value.lineno) in str(e.value) or e.value.lineno is not None


@pytest.mark.parametrize("kw,fragment", [
    ({"strides": [16]}, "rank mismatch"),
    ({"shape": [], "strides": [], "block_shape": []}, "rank must not be zero"),
    ({"shape": [1] * 6, "strides": [1] * 6, "block_shape": [1] * 6}, "rank cannot be more than 5"),
    ({"block_shape": [4, 12]}, "Shape element 1 must be a power of 2"),
    ({"strides": [1, 16]}, "Last dimension must be contiguous"),
    ({"shape": [0, 16]}, "shape must be positive"),
    ({"padding": "one"}, "Illegal value for padding"),
])
def test_bad_host_descriptors_are_refused_with_tritons_wording(kw, fragment):
    args = {"base": np.zeros((16, 16), np.float32), "shape": [16, 16], "strides": [16, 1], "block_shape": [4, 16]}
    args.update(kw)
    with pytest.raises(ValueError, match=fragment) as e:
        TensorDescriptor(**args)
    assert isinstance(e.value, AssertionError)  # what code written for Triton catches


def test_host_nan_padding_needs_floats_and_block_shape_takes_constexprs():
    with pytest.raises(AssertionError, match="only supported for floating point"):
        TensorDescriptor.from_tensor(np.zeros((16, 16), np.int32), [4, 16], padding="nan")
    d = TensorDescriptor.from_tensor(np.zeros((16, 16), np.float32), [tl.constexpr(4), tl.constexpr(16)], "nan")
    assert d.block_shape == [4, 16] and d.padding == "nan"


# -- NVIDIA ----------------------------------------------------------------------------------------
@pytest.mark.skipif(not _has_nvidia(), reason="needs the nvidia plugin (tritium-nvidia)")
@pytest.mark.parametrize("ty", ["fp16", "bf16"])
def test_sixteen_bit_float_max_compiles_to_a_cas_loop_for_sm90(ty):
    ck = triton.compile(_reduce_kernel, target="cuda:90", signature={"x_ptr": "*" + ty, "z_ptr": "*" + ty,
                                                                    "M": "i32", "N": "i32"},
                        constexprs={"KIND": "max", "BM": 8, "BN": 32})
    assert "cas.b16" in ck.asm["ptx"]


@pytest.mark.skipif(not _has_nvidia(), reason="needs the nvidia plugin (tritium-nvidia)")
def test_sixteen_bit_float_min_is_refused_for_sm80():
    with pytest.raises(triton.CompilationError, match="atomic_min does not support fp16"):
        triton.compile(_reduce_kernel, target="cuda:80", signature={"x_ptr": "*fp16", "z_ptr": "*fp16",
                                                                   "M": "i32", "N": "i32"},
                       constexprs={"KIND": "min", "BM": 8, "BN": 32})


@pytest.mark.skipif(not _cuda_device(), reason="needs a CUDA device")
@pytest.mark.parametrize("kind", ["min", "max"])
@pytest.mark.parametrize("ty", ["float16", "bfloat16"])
def test_sixteen_bit_float_minmax_on_the_gpu(kind, ty):
    import torch
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("16-bit float min/max through a descriptor needs sm_90+")
    M, N = 7, 20
    x = torch.randn((M, N), device="cuda").to(getattr(torch, ty))
    z = torch.randn((M, N), device="cuda").to(getattr(torch, ty))
    want = torch.minimum(z, x) if kind == "min" else torch.maximum(z, x)
    _reduce_kernel[(3,)](x, z, M, N, kind, BM=8, BN=32)
    torch.testing.assert_close(z, want, rtol=0, atol=0)
