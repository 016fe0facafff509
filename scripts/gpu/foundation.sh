#!/usr/bin/env bash
# Foundation on a GPU machine: every test labelled gpu plus the CUDA-using CPU tests, then the
# range benchmarks on this host. Builds nothing; run by run-all.sh, or alone with OUT and
# NSIGHTKIT_GPU_BUILD set. Logs: $OUT/foundation/. Exit status: the number of failed steps.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_init foundation
step --tail 15 ctest-gpu ctest --test-dir "$build" -L gpu --output-on-failure
step --tail 5 ctest-cuda ctest --test-dir "$build" \
  -R "test_cuda_check|test_range_cu|test_range:|test_testing|test_no_tool|test_disabled" --output-on-failure
step --tail 0 bench_range bash "$root/bench/run_range_benchmarks.sh" "$build" "$LOG_DIR/bench"
cat "$LOG_DIR/bench_range.log"
gpu_finish
