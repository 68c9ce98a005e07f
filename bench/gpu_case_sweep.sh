#!/bin/bash
# Runs each case of the given categories in its own process with a time limit on the nvidia
# backend, one result line per case: finds cases that hang or crash without losing the others.
#   bench/gpu_case_sweep.sh CATEGORY... > log
per_case=${PER_CASE_TIMEOUT:-60}
args=()
for c in "$@"; do args+=(--category "$c"); done
python3 -m conformance --list "${args[@]}" | grep / | \
  xargs -P "${JOBS:-15}" -I{} sh -c "out=\$(timeout $per_case python3 -m conformance --backend nvidia -k '{}' 2>&1); \
    rc=\$?; line=\$(printf '%s\n' \"\$out\" | grep -E '^TOTAL' | head -1); \
    if [ \$rc -eq 124 ]; then echo 'TIMEOUT {}'; elif [ \$rc -ne 0 ]; then echo \"FAIL {} \$line\"; \
    printf '%s\n' \"\$out\" | grep -E 'failed:|Error' | head -3; else echo \"ok {} \$line\"; fi"
