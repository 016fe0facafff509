#!/usr/bin/env bash
# Foundation on the GPU machine: every test labelled gpu plus the CUDA-using CPU tests, then the
# range benchmarks on this host. Expects NSIGHTKIT_GPU_BUILD and OUT (run-all.sh sets them).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${NSIGHTKIT_GPU_BUILD:-$root/build-gpu}
ctest --test-dir "$build" -L gpu --output-on-failure 2>&1 | tee "$OUT/ctest-gpu.txt" | tail -15
ctest --test-dir "$build" -R "test_cuda_check|test_range_cu|test_range:|test_testing|test_no_tool|test_disabled" \
  --output-on-failure 2>&1 | tail -5
mkdir -p "$OUT/bench"
bash "$root/bench/run_range_benchmarks.sh" "$build" "$OUT/bench" | tee "$OUT/bench_range.md"
