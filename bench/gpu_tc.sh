#!/bin/bash
# One device call for the tensor-core work: install, the matmul correctness sweep, the dot / tutorial /
# block-pointer conformance categories on nvidia, then the matmul + attention table against Triton.
# MODE=check stops after the conformance categories.  Logs go to $OUT.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . -e plugins/nvidia 2>&1 | tail -2
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
timeout ${CHECK_TIMEOUT:-150} python3 bench/bench_matmul.py --check 2>&1 | tee "$OUT/check.log" | tail -40
timeout ${CONF_TIMEOUT:-150} python3 -m conformance --backend nvidia -j ${CONF_JOBS:-12} \
    ${CONF_ARGS:---category dot --category tutorials --category block_ptr} \
    --json "$OUT/conf.json" > "$OUT/conf.log" 2>&1
echo "conformance exit $?"; grep -E "FAIL|ERROR|passed|failed" "$OUT/conf.log" | tail -25
[ "$MODE" = check ] && exit 0
timeout ${BENCH_TIMEOUT:-240} python3 bench/bench_matmul.py ${BENCH_ARGS} 2>&1 | tee "$OUT/bench.log" | tail -40
