#!/usr/bin/env bash
# CUDA graphs on a GPU machine. Builds nothing (run-all.sh, or alone with OUT and
# NSIGHTKIT_GPU_BUILD set). Steps:
#   1. test_graph_gpu: recording diagnostics (cudaMalloc inside a module, an unjoined fork), replay
#      kernel counts per module equal to eager, replay busy time per module against eager;
#   2. bench_graph: a 50-kernel graph replayed with the report off and on (gpu=cupti), and the
#      same kernels launched eagerly; interleaved, 3 repetitions (JSON in $OUT/graphs);
#   3. detr_inference --cuda-graph at batch 1: eager and graph latency, identical outputs, the
#      per-module tables of both runs (JSON summaries report.eager.json / report.graph.json);
#   4. the same program, 1 eager iteration and 1 replay, under
#        ncu --nvtx --graph-profiling node --clock-control none --cache-control none
#      (every kernel of the eager forward with its NVTX stack, every kernel node of the replay):
#      the raw text for scripts/gpu/compare_graph_ncu.py, which maps the replay's kernels to the
#      eager kernels' module paths (same order, same names) and compares per-path times with the
#      report's graph run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_init graphs
dir=$LOG_DIR

step --tail 15 test_graph_gpu "$build/tests/test_graph_gpu"

if [ -x "$build/bench/bench_graph" ]; then
  step --tail 30 bench_graph "$build/bench/bench_graph" --benchmark_repetitions=3 \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
    --benchmark_out="$dir/bench_graph.json" --benchmark_out_format=json
else
  fail "bench_graph not built"
fi

exe="$build/examples/detr_inference/detr_inference"
if [ ! -x "$exe" ]; then
  fail "$exe not built"
  gpu_finish
fi
read -r -a extra <<<"${GRAPH_DETR_ARGS:---batch 1}"
step --tail 40 detr-graph "$exe" --device cuda --cuda-graph "${extra[@]}" --warmup 10 \
  --iterations 50 --report "json=$dir/report.json,table=$dir/table.txt,gpu=cupti"

if command -v ncu >/dev/null; then
  step --tail 5 --timeout 500 detr-graph-ncu ncu --nvtx --csv --print-nvtx-rename none \
    --graph-profiling node --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum "$exe" --device cuda --cuda-graph "${extra[@]}" \
    --warmup 0 --iterations 1 --quiet --report off
  cp "$dir/detr-graph-ncu.log" "$dir/ncu-detr-graph.csv"
  if [ -f "$root/scripts/gpu/compare_graph_ncu.py" ]; then
    step --tail 40 detr-graph-compare python3 "$root/scripts/gpu/compare_graph_ncu.py" \
      --report "$dir/report.graph.json" --ncu "$dir/ncu-detr-graph.csv" \
      --markdown "$dir/compare-graph.md"
  fi
else
  fail "ncu not found"
fi
gpu_finish
