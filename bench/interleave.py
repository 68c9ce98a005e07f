"""Fair side-by-side timing: the two compilers' kernels are timed in alternation, never one after
the other.

A GPU under sustained load lowers its clock (on the H200: 1980 MHz idle, and one Triton matmul
config moved from 721 to 647 TFLOP/s between two runs), so whichever side is timed first wins a
sequential comparison.  :func:`interleaved` alternates the sides at every repetition, in the
order A, B, B, A, A, B, ... (:func:`slot_order` per pair of repetitions, the opening side changing
from round to round), so neighbouring runs of the two sides see the same clock: a power-capped
H200 moves its clock within a few milliseconds, faster than a slot of 20 repetitions, and slot-level
alternation left the same matmul config at 0.92 in one run and 1.08 in the next.  Each side's figure
is the median of its per-round medians, with the spread (min..max) beside it.

Each timed launch is GPU time: the L2 flush and a short GPU wait (``torch.cuda._sleep``) are
queued before the start event, so the host has issued the launch before the GPU reaches it.
Without the wait, a launch whose host time outran the flush (a 256 MB memset, about 65 us) left
the GPU idle inside the timed region. One launch's host time on the H200's host, medians: Tritium
11 us, Triton 30, ``torch.matmul`` 23; a slow moment of the host was enough: one run timed the
4096^3 fp16 matmul at 587 TFLOP/s for Triton and 607 for cuBLAS (Tritium 727), where the next,
with the wait, had 718 and 747 (Tritium 716). Launch cost is measured on its own
(``bench_nvidia.py``'s launch row, ``bench_persistent.py --launch-cost``).
:func:`host_line` prints what the run ran on, with the SM clock read before and after.
"""
from __future__ import annotations

import platform
import socket
import statistics
import subprocess
from dataclasses import dataclass

import torch


@dataclass
class Timing:
    median_ms: float
    low_ms: float
    high_ms: float
    rounds: list

    @property
    def spread(self) -> float:
        """(max - min) / median over the rounds: how much the figure moved within this run."""
        return (self.high_ms - self.low_ms) / self.median_ms if self.median_ms else float("nan")


_flush_buf = None


def _flush():
    global _flush_buf
    if _flush_buf is None:
        _flush_buf = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    _flush_buf.zero_()


#: the GPU wait queued before each timed launch, in clock cycles (about 100 us at 1980 MHz): longer
#: than any launch path's host time, so the launch is queued before the GPU gets to it
HEAD_START_CYCLES = 200_000


def time_once(fn, reps: int, flush_l2: bool = True) -> float:
    """Median milliseconds of ``reps`` runs of ``fn`` (CUDA events, L2 flushed before each; the
    launch's host time hidden behind a queued GPU wait, module docstring)."""
    times = []
    for _ in range(reps):
        if flush_l2:
            _flush()
        torch.cuda._sleep(HEAD_START_CYCLES)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def slot_order(names: list, rounds: int) -> list:
    """The ABBA schedule: round r visits ``names`` forwards then backwards, starting from the
    other end on odd rounds, so every side is timed first as often as last."""
    out = []
    for r in range(rounds):
        seq = list(names) if r % 2 == 0 else list(reversed(names))
        out.append(seq + list(reversed(seq)))
    return out


def search_order(candidates: list) -> list:
    """The order a config search times its candidates in: every candidate twice, the second pass in
    reverse, so each one's two slots average to the same position (a palindrome, as
    :func:`slot_order`'s rounds are) and a clock that drifts during the search favours none of them.
    ``candidates`` should alternate the sides (config by config), so both see the same clock."""
    return list(candidates) + list(reversed(candidates))


def interleaved(fns: dict, reps: int = 20, rounds: int = 3, warmup: int = 3, flush_l2: bool = True) -> dict:
    """``{name: Timing}`` for ``{name: callable}`` over ``rounds`` rounds (at least three) of about
    ``reps`` runs a side, the sides alternating run by run in ABBA order; each round's figure for a
    side is the median of its runs in that round."""
    rounds = max(3, rounds)
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    torch.cuda.synchronize()
    per_round = {n: [] for n in fns}
    names = list(fns)
    for r in range(rounds):
        times = {n: [] for n in fns}
        # per pair of repetitions the ABBA order; the side that opens changes with the round
        orders = slot_order(names if r % 2 == 0 else list(reversed(names)), max(1, (reps + 1) // 2))
        for order in orders:
            for n in order:
                times[n].append(time_once(fns[n], 1, flush_l2))
        for n, v in times.items():
            per_round[n].append(statistics.median(v))
    return {n: Timing(statistics.median(v), min(v), max(v), v) for n, v in per_round.items()}


def sm_clock_mhz() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,temperature.gpu",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=10).stdout
        return out.strip().splitlines()[0] if out.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown (no nvidia-smi)"


def host_line() -> str:
    props = torch.cuda.get_device_properties(0)
    versions = [f"torch {torch.__version__}"]
    try:
        import triton
        versions.append(f"triton {triton.__version__}")
    except ImportError:
        pass
    return (f"host {socket.gethostname()} ({platform.machine()}), GPU {props.name} with {props.multi_processor_count} SMs, "
            f"{', '.join(versions)}; SM clock, max, temperature: {sm_clock_mhz()}")


def ratio_cell(t: dict, a: str = "tritium", b: str = "triton") -> str:
    """``a``'s speed over ``b``'s (b's time / a's time) with the range the rounds allow."""
    if a not in t or b not in t:
        return "n/a"
    mid = t[b].median_ms / t[a].median_ms
    lo = t[b].low_ms / t[a].high_ms
    hi = t[b].high_ms / t[a].low_ms
    return f"{mid:.3f} [{lo:.2f}-{hi:.2f}]"
