"""The benchmarks' kernel files (``bench/*.py``, which bind ``triton``/``tl`` on loading) as
modules of Tritium kernels, for tests that compile or run the benchmarks' own source."""
import os
import sys

import tritium
import tritium.language as tl

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench")


def bench_kernels(name: str, filename: str):
    """``bench/<filename>`` loaded as module ``name`` with Tritium bound (``kernel_files.load_kernels``)."""
    sys.path.insert(0, BENCH)
    try:
        from kernel_files import load_kernels
    finally:
        sys.path.remove(BENCH)
    return load_kernels(name, tritium, tl, filename)
