#!/usr/bin/env bash
# Module hooks on a GPU machine (builds nothing; run by scripts/gpu/run-all.sh, or alone with OUT
# and NSIGHTKIT_GPU_BUILD set):
#   1. test_module_gpu (module tree around kernels, hooks timing modules with CUDA events);
#   2. for each "expect <filter> <count>" line that examples/module_tree prints, one
#      `ncu --clock-control none --nvtx --nvtx-include "<filter>"` run; the number of kernels ncu
#      profiled (one "<kernel>(...) (grid)x(block), Context N, Stream N, Device N, CC X.Y" header
#      per kernel; a stream named through NVTX may show its name) must equal <count>. Both module
#      domain set-ups: modules sharing the domain of the "step N" ranges, and modules in their own;
#   3. the module benchmarks (ratios against plain ranges of the same run).
# Logs: $OUT/module/ (ncu-summary.txt: one PASS/FAIL line per filter). Exit status: the number of
# failed steps and checks.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_init module

echo "== test_module_gpu"
if [ -x "$build/tests/test_module_gpu" ]; then
  step --tail 3 test_module_gpu "$build/tests/test_module_gpu"
else
  fail "$build/tests/test_module_gpu not built"
fi

echo "== ncu --nvtx-include on examples/module_tree"
exe="$build/examples/module_tree/module_tree"
summary="$LOG_DIR/ncu-summary.txt"
: >"$summary"
if [ ! -x "$exe" ]; then
  fail "$exe not built (add_subdirectory(module_tree) in examples/CMakeLists.txt?)"
elif need_ncu; then
  ncu --version >"$LOG_DIR/ncu-version.txt" 2>&1
  for mode in shared own; do
    args=()
    if [ "$mode" = own ]; then args=(--domain model); fi
    step --tail 0 "expected-$mode" "$exe" "${args[@]}"
    if [ "$STEP_OK" -eq 0 ]; then
      echo "FAIL module_tree ${args[*]} (see $LOG_DIR/expected-$mode.log)" | tee -a "$summary"
      continue
    fi
    i=0
    while IFS= read -r line; do
      line=${line#expect }
      count=${line##* } # last field
      filter=${line% *} # the rest (filters may contain spaces: "step 1")
      i=$((i + 1))
      # ncu may exit non-zero when no kernel matched: the count decides.
      step --quiet --expect any "ncu-$mode-$i" ncu --clock-control none --nvtx --nvtx-include "$filter" \
        --metrics gpu__time_duration.sum "$exe" "${args[@]}"
      log="$LOG_DIR/ncu-$mode-$i.log"
      got=$(grep -cE ', Context [^,]+, Stream [^,]+, Device [0-9]+, CC [0-9]+\.[0-9]+' "$log" || true)
      passes=$(grep -c '^==PROF== Profiling "' "$log" || true)
      verdict=PASS
      if [ "$got" != "$count" ]; then
        verdict=FAIL
        failures=$((failures + 1))
      fi
      printf '%s  --nvtx-include "%s"  expected %s  profiled %s  (==PROF== lines %s, ncu rc %s, %s)\n' \
        "$verdict" "$filter" "$count" "$got" "$passes" "$STEP_RC" "$(basename "$log")" | tee -a "$summary"
    done < <(grep '^expect ' "$LOG_DIR/expected-$mode.log" || true)
  done
fi

echo "== bench_module"
if [ -x "$build/bench/bench_module" ]; then
  step --tail 0 bench_module bash "$root/bench/run_module_benchmarks.sh" "$build" "$LOG_DIR/bench"
  head -n 25 "$LOG_DIR/bench_module.log"
else
  fail "$build/bench/bench_module not built"
fi
gpu_finish
