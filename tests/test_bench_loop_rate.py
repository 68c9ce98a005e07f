"""bench/bench_loop_rate.py's arithmetic: the least-squares line and the config spelling."""
import importlib.util
import os
import sys

import pytest

pytest.importorskip("torch", reason="the benchmark module imports torch")
BENCH = os.path.join(os.path.dirname(__file__), "..", "bench")


@pytest.fixture(scope="module")
def loop_rate():
    sys.path.insert(0, BENCH)
    try:
        spec = importlib.util.spec_from_file_location("bench_loop_rate", os.path.join(BENCH, "bench_loop_rate.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.path.remove(BENCH)


def test_fit_recovers_fixed_cost_and_rate(loop_rate):
    # t = 17.5 us + 42.25 us per 1000 K, sampled at the benchmark's K values
    points = [(k, 17.5 + 0.04225 * k) for k in (1024, 2048, 4096, 8192)]
    fixed, per_1000 = loop_rate.fit(points)
    assert fixed == pytest.approx(17.5)
    assert per_1000 == pytest.approx(42.25)


def test_fit_is_least_squares_not_end_points(loop_rate):
    # the middle points sit 1 us above the line through the ends: the fit moves towards them
    points = [(0, 0.0), (1000, 11.0), (2000, 21.0), (3000, 30.0)]
    fixed, per_1000 = loop_rate.fit(points)
    assert fixed == pytest.approx(0.5)
    assert per_1000 == pytest.approx(10.0)


@pytest.mark.parametrize("text,cfg", [("128x256x64w8s3", (128, 256, 64, 8, 8, 3)),
                                      ("256x128x128w8s4", (256, 128, 128, 8, 8, 4)),
                                      ("64x64x32w4s2", (64, 64, 32, 8, 4, 2))])
def test_config_spelling(loop_rate, text, cfg):
    assert loop_rate.parse_config(text) == cfg


def test_every_default_config_parses(loop_rate):
    for texts in loop_rate.DEFAULT_CONFIGS.values():
        for text in texts.split(","):
            bm, bn, bk, group, warps, stages = loop_rate.parse_config(text)
            assert bm * bn * bk > 0 and warps in (4, 8) and stages >= 2
