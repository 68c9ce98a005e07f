"""End to end: ``@tritium.jit`` kernels compiled by the frontend and run on the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

triton = pytest.importorskip("tritium")
if not hasattr(triton, "jit"):
    pytest.skip("the frontend (tritium.jit) is not available", allow_module_level=True)
tl = pytest.importorskip("tritium.language")


@triton.jit
def _scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


@triton.jit
def _row_softmax(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


@triton.jit
def _histogram(keys_ptr, bins_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    k = tl.load(keys_ptr + offs, mask=offs < n)
    tl.atomic_add(bins_ptr + k, 1, mask=offs < n)


@triton.jit
def _oob(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def _on_interpreter(monkeypatch):
    monkeypatch.setenv("TRITIUM_BACKEND", "interpreter")


def test_jit_scale_add(monkeypatch):
    _on_interpreter(monkeypatch)
    rng = np.random.default_rng(7)
    n = 777
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    _scale_add[(triton.cdiv(n, 128),)](x, y, out, n, 1.5, BLOCK=128)
    np.testing.assert_allclose(out, np.float32(1.5) * x + y, rtol=1e-6)


def test_jit_softmax(monkeypatch):
    _on_interpreter(monkeypatch)
    x = np.random.default_rng(8).standard_normal((13, 100)).astype(np.float32)
    out = np.zeros_like(x)
    _row_softmax[(13,)](out, x, 100, BLOCK=128)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_jit_histogram_with_atomics(monkeypatch):
    _on_interpreter(monkeypatch)
    keys = np.random.default_rng(9).integers(0, 10, 5000, dtype=np.int32)
    bins = np.zeros(10, np.int32)
    _histogram[(triton.cdiv(5000, 256),)](keys, bins, 5000, BLOCK=256)
    np.testing.assert_array_equal(bins, np.bincount(keys, minlength=10))


def test_jit_out_of_bounds_points_at_the_source_line(monkeypatch):
    _on_interpreter(monkeypatch)
    from tritium.backends.interpreter import InterpreterError
    x, out = np.ones(100, np.float32), np.zeros(128, np.float32)
    with pytest.raises(InterpreterError, match=r"test_interp_jit.py:\d+.*program id \(3, 0, 0\).*element offset 100"):
        _oob[(4,)](x, out, BLOCK=32)


def _patched(template, replace: dict):
    """What Triton's own tests do to vary a kernel: its source edited and exec'd (no file)."""
    import inspect
    import textwrap
    src = textwrap.dedent(inspect.getsource(template.fn))
    for old, new in replace.items():
        src = src.replace(old, new)
    scope: dict = {}
    exec(src, globals(), scope)  # noqa: S102 - the test's point
    return scope[template.fn.__name__]


@triton.jit
def _clamp_low(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs), 0.5))


def test_a_kernel_defined_by_exec_of_edited_source_compiles_from_that_source(monkeypatch):
    _on_interpreter(monkeypatch)
    k = _patched(_clamp_low, {"tl.maximum": "tl.minimum"})
    assert "tl.minimum" in k.src and "tl.maximum" not in k.src
    x = np.random.rand(64).astype(np.float32)
    out = np.full(64, np.nan, np.float32)
    k[(1,)](x, out, BLOCK=64)
    np.testing.assert_array_equal(out, np.minimum(x, np.float32(0.5)))


def test_exec_source_recovery_takes_only_a_matching_definition():
    """A string that defines another function, or this one at another line, is not taken: the
    kernel then reports that its source cannot be read."""
    decoy = "@triton.jit\ndef other(x):\n    pass\n"  # noqa: F841 - found in this frame's locals
    scope: dict = {}
    exec(compile("\n\n@triton.jit\ndef lonely(x_ptr):\n    pass\n", "<string>", "exec"), globals(), scope)  # noqa: S102
    assert scope["lonely"].src == ""
    with pytest.raises(ValueError, match="cannot read the source of lonely"):
        scope["lonely"].parse()
