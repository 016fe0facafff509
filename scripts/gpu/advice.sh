#!/usr/bin/env bash
# The report's advice on a GPU machine. Builds nothing (run-all.sh, or alone with OUT and
# NSIGHTKIT_GPU_BUILD set). Steps:
#   1. test_advice_gpu: small programs that each commit one mistake get the matching advice;
#   2. resnet_training as the data-loading story: the baseline settings (pageable memory, no
#      prefetch, the loader on the training thread) and the documented fixes (the defaults:
#      loader threads, pinned memory, prefetch), each with the report's table and JSON
#      (gpu=cupti, advice=on): the advice text and images/s of both go to $OUT/advice.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_init advice
dir=$LOG_DIR

step --tail 15 test_advice_gpu "$build/tests/test_advice_gpu"

resnet="$build/examples/resnet_training/resnet_training"
if [ ! -x "$resnet" ]; then
  fail "$resnet not built"
  gpu_finish
fi
common=(--device cuda --steps "${ADVICE_STEPS:-60}" --warmup 10)
step --tail 40 resnet-baseline "$resnet" "${common[@]}" --workers 0 --pageable --no-prefetch \
  --report "table=$dir/resnet-baseline.txt,json=$dir/resnet-baseline.json,gpu=cupti,advice=on"
step --tail 40 resnet-fixed "$resnet" "${common[@]}" \
  --report "table=$dir/resnet-fixed.txt,json=$dir/resnet-fixed.json,gpu=cupti,advice=on"
for run in baseline fixed; do
  say "== resnet $run: $(grep -h 'throughput:' "$dir/resnet-$run.log" || echo 'no throughput line')"
  if [ -f "$dir/resnet-$run.txt" ]; then
    sed -n '/^advice/,$p' "$dir/resnet-$run.txt" | tee -a "$SUMMARY"
  fi
done
gpu_finish
