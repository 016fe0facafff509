#!/usr/bin/env bash
# Pinned memory on a GPU machine. Builds nothing: runs the already built GPU test (its printed
# lines show whether stream-ordered reuse handed out a new block and what the control run
# corrupted), the CPU test (there it takes the "with a GPU it works" path), the GPU test again
# under compute-sanitizer memcheck, and the benchmark (its ratio table ends the log).
#   scripts/gpu/pinned.sh          or   NSIGHTKIT_GPU_BUILD=build-gpu OUT=/tmp/o scripts/gpu/pinned.sh
# Logs: $OUT/pinned/. Exit status: the number of failed steps.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_init pinned

step gpu-test "$build/tests/test_pinned_gpu" --durations yes
step cpu-test "$build/tests/test_pinned"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$sanitizer" ]; then
  step --timeout 170 memcheck "$sanitizer" --tool memcheck --error-exitcode 1 "$build/tests/test_pinned_gpu"
else
  fail "compute-sanitizer not found: memcheck skipped"
fi
step bench "$build/bench/bench_pinned" --benchmark_repetitions=3 --benchmark_min_time=0.2 \
  --benchmark_out="$LOG_DIR/bench_pinned.json" --benchmark_out_format=json
gpu_finish
