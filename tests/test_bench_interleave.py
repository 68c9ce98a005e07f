"""The benchmarks' interleaving schedule gives every side as many early as late slots."""
import importlib.util
import os
import sys

import pytest

pytest.importorskip("torch", reason="bench/interleave.py uses torch's CUDA events")
_spec = importlib.util.spec_from_file_location(
    "bench_interleave", os.path.join(os.path.dirname(__file__), "..", "bench", "interleave.py"))
interleave = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = interleave  # dataclasses look their module up there
_spec.loader.exec_module(interleave)


@pytest.mark.parametrize("names", [["tritium", "triton"], ["tritium", "triton", "cublas"]])
@pytest.mark.parametrize("rounds", [3, 4, 5])
def test_abba_balances_positions(names, rounds):
    order = interleave.slot_order(names, rounds)
    assert len(order) == rounds
    for seq in order:
        assert sorted(seq) == sorted(names * 2)        # each side twice per round
        assert seq == list(reversed(seq))              # A,B,B,A: a palindrome
    firsts = [seq[0] for seq in order]
    # the side that opens a round alternates, so no side is always timed on a cool GPU
    assert firsts[0] != firsts[1]
    position_sum = {n: sum(i for seq in order for i, m in enumerate(seq) if m == n) for n in names}
    assert len(set(position_sum.values())) == 1        # equal mean position for every side


def test_ratio_cell_range():
    t = {"tritium": interleave.Timing(1.0, 0.9, 1.1, []), "triton": interleave.Timing(1.2, 1.1, 1.3, [])}
    assert interleave.ratio_cell(t).startswith("1.200 [1.00-1.44]")
    assert interleave.ratio_cell({"tritium": t["tritium"]}) == "n/a"


def test_config_search_times_every_candidate_at_the_same_mean_position():
    cands = [(side, cfg) for cfg in ("a", "b", "c") for side in ("tritium", "triton")]
    order = interleave.search_order(cands)
    assert order[:len(cands)] == cands and order[len(cands):] == cands[::-1]
    assert order == order[::-1]                        # a palindrome
    mean = {c: sum(i for i, o in enumerate(order) if o == c) for c in cands}
    assert len(set(mean.values())) == 1                # no candidate only early or only late
