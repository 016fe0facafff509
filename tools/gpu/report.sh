#!/usr/bin/env bash
# The report (issue 7) on the GPU machine. Builds nothing: expects the build directory carried
# (NSIGHTKIT_GPU_BUILD, default build-gpu) and OUT (run-all.sh sets both). Steps:
#   1. the report's tests (GPU ones included) and its benchmark (CPU-only and GPU-event ranges)
#   2. examples/report_gpu as is: the table, the per-path CSV, the trace
#   3. the same program under ncu (every kernel's gpu__time_duration, renamed after its innermost
#      NVTX range), and once with --nvtx-include selecting model/encoder
#   4. compare_report_ncu.py: each path's GPU time in the report vs the sum of its kernels in ncu
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${NSIGHTKIT_GPU_BUILD:-$root/build-gpu}
: "${OUT:?set OUT to the output directory}"
out="$OUT/report"
mkdir -p "$out"
exe="$build/examples/report_gpu/report_gpu"
export LD_LIBRARY_PATH="$build/carry-lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

ctest --test-dir "$build" -R 'report' --output-on-failure >"$out/ctest.txt" 2>&1
tail -4 "$out/ctest.txt"
if [ -x "$build/bench/bench_report" ]; then
  "$build/bench/bench_report" --benchmark_min_time=0.3 >"$out/bench_report.txt" 2>&1
  grep -E '^BM_' "$out/bench_report.txt"
fi

"$exe" --csv "$out/report.csv" --trace "$out/trace.json" --kernels "$out/kernels.csv" >"$out/table.txt" 2>&1
echo "report_gpu exited $?"; cat "$out/table.txt"
python3 "$root/tests/check_trace.py" "$out/trace.json" 2>&1 | tee "$out/check_trace.txt"

if ! command -v ncu >/dev/null; then echo "ncu not found on PATH: no comparison"; exit 1; fi
ncu --clock-control none --nvtx --print-nvtx-rename kernel --metrics gpu__time_duration.sum --csv \
  "$exe" --quiet --csv /dev/null >"$out/ncu.csv" 2>"$out/ncu.stderr"
echo "ncu (all kernels) exited $?: $(grep -c gpu__time_duration "$out/ncu.csv") kernel rows"
ncu --clock-control none --nvtx --nvtx-include "nsightkit@model/encoder/" --metrics gpu__time_duration.sum --csv \
  "$exe" --quiet --csv /dev/null >"$out/ncu_encoder.csv" 2>"$out/ncu_encoder.stderr"
echo "ncu (nsightkit@model/encoder/) exited $?: $(grep -c gpu__time_duration "$out/ncu_encoder.csv") kernel rows"

python3 "$root/tools/gpu/compare_report_ncu.py" --report "$out/report.csv" --ncu "$out/ncu.csv" \
  --kernels "$out/kernels.csv" --subtree "model/encoder=$out/ncu_encoder.csv" 2>&1 | tee "$out/comparison.txt"
