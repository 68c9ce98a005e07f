#!/bin/bash
# One device call after a merge: install, the NVIDIA GPU tests, compute-sanitizer memcheck over the
# launch tests, the whole conformance suite on nvidia, then the bandwidth/launch table.
# PART=matmul instead runs the tensor-core table (bench_matmul.py).  Logs go to $OUT.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . -e plugins/nvidia 2>&1 | tail -2
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
if [ "$PART" = matmul ]; then
  timeout ${MM_TIMEOUT:-400} python3 bench/bench_matmul.py ${MM_ARGS:---quick} > "$OUT/bench_matmul.log" 2>&1
  echo "bench_matmul exit $?"; tail -24 "$OUT/bench_matmul.log"
  exit 0
fi
timeout ${TEST_TIMEOUT:-200} python3 -m pytest -q -p no:cacheprovider -rs plugins/nvidia/tests -k "gpu or multigpu" \
    > "$OUT/pytest_gpu.log" 2>&1
echo "gpu tests exit $?"; grep -E "passed|failed|SKIPPED|FAILED|Error" "$OUT/pytest_gpu.log" | tail -12
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout ${MEMCHECK_TIMEOUT:-150} "$CS" --tool memcheck --leak-check no --error-exitcode 99 --target-processes all \
    python3 -m pytest -q -p no:cacheprovider -x plugins/nvidia/tests/test_nvidia_multigpu.py \
    plugins/nvidia/tests/test_nvidia_jit_gpu.py > "$OUT/memcheck.log" 2>&1
echo "memcheck exit $? (99 = memory errors)"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/memcheck.log" | tail -3
timeout ${CONF_TIMEOUT:-240} python3 -m conformance --backend nvidia -j ${CONF_JOBS:-12} --devices all \
    --json "$OUT/conf.json" --markdown "$OUT/conf.md" > "$OUT/conf.log" 2>&1
echo "conformance exit $?"; grep -E "TOTAL|: failed|: error" "$OUT/conf.log" | tail -12
timeout ${BW_TIMEOUT:-200} python3 bench/bench_nvidia.py --quick > "$OUT/bench_nvidia.log" 2>&1
echo "bench_nvidia exit $?"; tail -24 "$OUT/bench_nvidia.log"
