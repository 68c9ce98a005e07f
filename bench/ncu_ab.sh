#!/bin/bash
# Nsight Compute cycles (base clocks, caches flushed) of Tritium's and Triton's kernels under two
# environments of Tritium's, alternated A, B, B, A so that neither gets the warmer GPU:
#
#     bash bench/ncu_ab.sh "TRITIUM_ASSEMBLER=nvjitlink" "TRITIUM_ASSEMBLER=ptxas"     # the two assemblers
#
# Each side compiles into a cache folder of its own.  Per case and side the line gives Tritium's
# cycles then Triton's (the same Triton kernel both times: its spread is the measurement's).
# CASES overrides the list: "label|kernel regex|launches to skip|script and arguments;...".
set -u
A=${1:?environment A}; B=${2:?environment B}
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
cd "$(dirname "$0")/.." || exit 1
CASES=${CASES:-"attn d64 N1024|attn_fwd|6|bench/ncu_attention.py 64 1024 64 64 4 3 0;attn d64 N4096|attn_fwd|6|bench/ncu_attention.py 64 4096 64 64 4 3 0;attn d128 N4096|attn_fwd|6|bench/ncu_attention.py 128 4096 64 64 4 3 0;matmul fp16 4096|matmul_kernel|4|bench/ncu_matmul.py fp16 4096 128 256 64 8 3;persistent plain 4096|persistent|4|bench/ncu_persistent.py plain 4096"}
cycles() {  # env, kernel regex, skip, command...
  local envs=$1 k=$2 skip=$3; shift 3
  env $envs TRITIUM_CACHE_DIR="/tmp/ncu_ab_$(echo "$envs" | md5sum | cut -c1-8)" \
    timeout 180 "$NCU" --clock-control base --cache-control all -k "regex:$k" --launch-skip "$skip" --launch-count 2 \
    --metrics sm__cycles_elapsed.max python3 "$@" 2>&1 | grep -E "sm__cycles_elapsed.max|rror" \
    | sed -E 's/.*cycle +//; s/ +/ /g' | tr '\n' ' '
}
IFS=';' read -ra LIST <<< "$CASES"
for side in A B B A; do
  envs=$A; [ "$side" = B ] && envs=$B
  for c in "${LIST[@]}"; do
    IFS='|' read -r label k skip cmd <<< "$c"
    # shellcheck disable=SC2086
    echo "$side | $label | $(cycles "$envs" "$k" "$skip" $cmd)"
  done
done
