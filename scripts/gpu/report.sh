#!/usr/bin/env bash
# The report on a GPU machine. Builds nothing: expects the build directory (NSIGHTKIT_GPU_BUILD,
# default build-gpu) and OUT (run-all.sh sets both). Steps:
#   1. the report's tests (GPU ones included) and its benchmark (CPU-only and GPU-event ranges)
#   2. examples/report_gpu as is: the table, the per-path CSV, the trace (checked by
#      tests/check_trace.py)
#   3. the same program under ncu (every kernel's gpu__time_duration, renamed after its innermost
#      NVTX range), and once with --nvtx-include selecting model/encoder
#   4. examples/report_gpu/ncu/compare_report_ncu.py: each path's GPU time in the report vs the
#      sum of its kernels in ncu
# Logs: $OUT/report/. Exit status: the number of failed steps.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_init report
out=$LOG_DIR
exe="$build/examples/report_gpu/report_gpu"

step --tail 4 ctest ctest --test-dir "$build" -R 'report' --output-on-failure
if [ -x "$build/bench/bench_report" ]; then
  step --tail 0 bench_report "$build/bench/bench_report" --benchmark_min_time=0.3
  grep -E '^BM_' "$out/bench_report.log" || true
else
  fail "$build/bench/bench_report not built"
fi

step --tail 0 report_gpu "$exe" --csv "$out/report.csv" --trace "$out/trace.json" --kernels "$out/kernels.csv"
cat "$out/report_gpu.log"
step check_trace python3 "$root/tests/check_trace.py" "$out/trace.json"

need_ncu || gpu_finish
# ncu's own output (the CSV) goes to --log-file; the program's output to the step's log.
step --tail 0 ncu_all ncu --clock-control none --nvtx --print-nvtx-rename kernel \
  --metrics gpu__time_duration.sum --csv --log-file "$out/ncu.csv" "$exe" --quiet --csv /dev/null
echo "ncu (all kernels): $(grep -c gpu__time_duration "$out/ncu.csv" || true) kernel rows"
step --tail 0 ncu_encoder ncu --clock-control none --nvtx --nvtx-include "nsightkit@model/encoder/" \
  --metrics gpu__time_duration.sum --csv --log-file "$out/ncu_encoder.csv" "$exe" --quiet --csv /dev/null
echo "ncu (nsightkit@model/encoder/): $(grep -c gpu__time_duration "$out/ncu_encoder.csv" || true) kernel rows"

step --tail 0 comparison python3 "$root/examples/report_gpu/ncu/compare_report_ncu.py" \
  --report "$out/report.csv" --ncu "$out/ncu.csv" --kernels "$out/kernels.csv" \
  --subtree "model/encoder=$out/ncu_encoder.csv"
cat "$out/comparison.log"
gpu_finish
