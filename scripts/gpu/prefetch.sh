#!/usr/bin/env bash
# Stream prefetcher on a GPU machine. Builds nothing: runs the already built GPU test (every
# batch verified on the device, depths 1-4; it prints host waits and staging blocks per run), the
# CPU test (there it takes the "with a GPU it works" path), the GPU test under compute-sanitizer
# (memcheck with leak check, initcheck, racecheck, synccheck; its NVTX test skips itself there,
# because the sanitizer sets NVTX_INJECTION64_PATH), and the benchmark (its ratio table ends the
# log: depth 2 against max(C, K), target <= 1.10x, and against the serial loop C + K).
#   scripts/gpu/prefetch.sh        or   NSIGHTKIT_GPU_BUILD=build-gpu OUT=/tmp/o scripts/gpu/prefetch.sh
# Logs: $OUT/prefetch/. Exit status: the number of failed steps.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_init prefetch

gpu_test="$build/tests/test_prefetch_gpu"
step gpu-test "$gpu_test" --durations yes
step cpu-test "$build/tests/test_prefetch"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$sanitizer" ]; then
  step --timeout 170 memcheck "$sanitizer" --tool memcheck --leak-check full --error-exitcode 1 "$gpu_test"
  step --timeout 120 initcheck "$sanitizer" --tool initcheck --error-exitcode 1 "$gpu_test"
  step --timeout 170 racecheck "$sanitizer" --tool racecheck --error-exitcode 1 "$gpu_test"
  step --timeout 120 synccheck "$sanitizer" --tool synccheck --error-exitcode 1 "$gpu_test"
else
  fail "compute-sanitizer not found: memcheck/initcheck/racecheck/synccheck skipped"
fi
step bench "$build/bench/bench_prefetch" 40 5
gpu_finish
