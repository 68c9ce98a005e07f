"""Benchmarking and comparison helpers with Triton's signatures (``triton.testing``).

torch and numpy are imported inside the functions, never at module import.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Sequence

_RETURN_MODES = ("min", "max", "mean", "median", "all")
_cuda_torch: Any = None  # torch when CUDA is usable through it, False when not, None: not checked


def _torch_cuda() -> Any:
    global _cuda_torch
    if _cuda_torch is None:
        _cuda_torch = False
        try:
            import torch

            if torch.cuda.is_available():
                _cuda_torch = torch
        except Exception:  # an absent or broken torch just means host timing
            pass
    return _cuda_torch


def _quantiles(times: Sequence[float], qs: Sequence[float]) -> list[float]:
    """Linear interpolation between order statistics (what torch.quantile does)."""
    data = sorted(times)
    out = []
    for q in qs:
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantiles must lie in [0, 1], got {q}")
        pos = q * (len(data) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(data) - 1)
        out.append(data[lo] + (data[hi] - data[lo]) * (pos - lo))
    return out


def _summarize(times: list[float], quantiles: Sequence[float] | None, return_mode: str) -> Any:
    if quantiles is not None:
        ret = _quantiles(times, quantiles)
        return ret[0] if len(ret) == 1 else ret
    if return_mode == "all":
        return times
    return {"min": min, "max": max, "mean": statistics.mean, "median": statistics.median}[return_mode](times)


def do_bench(fn: Callable[[], Any], warmup: float = 25, rep: float = 100, grad_to_none: Sequence[Any] | None = None,
             quantiles: Sequence[float] | None = None, return_mode: str = "mean",
             synchronize: Callable[[], Any] | None = None) -> Any:
    """Time ``fn`` in milliseconds.

    The number of repetitions comes from a short estimate: about ``warmup`` ms of untimed calls,
    then about ``rep`` ms of timed ones.  With CUDA through torch each call is timed with CUDA
    events and the L2 cache is flushed before it; otherwise with ``time.perf_counter``, calling
    ``synchronize`` (e.g. a backend driver's) after ``fn`` so asynchronous launches are counted.
    """
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(_RETURN_MODES)}, got {return_mode!r}")
    torch = _torch_cuda()
    if torch:
        return _bench_cuda(torch, fn, warmup, rep, grad_to_none, quantiles, return_mode)
    sync = synchronize or (lambda: None)
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(5):
        fn()
    sync()
    estimate_ms = max((time.perf_counter() - start) * 1e3 / 5, 1e-6)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))
    for _ in range(n_warmup):
        fn()
    times = []
    for _ in range(n_repeat):
        _clear_grads(grad_to_none)
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return _summarize(times, quantiles, return_mode)


def _clear_grads(grad_to_none: Sequence[Any] | None) -> None:
    for x in grad_to_none or ():
        x.grad = None


def _bench_cuda(torch: Any, fn: Callable, warmup: float, rep: float, grad_to_none: Any,
                quantiles: Any, return_mode: str) -> Any:
    fn()
    torch.cuda.synchronize()
    # Writing a buffer larger than L2 between runs makes every run start with a cold cache.
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        flush.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate_ms = max(start.elapsed_time(end) / 5, 1e-6)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for s, e in zip(starts, ends):
        _clear_grads(grad_to_none)
        flush.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return _summarize([s.elapsed_time(e) for s, e in zip(starts, ends)], quantiles, return_mode)


def _to_numpy(x: Any) -> Any:
    import numpy as np

    if type(x).__module__.startswith("torch"):
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":  # numpy has no bfloat16
            x = x.float()
        return x.numpy()
    return np.asarray(x)


def assert_close(x: Any, y: Any, atol: float | Callable | None = None, rtol: float | Callable | None = None,
                 err_msg: str = "") -> None:
    """Assert ``|x - y| <= atol + rtol * |y|`` elementwise (NaNs equal), on numpy arrays, torch
    tensors or scalars; ``atol``/``rtol`` may be callables of ``x.dtype``.  Defaults as Triton:
    atol 1e-2, rtol 0."""
    import numpy as np

    if callable(atol):
        atol = atol(getattr(x, "dtype", None))
    if callable(rtol):
        rtol = rtol(getattr(x, "dtype", None))
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    xa, ya = _to_numpy(x), _to_numpy(y)
    if xa.size > 1 or ya.size > 1:
        np.testing.assert_allclose(xa, ya, atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)
        return
    if not np.allclose(xa, ya, atol=atol, rtol=rtol, equal_nan=True):
        raise AssertionError(f"{err_msg} {xa} is not close to {ya} (atol={atol}, rtol={rtol})".strip())


from .perf_report import Benchmark, Mark, perf_report  # noqa: E402,F401
