#!/usr/bin/env bash
# Pinned memory on the GPU machine. Builds nothing: runs the already built GPU test (its printed
# lines show whether stream-ordered reuse handed out a new block and what the control run
# corrupted), the CPU test (there it takes the "with a GPU it works" path), the GPU test again
# under compute-sanitizer memcheck, and the benchmark (its ratio table ends the log).
# Expects NSIGHTKIT_GPU_BUILD and OUT (run-all.sh sets them).
#   tools/gpu/pinned.sh            or   NSIGHTKIT_GPU_BUILD=build-gpu OUT=/tmp/o tools/gpu/pinned.sh
# Exit status: the number of failed steps.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${NSIGHTKIT_GPU_BUILD:-$root/build-gpu}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
failures=0
step() {  # step NAME command...: runs it, logs to $OUT/pinned-NAME.log, prints the tail
  local name=$1
  shift
  echo "--- $name: $*"
  "$@" >"$OUT/pinned-$name.log" 2>&1
  local rc=$?
  tail -n 25 "$OUT/pinned-$name.log"
  echo "--- $name: exit $rc$([ "$rc" -eq 77 ] && echo ' (skipped: no usable device)')"
  [ "$rc" -eq 0 ] || failures=$((failures + 1))
}

step gpu-test "$build/tests/test_pinned_gpu" --durations yes
step cpu-test "$build/tests/test_pinned"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$sanitizer" ]; then
  step memcheck timeout 170 "$sanitizer" --tool memcheck --error-exitcode 1 "$build/tests/test_pinned_gpu"
else
  echo "--- memcheck: compute-sanitizer not found, skipped"
fi
step bench "$build/bench/bench_pinned" --benchmark_repetitions=3 --benchmark_min_time=0.2 \
  --benchmark_out="$OUT/bench_pinned.json" --benchmark_out_format=json
echo "pinned: $failures failed step(s); logs in $OUT"
exit "$failures"
