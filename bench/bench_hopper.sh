#!/bin/bash
# Every Tritium-vs-Triton table of the Hopper work in one command (on the GPU machine, Tritium and
# Triton 3.6 installed): matmul fp16/bf16/fp8 and attention forward and backward (bench_matmul.py),
# every config of the tutorial matmul's list with the same config on both sides (its --parts configs),
# the persistent matmul with pointers, block pointers and tensor descriptors, host time included
# (bench_persistent.py), then the bandwidth kernels and the launch cost (bench_nvidia.py).  All
# interleaved A,B,B,A, medians of rounds with their range, clocks before and after, the host named.
# Five rounds for the matmul and attention tables, seven of 20 launches for the persistent one (its
# rounds moved by 10-20% within a run at three: it runs into the power cap, docs/performance.md).
#
#     bash bench/bench_hopper.sh            # SIZES / PSIZES override the matmul and persistent sizes
#
# With TRITON_TUTORIAL=PATH/06-fused-attention.py (Triton's tutorial file, from a Triton checkout)
# it also runs that tutorial, unedited, on both (bench_tutorial_attention.py).
set -o pipefail
cd "$(dirname "$0")/.." || exit 1
status=0
python3 bench/bench_matmul.py --quick --rounds 5 --sizes "${SIZES:-1024,4096,8192}" 2>&1 | grep -v "UserWarning\|run_backward" || status=1
python3 bench/bench_matmul.py --quick --rounds 5 --parts configs --sizes "${PSIZES:-4096,8192}" 2>&1 | grep -v "UserWarning" || status=1
python3 bench/bench_persistent.py --sizes "${PSIZES:-4096,8192}" --rounds 7 --reps 20 --launch-cost || status=1
python3 bench/bench_nvidia.py --quick || status=1
if [ -n "${TRITON_TUTORIAL:-}" ]; then
  python3 bench/bench_tutorial_attention.py "$TRITON_TUTORIAL" --rounds 5 || status=1
fi
exit $status
