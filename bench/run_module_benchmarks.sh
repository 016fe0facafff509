#!/usr/bin/env bash
# Runs the three module benchmark binaries of one build and prints the ratio table (module hooks
# against plain ranges of the same run; the issue's target: ModuleScope <= 1.3x ScopedRange with no
# tool attached).
# usage: bench/run_module_benchmarks.sh <build dir> <output dir>
set -euo pipefail
build=$1 out=$2
mkdir -p "$out"
args=(--benchmark_repetitions=7 --benchmark_report_aggregates_only=true --benchmark_min_time=0.2)
for b in bench_module bench_module_recorder bench_module_disabled; do
  env -u NVTX_INJECTION64_PATH "$build/bench/$b" "${args[@]}" --benchmark_format=json \
    --benchmark_out="$out/$b.json" >/dev/null
done
python3 "$(dirname "$0")/summarize_module.py" "no tool=$out/bench_module.json" \
  "Recorder attached=$out/bench_module_recorder.json" "disabled=$out/bench_module_disabled.json"
