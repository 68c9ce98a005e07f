"""tritium.testing: do_bench on the host-timer path and assert_close."""
from __future__ import annotations

import time

import numpy as np
import pytest

from tritium import testing


@pytest.fixture
def host_timer(monkeypatch):
    monkeypatch.setattr(testing, "_cuda_torch", False)  # force the perf_counter path


def test_do_bench_measures_and_sizes_repeats(host_timer):
    calls = []

    def fn():
        calls.append(1)
        time.sleep(0.002)

    ms = testing.do_bench(fn, warmup=10, rep=40)
    assert 1.9 < ms < 6
    # 1 + 5 estimate calls, about 10/2 warmup and 40/2 timed ones
    assert 20 <= len(calls) <= 35


def test_do_bench_modes_quantiles_sync_and_grads(host_timer):
    synced = []

    class T:
        grad = "old"

    t = T()
    everything = testing.do_bench(lambda: None, warmup=1, rep=1, return_mode="all",
                                  synchronize=lambda: synced.append(1), grad_to_none=[t])
    assert isinstance(everything, list) and len(everything) >= 1 and synced and t.grad is None
    q = testing.do_bench(lambda: time.sleep(0.001), warmup=1, rep=5, quantiles=(0.5, 0.2, 0.8))
    assert len(q) == 3 and q[1] <= q[0] <= q[2]
    assert isinstance(testing.do_bench(lambda: None, warmup=1, rep=1, quantiles=[0.5]), float)
    with pytest.raises(ValueError, match="return_mode must be one of"):
        testing.do_bench(lambda: None, return_mode="avg")


def test_quantiles_interpolate():
    assert testing._quantiles([4, 1, 3, 2], [0, 0.5, 1]) == [1, 2.5, 4]


def test_assert_close_numpy():
    testing.assert_close(np.ones(4), np.ones(4) + 0.005)
    with pytest.raises(AssertionError):
        testing.assert_close(np.ones(4), np.ones(4) + 0.02)
    testing.assert_close(np.ones(4), np.ones(4) + 0.02, atol=0, rtol=0.05)
    testing.assert_close(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))
    testing.assert_close(1.0, 1.001)
    with pytest.raises(AssertionError, match="scalar 1.0 is not close to 2.0"):
        testing.assert_close(1.0, 2.0, err_msg="scalar")
    testing.assert_close(np.float32(1), 1.5, atol=lambda dtype: 1.0 if dtype == np.float32 else 0.0)


def test_assert_close_torch():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    testing.assert_close(torch.ones(3, dtype=torch.bfloat16), np.ones(3))
    with pytest.raises(AssertionError):
        testing.assert_close(torch.zeros(3), torch.ones(3))


def test_perf_report_prints_a_table_and_saves_a_plot(tmp_path, capsys, monkeypatch):
    import builtins
    import os
    import tritium.testing as tt

    @tt.perf_report(tt.Benchmark(x_names=["size"], x_vals=[2 ** i for i in range(4, 7)], x_log=True,
                                 line_arg="provider", line_vals=["a", "b"], line_names=["A", "B"],
                                 styles=[("blue", "-"), ("green", "--")], ylabel="GB/s", plot_name="vector-add",
                                 args={"scale": 2}))
    def bench(size, provider, scale):
        v = size * scale * (1 if provider == "a" else 2)
        return float(v), float(v - 1), float(v + 1)

    bench.run(print_data=True, show_plots=False)
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "vector-add:" and "size" in out and "A" in out and "128" in out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        real_import = None
    else:
        bench.run(save_path=str(tmp_path))
        assert (tmp_path / "vector-add.png").read_bytes()[:4] == b"\x89PNG"
        assert (tmp_path / "vector-add.csv").read_text().startswith("size,A,B")
        real_import = builtins.__import__

        def no_matplotlib(name, *a, **k):
            if name.startswith("matplotlib"):
                raise ImportError(name)
            return real_import(name, *a, **k)
        monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    import pytest
    with pytest.raises(ImportError, match="pip install matplotlib"):
        bench.run(save_path=str(tmp_path / "again"))
    assert os.path.isdir(tmp_path / "again")
