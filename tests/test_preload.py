"""``JITFunction.preload(specialization_data)``: the JSON text ``knobs.runtime.jit_cache_hook``
receives rebuilds the compiled kernel; it lands in the kernel's cache so a later launch of that
specialization compiles nothing, and that launch computes the right thing."""
import json

import numpy as np
import pytest
import torch

import tritium
import tritium.language as tl


@tritium.jit
def _scale_kernel(x_ptr, y_ptr, n, pair, BLOCK: tl.constexpr, OUT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.static_assert(pair[1][0] == 3)
    tl.store(y_ptr + offs, (x * pair[0] + pair[1][0]).to(OUT), mask=mask)


@tritium.jit
def _other_kernel(x_ptr):
    pass


@pytest.fixture
def hooks(monkeypatch):
    """Records the specialization data of every compile the JIT announces."""
    seen = []

    def hook(*args, **kwargs):
        seen.append(kwargs["compile"]["specialization_data"])
    monkeypatch.setattr(tritium.knobs.runtime, "jit_cache_hook", hook)
    return seen


def _device():
    return "cuda" if torch.cuda.is_available() else "cpu"


def _launch(x, y, n, factor, block, out_dtype, **opts):
    return _scale_kernel[(triton_cdiv(n, block),)](x, y, n, (factor, (tl.constexpr(3),)), BLOCK=block,
                                                    OUT=out_dtype, **opts)


def triton_cdiv(a, b):
    return (a + b - 1) // b


@pytest.mark.parametrize("opts", [{}, {"num_warps": 2}])
def test_preload_fills_the_cache_a_launch_uses(hooks, opts):
    dev = _device()
    n = 100
    x = torch.randn(n, device=dev)
    y = torch.full((n,), float("nan"), device=dev, dtype=torch.float16)
    _scale_kernel.kernel_cache.clear()
    _launch(x, y, n, 2.5, 32, tl.float16, **opts)
    assert len(hooks) == 1
    data = hooks[0]
    first = next(iter(_scale_kernel.kernel_cache.values()))

    _scale_kernel.kernel_cache.clear()
    kernel = _scale_kernel.preload(data)
    assert kernel is not None and kernel.hash == first.hash
    assert len(hooks) == 2  # preload announces its compile as a launch does

    # same specialization, fresh values: no compile, the right result
    x = torch.randn(n, device=dev)
    y = torch.full((n,), float("nan"), device=dev, dtype=torch.float16)
    _launch(x, y, n, -1.75, 32, tl.float16, **opts)
    assert len(hooks) == 2
    ref = (x.cpu().numpy().astype(np.float32) * np.float32(-1.75) + np.float32(3)).astype(np.float16)
    np.testing.assert_array_equal(y.cpu().numpy(), ref)

    # another specialization still compiles
    _launch(x, y, n, 2.0, 64, tl.float16, **opts)
    assert len(hooks) == 3


def test_preload_after_warmup_gives_the_same_kernel(hooks):
    dev = _device()
    x = torch.randn(64, device=dev)
    y = torch.empty(64, device=dev)
    _scale_kernel.kernel_cache.clear()
    warm = _scale_kernel.warmup(x, y, 64, (2, (tl.constexpr(3),)), BLOCK=64, OUT=tl.float32, grid=(1,))
    record = json.loads(hooks[-1])
    assert record["name"].endswith("_scale_kernel")
    assert record["signature"]["pair"] == ["i32", ["constexpr"]]
    _scale_kernel.kernel_cache.clear()
    pre = _scale_kernel.preload(hooks[-1])
    assert pre.hash == warm.hash
    # a second warmup of that specialization finds it
    count = len(hooks)
    again = _scale_kernel.warmup(x, y, 64, (2, (tl.constexpr(3),)), BLOCK=64, OUT=tl.float32, grid=(1,))
    assert again is pre and len(hooks) == count


def test_preload_checks_the_kernel_name(hooks):
    dev = _device()
    x = torch.randn(64, device=dev)
    _scale_kernel.kernel_cache.clear()
    _scale_kernel.warmup(x, x, 64, (2, (tl.constexpr(3),)), BLOCK=64, OUT=tl.float32, grid=(1,))
    with pytest.raises(RuntimeError, match=r"Specialization data is for .*_scale_kernel but trying to preload for "
                                           r".*_other_kernel"):
        _other_kernel.preload(hooks[-1])


def test_preload_respects_a_hook_that_skips_the_compile(hooks, monkeypatch):
    dev = _device()
    x = torch.randn(64, device=dev)
    _scale_kernel.kernel_cache.clear()
    _scale_kernel.warmup(x, x, 64, (2, (tl.constexpr(3),)), BLOCK=64, OUT=tl.float32, grid=(1,))
    data = hooks[-1]
    _scale_kernel.kernel_cache.clear()
    monkeypatch.setattr(tritium.knobs.runtime, "jit_cache_hook", lambda *a, **k: True)
    assert _scale_kernel.preload(data) is None
    assert len(_scale_kernel.kernel_cache) == 0
