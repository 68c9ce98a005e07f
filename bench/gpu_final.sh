#!/bin/bash
# One device call after a merge: install, the NVIDIA GPU tests, the whole conformance suite on nvidia.
# PART=bench instead runs the two benchmark tables (tensor cores, then bandwidth + launch).  Logs: $OUT.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . -e plugins/nvidia 2>&1 | tail -2
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
if [ "$PART" = bench ]; then
  timeout ${MM_TIMEOUT:-330} python3 bench/bench_matmul.py ${MM_ARGS} > "$OUT/bench_matmul.log" 2>&1
  echo "bench_matmul exit $?"; tail -${MM_TAIL:-28} "$OUT/bench_matmul.log"
  timeout ${BW_TIMEOUT:-200} python3 bench/bench_nvidia.py --quick > "$OUT/bench_nvidia.log" 2>&1
  echo "bench_nvidia exit $?"; tail -22 "$OUT/bench_nvidia.log"
  exit 0
fi
timeout ${TEST_TIMEOUT:-200} python3 -m pytest -q -p no:cacheprovider plugins/nvidia/tests -k "gpu or GPU or multigpu" \
    > "$OUT/pytest_gpu.log" 2>&1
echo "gpu tests exit $?"; tail -15 "$OUT/pytest_gpu.log"
timeout ${CONF_TIMEOUT:-330} python3 -m conformance --backend nvidia -j ${CONF_JOBS:-12} \
    --json "$OUT/conf.json" --markdown "$OUT/conf.md" > "$OUT/conf.log" 2>&1
echo "conformance exit $?"; grep -E "^[a-z_]+ +[0-9]|TOTAL|\[nvidia\] [a-z_/-]+.*: (failed|error)" "$OUT/conf.log" | tail -40
