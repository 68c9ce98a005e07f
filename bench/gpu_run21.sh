#!/bin/bash
# One device call (session 21): install, conformance on the nvidia backend, the sm_80 code through
# PTX JIT, the GPU tests, the launch row, the persistent matmul (host descriptors). Logs to $OUT.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . -e plugins/nvidia 2>&1 | tail -2
timeout 200 python3 -m conformance --backend nvidia -j 14 > "$OUT/conf.log" 2>&1
echo "conformance exit $?"; grep -E "TOTAL|failed" "$OUT/conf.log" | tail -8
timeout 120 python3 bench/check_sm80_ptx.py 2>&1 | tail -12
timeout 200 python3 -m pytest -q -x -n 8 -p no:cacheprovider plugins/nvidia/tests/test_nvidia_jit_gpu.py plugins/nvidia/tests/test_nvidia_driver_gpu.py plugins/nvidia/tests/test_nvidia_compat_gpu.py plugins/nvidia/tests/test_nvidia_tma_gpu.py 2>&1 | tail -4
timeout 120 python3 bench/bench_nvidia.py --launch-only 2>&1 | tail -14
timeout 150 python3 bench/bench_persistent.py --sizes 4096 --dtypes fp16 2>&1 | tail -14
