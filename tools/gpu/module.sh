#!/usr/bin/env bash
# Module hooks on the GPU machine (builds nothing; run by tools/gpu/run-all.sh, or alone with OUT
# and NSIGHTKIT_GPU_BUILD set):
#   1. test_module_gpu (module tree around kernels, hooks timing modules with CUDA events);
#   2. for each "expect <filter> <count>" line that examples/module_tree prints, one
#      `ncu --clock-control none --nvtx --nvtx-include "<filter>"` run; the number of kernels ncu
#      profiled (one "<kernel>(...) (grid)x(block), Context N, Stream N, Device N, CC X.Y" header
#      per kernel; a stream named through NVTX may show its name) must equal <count>. Both module
#      domain set-ups: modules sharing the domain of the "step N" ranges, and modules in their own;
#   3. the module benchmarks (ratios against plain ranges of the same run).
# Logs: $OUT/module/. Exit status 1 when any check fails.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${NSIGHTKIT_GPU_BUILD:-$root/build-gpu}
OUT=${OUT:-$root/gpu-out}
log_dir="$OUT/module"
mkdir -p "$log_dir"
status=0

if ! command -v ncu >/dev/null; then
  ncu_dir=$(ls -d /opt/nvidia/nsight-compute/*/ /usr/local/cuda/nsight-compute-*/ 2>/dev/null | tail -1)
  [ -n "$ncu_dir" ] && export PATH="$ncu_dir:$PATH"
fi

echo "== test_module_gpu"
if [ -x "$build/tests/test_module_gpu" ]; then
  env -u NVTX_INJECTION64_PATH "$build/tests/test_module_gpu" >"$log_dir/test_module_gpu.txt" 2>&1
  rc=$?
  tail -3 "$log_dir/test_module_gpu.txt"
  [ $rc -eq 0 ] || { echo "FAIL test_module_gpu rc=$rc"; status=1; }
else
  echo "MISSING $build/tests/test_module_gpu"; status=1
fi

echo "== ncu --nvtx-include on examples/module_tree"
exe="$build/examples/module_tree/module_tree"
summary="$log_dir/ncu-summary.txt"
: >"$summary"
if [ ! -x "$exe" ]; then
  echo "MISSING $exe (add_subdirectory(module_tree) in examples/CMakeLists.txt?)" | tee -a "$summary"
  status=1
elif ! command -v ncu >/dev/null; then
  echo "MISSING ncu" | tee -a "$summary"
  status=1
else
  ncu --version >"$log_dir/ncu-version.txt" 2>&1
  for mode in shared own; do
    args=()
    [ "$mode" = own ] && args=(--domain model)
    expected="$log_dir/expected-$mode.txt"
    if ! "$exe" "${args[@]}" >"$expected" 2>&1; then
      echo "FAIL module_tree ${args[*]} (see $expected)" | tee -a "$summary"
      status=1
      continue
    fi
    i=0
    while IFS= read -r line; do
      line=${line#expect }
      count=${line##* }      # last field
      filter=${line% *}      # the rest (filters may contain spaces: "step 1")
      i=$((i + 1))
      log="$log_dir/ncu-$mode-$i.log"
      ncu --clock-control none --nvtx --nvtx-include "$filter" --metrics gpu__time_duration.sum \
        "$exe" "${args[@]}" >"$log" 2>&1
      rc=$?
      got=$(grep -cE ', Context [^,]+, Stream [^,]+, Device [0-9]+, CC [0-9]+\.[0-9]+' "$log")
      passes=$(grep -c '^==PROF== Profiling "' "$log")
      verdict=PASS
      # ncu may exit non-zero when no kernel matched: the count decides.
      if [ "$got" != "$count" ]; then verdict=FAIL; status=1; fi
      printf '%s  --nvtx-include "%s"  expected %s  profiled %s  (==PROF== lines %s, ncu rc %s, %s)\n' \
        "$verdict" "$filter" "$count" "$got" "$passes" "$rc" "$(basename "$log")" | tee -a "$summary"
    done < <(grep '^expect ' "$expected")
  done
fi

echo "== bench_module"
if [ -x "$build/bench/bench_module" ]; then
  bash "$root/bench/run_module_benchmarks.sh" "$build" "$log_dir/bench" | tee "$log_dir/bench_module.md" | head -25
else
  echo "MISSING $build/bench/bench_module"
fi
exit $status
