#!/usr/bin/env bash
# Stream prefetcher on the GPU machine. Builds nothing: runs the already built GPU test (every
# batch verified on the device, depths 1-4; it prints host waits and staging blocks per run), the
# CPU test (there it takes the "with a GPU it works" path), the GPU test under compute-sanitizer
# (memcheck with leak check, initcheck, racecheck, synccheck; its NVTX test skips itself there,
# because the sanitizer sets NVTX_INJECTION64_PATH), and the benchmark (its ratio table ends the
# log: depth 2 against max(C, K), target <= 1.10x, and against the serial loop C + K).
# Expects NSIGHTKIT_GPU_BUILD and OUT (run-all.sh sets them).
#   tools/gpu/prefetch.sh          or   NSIGHTKIT_GPU_BUILD=build-gpu OUT=/tmp/o tools/gpu/prefetch.sh
# Exit status: the number of failed steps.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${NSIGHTKIT_GPU_BUILD:-$root/build-gpu}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
failures=0
step() {  # step NAME command...: runs it, logs to $OUT/prefetch-NAME.log, prints the tail
  local name=$1
  shift
  echo "--- $name: $*"
  "$@" >"$OUT/prefetch-$name.log" 2>&1
  local rc=$?
  tail -n 25 "$OUT/prefetch-$name.log"
  echo "--- $name: exit $rc$([ "$rc" -eq 77 ] && echo ' (skipped: no usable device)')"
  [ "$rc" -eq 0 ] || failures=$((failures + 1))
}

gpu_test="$build/tests/test_prefetch_gpu"
step gpu-test env -u NVTX_INJECTION64_PATH "$gpu_test" --durations yes
step cpu-test env -u NVTX_INJECTION64_PATH "$build/tests/test_prefetch"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$sanitizer" ]; then
  step memcheck timeout 170 "$sanitizer" --tool memcheck --leak-check full --error-exitcode 1 "$gpu_test"
  step initcheck timeout 120 "$sanitizer" --tool initcheck --error-exitcode 1 "$gpu_test"
  step racecheck timeout 170 "$sanitizer" --tool racecheck --error-exitcode 1 "$gpu_test"
  step synccheck timeout 120 "$sanitizer" --tool synccheck --error-exitcode 1 "$gpu_test"
else
  echo "--- compute-sanitizer not found: memcheck/initcheck/racecheck/synccheck skipped"
  failures=$((failures + 1))
fi
step bench "$build/bench/bench_prefetch" 40 5
echo "prefetch: $failures failed step(s); logs in $OUT"
exit "$failures"
