"""autotune / heuristics over a fake kernel that records launches and sleeps per config."""
from __future__ import annotations

import time

import numpy as np
import pytest

from tritium.runtime.autotuner import Autotuner, Config, Heuristics, autotune, heuristics
from tritium.runtime.interface import KernelInterface

# Sleep per BLOCK value: 64 is the fastest.
DELAY = {16: 0.004, 32: 0.002, 64: 0.0005, 128: 0.003}


class FakeKernel(KernelInterface):
    arg_names = ["x", "out", "n", "BLOCK"]

    def __init__(self):
        self.calls = []

    def run(self, *args, grid=None, warmup=False, **kwargs):
        named = dict(zip(self.arg_names, args), **kwargs)
        self.calls.append(dict(named))
        time.sleep(DELAY.get(named.get("BLOCK"), 0))
        out = named.get("out")
        if out is not None:
            out += 1  # accumulates, so benchmarking without reset would be visible
        return named


def quick_bench(fn, quantiles):
    # three timed runs are enough to tell sleeps of 0.5 ms and 2 ms apart
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return [min(times)] * len(quantiles)


CONFIGS = [Config({"BLOCK": b}, num_warps=w) for b, w in ((16, 2), (32, 4), (64, 4), (128, 8))]


def make(**kw):
    k = FakeKernel()
    return k, autotune(CONFIGS, key=["n"], do_bench=quick_bench, **kw)(k)


def test_config_all_kwargs_and_identity():
    c = Config({"BLOCK": 8}, num_warps=2, maxnreg=None)
    assert c.all_kwargs() == {"BLOCK": 8, "num_warps": 2, "num_ctas": 1, "num_stages": 3}
    assert Config({"BLOCK": 8}, num_warps=2) == c and len({c, Config({"BLOCK": 8}, num_warps=2)}) == 1
    assert Config({"BLOCK": 8}, maxnreg=128).all_kwargs()["maxnreg"] == 128
    assert str(c).startswith("BLOCK: 8, num_warps: 2")


def test_picks_fastest_and_caches_per_key():
    k, tuned = make()
    x = np.zeros(4, dtype=np.float32)
    tuned[(1,)](x, None, 100)
    assert tuned.best_config.kwargs == {"BLOCK": 64}
    assert set(tuned.configs_timings) == set(CONFIGS)
    assert list(tuned.cache) == [(100, "float32")]
    bench_calls = len(k.calls)
    assert bench_calls == 4 * 3 + 1  # every config timed 3 times, then the real launch
    assert k.calls[-1]["BLOCK"] == 64 and k.calls[-1]["num_warps"] == 4

    tuned[(1,)](x, None, 100)  # same key: no benchmarking
    assert len(k.calls) == bench_calls + 1
    tuned[(1,)](x, None, 200)  # new key: benchmarks again
    assert len(k.calls) == 2 * bench_calls + 1
    tuned[(1,)](x.astype(np.float64), None, 100)  # the dtype of array arguments is part of the key
    assert set(tuned.cache) == {(100, "float32"), (200, "float32"), (100, "float64")}


def test_prune_configs_by():
    seen = {}

    def early(configs, nargs, **kwargs):
        seen["nargs"] = sorted(nargs)
        return [c for c in configs if c.kwargs["BLOCK"] != 64]

    def perf_model(**kw):
        return {16: 3, 32: 1, 128: 2}[kw["BLOCK"]]

    k, tuned = make(prune_configs_by={"early_config_prune": early, "perf_model": perf_model, "top_k": 2})
    tuned[(1,)](np.zeros(1), None, 7)
    assert seen["nargs"] == ["n", "out", "x"]
    assert {c.kwargs["BLOCK"] for c in tuned.configs_timings} == {32, 128}
    assert tuned.best_config.kwargs == {"BLOCK": 32}


def test_reset_to_zero_and_restore_value():
    k, tuned = make(reset_to_zero=["out"])
    out = np.full(3, 5.0)
    tuned[(1,)](np.zeros(1), out, 1)
    assert out.tolist() == [1.0, 1.0, 1.0]  # zeroed after the benchmarks, then one real launch

    k, tuned = make(restore_value=["out"])
    out = np.full(3, 5.0)
    tuned[(1,)](np.zeros(1), out, 1)
    assert out.tolist() == [6.0, 6.0, 6.0]  # every benchmark run was undone


def test_conflicting_kwargs_are_rejected():
    _, tuned = make()
    with pytest.raises(ValueError, match="BLOCK given at the call site but also set by the autotune configs"):
        tuned[(1,)](np.zeros(1), None, 1, BLOCK=32)


def test_bad_key_name():
    with pytest.raises(ValueError, match="key names m, which are not parameters"):
        autotune(CONFIGS, key=["m"])(FakeKernel())


def test_single_config_is_not_benchmarked():
    k = FakeKernel()
    tuned = autotune([Config({"BLOCK": 16})], key=["n"], do_bench=quick_bench)(k)
    tuned[(1,)](np.zeros(1), None, 3)
    assert len(k.calls) == 1 and tuned.cache == {}


def test_unfit_configs_are_skipped():
    class OutOfResources(Exception):
        pass

    class Picky(FakeKernel):
        def run(self, *args, **kwargs):
            if kwargs.get("BLOCK") == 64:
                raise OutOfResources("shared memory")
            return super().run(*args, **kwargs)

    tuned = autotune(CONFIGS, key=["n"], do_bench=quick_bench)(Picky())
    tuned[(1,)](np.zeros(1), None, 3)
    assert tuned.best_config.kwargs == {"BLOCK": 32}
    assert tuned.configs_timings[CONFIGS[2]] == [float("inf")] * 3


def test_heuristics_compute_constexpr_and_stack_with_autotune():
    k = FakeKernel()
    h = heuristics({"BLOCK": lambda a: 16 if a["n"] < 100 else 128})(k)
    assert isinstance(h, Heuristics) and h.arg_names == FakeKernel.arg_names
    h[(1,)](None, None, 10)
    h[(1,)](None, None, 1000)
    assert [c["BLOCK"] for c in k.calls] == [16, 128]

    k = FakeKernel()
    stacked = autotune([Config({}, num_warps=2), Config({}, num_warps=8)], key=["n"], do_bench=quick_bench)(
        heuristics({"BLOCK": lambda a: a["n"] // 2})(k))
    assert isinstance(stacked, Autotuner)
    stacked[(1,)](None, None, 64)
    assert {c["BLOCK"] for c in k.calls} == {32} and k.calls[-1]["num_warps"] in (2, 8)


def test_cache_results_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TRITIUM_ALWAYS_COMPILE", raising=False)
    runs = []
    for _ in range(2):
        k = FakeKernel()
        k.cache_key = "source-hash-1"
        tuned = autotune(CONFIGS, key=["n"], do_bench=quick_bench, cache_results=True)(k)
        tuned[(1,)](np.zeros(1), None, 5)
        runs.append(len(k.calls))
        assert tuned.best_config.kwargs == {"BLOCK": 64}
    assert runs == [13, 1]  # the second process-equivalent reused the stored choice
