#!/usr/bin/env bash
# Runs the three range benchmark binaries of one build and prints the ratio table.
# usage: bench/run_range_benchmarks.sh <build dir> <output dir>
set -euo pipefail
build=$1 out=$2
mkdir -p "$out"
args=(--benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_min_time=0.2)
for b in bench_range bench_range_recorder bench_range_disabled; do
  "$build/bench/$b" "${args[@]}" --benchmark_format=json --benchmark_out="$out/$b.json" >/dev/null
done
python3 "$(dirname "$0")/summarize.py" "no tool=$out/bench_range.json" \
  "Recorder attached=$out/bench_range_recorder.json" "disabled=$out/bench_range_disabled.json"
