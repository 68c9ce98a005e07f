#!/bin/bash
# One device call: install, GPU tests, the conformance suite on the nvidia backend, the benchmarks.
# Logs go to $OUT (conformance JSON/Markdown, bench log).  Run from the repository root.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . -e plugins/nvidia 2>&1 | tail -2
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/smi.txt"
timeout ${CONF_TIMEOUT:-330} python3 -m conformance --backend nvidia -j ${CONF_JOBS:-12} ${CONF_ARGS} \
    --json "$OUT/conf.json" --markdown "$OUT/conf.md" > "$OUT/conf.log" 2>&1
echo "conformance exit $?"; grep -E "^[a-z_]+ +[0-9]|TOTAL" "$OUT/conf.log" | tail -30
timeout ${BENCH_TIMEOUT:-200} python3 bench/bench_nvidia.py ${BENCH_ARGS} 2>&1 | tee "$OUT/bench.log" | tail -40
