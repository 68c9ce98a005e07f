#!/bin/bash
# One device call for the launch-path work (issues #9 and #10), from the repository root:
#   bash plugins/nvidia/bench/gpu_launch_check.sh
# on nvidia-h100-x1 / nvidia-h200 (the two-GPU tests skip with a reason) or nvidia-h200-x2 (they
# run; the conformance suite is then also timed on one GPU against both).  Needs .whl/ (the xDSL
# wheel and its pure-Python dependencies); logs go to $OUT.
# Budget: about 6-7 minutes on one GPU.  Set CONF=0 to skip the conformance run.
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 TRITIUM_CACHE_DIR=/tmp/tritium-cache
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . -e plugins/nvidia 2>&1 | tail -2
nvidia-smi --query-gpu=index,name,clocks.sm --format=csv,noheader | tee "$OUT/smi.txt"
NGPU=$(nvidia-smi -L | wc -l)
summary=()

# 1. GPU tests touched by this work (device choice, streams, every argument kind, driver)
timeout 150 python3 -m pytest -q -p no:cacheprovider -rs plugins/nvidia/tests/test_nvidia_multigpu.py \
    plugins/nvidia/tests/test_nvidia_jit_gpu.py plugins/nvidia/tests/test_nvidia_driver_gpu.py \
    plugins/nvidia/tests/test_nvidia_multidevice_fake.py > "$OUT/pytest_gpu.log" 2>&1
rc=$?; tail -25 "$OUT/pytest_gpu.log"
summary+=("gpu tests: rc=$rc, $(grep -E '[0-9]+ (passed|failed)' "$OUT/pytest_gpu.log" | tail -1)")

# 2. compute-sanitizer memcheck over the multi-device and @jit GPU tests
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [ -n "$CS" ]; then
  timeout 200 "$CS" --tool memcheck --leak-check no --error-exitcode 99 --target-processes all \
      python3 -m pytest -q -p no:cacheprovider -x plugins/nvidia/tests/test_nvidia_multigpu.py \
      plugins/nvidia/tests/test_nvidia_jit_gpu.py > "$OUT/memcheck.log" 2>&1
  rc=$?; grep -E "ERROR SUMMARY|passed|failed|Invalid" "$OUT/memcheck.log" | tail -8
  summary+=("memcheck: rc=$rc (99 = memory errors), $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)")
else
  summary+=("memcheck: compute-sanitizer not found")
fi

# 3. launch overhead: the benchmark row (Tritium, Triton, torch.add, ratios) and the driver table
timeout 90 python3 bench/bench_nvidia.py --launch-only 2>&1 | tee "$OUT/launch.log" | tail -3
summary+=("$(grep 'host launch overhead' "$OUT/launch.log" | tail -1)")
timeout 90 python3 plugins/nvidia/bench/driver_check.py > "$OUT/driver_check.log" 2>&1
tail -16 "$OUT/driver_check.log"

# 4. conformance on the nvidia backend spread over every GPU (and on one GPU when there are two)
if [ "${CONF:-1}" = 1 ]; then
  t0=$(date +%s)
  timeout 240 python3 -m conformance --backend nvidia -j ${CONF_JOBS:-12} --devices all \
      --json "$OUT/conf_all.json" > "$OUT/conf_all.log" 2>&1
  rc=$?; t1=$(date +%s)
  summary+=("conformance --devices all ($NGPU GPU): rc=$rc in $((t1 - t0)) s: $(grep '^TOTAL' "$OUT/conf_all.log")")
  grep -A3 "spread over" "$OUT/conf_all.log"
  if [ "$NGPU" -ge 2 ]; then
    t0=$(date +%s)
    timeout 240 python3 -m conformance --backend nvidia -j ${CONF_JOBS:-12} --devices 0 \
        --json "$OUT/conf_one.json" > "$OUT/conf_one.log" 2>&1
    rc=$?; t1=$(date +%s)
    summary+=("conformance --devices 0: rc=$rc in $((t1 - t0)) s: $(grep '^TOTAL' "$OUT/conf_one.log")")
  fi
fi

echo; echo "================ summary ================"
printf '%s\n' "${summary[@]}"
