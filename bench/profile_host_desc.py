"""Where the host time of a launch with host tensor descriptors goes: the persistent matmul of
``bench/persistent_kernels.py`` launched ``N`` times under cProfile, with Tritium's TMA path on
and off (``TRITIUM_TMA``); prints the costliest functions by own time and cumulative time.

    python bench/profile_host_desc.py [N]"""
from __future__ import annotations

import cProfile
import os
import pstats
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_files import load_kernels  # noqa: E402


def main(argv) -> int:
    import tritium
    import tritium.language as tl
    from tritium.tools.tensor_descriptor import TensorDescriptor
    n = int(argv[0]) if argv else 200
    k = load_kernels("pm_profile", tritium, tl, "persistent_kernels.py")
    size, (bm, bn, bk) = 1024, (128, 256, 64)
    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    c = torch.empty(size, size, device="cuda", dtype=torch.float16)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    da, db, dc = (TensorDescriptor.from_tensor(t, blk) for t, blk in ((a, [bm, bk]), (b, [bn, bk]), (c, [bm, bn])))
    meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, NUM_SMS=sms, num_warps=8, num_stages=3)
    for tma in ("1", "0"):
        os.environ["TRITIUM_TMA"] = tma
        launch = lambda: k.persistent_host_desc[(sms,)](da, db, dc, size, size, size, **meta)  # noqa: E731
        for _ in range(3):
            launch()
        torch.cuda.synchronize()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(n):
            launch()
        prof.disable()
        torch.cuda.synchronize()
        st = pstats.Stats(prof)
        print(f"==== TRITIUM_TMA={tma}: {st.total_tt / n * 1e6:.1f} us a launch under the profiler")
        st.sort_stats("tottime").print_stats(18)
        st.sort_stats("cumulative").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
