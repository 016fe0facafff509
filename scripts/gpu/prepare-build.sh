#!/usr/bin/env bash
# Builds build-gpu/ here (no GPU needed) for a GPU machine where Debian's shared libraries are
# absent: fmt is linked header-only and libbenchmark is copied into build-gpu/carry-lib (the GPU
# scripts put it on LD_LIBRARY_PATH). Object files are deleted to keep the tree small to carry;
# ctest only needs the executables and CTest files. Logs: $OUT/prepare-build/.
# usage: scripts/gpu/prepare-build.sh [build dir] [extra cmake args...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [ $# -gt 0 ]; then
  NSIGHTKIT_GPU_BUILD=$1
  shift
fi
gpu_init prepare-build
step --tail 0 configure cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DNSIGHTKIT_FMT_TARGET=fmt::fmt-header-only -DNSIGHTKIT_CUDA=ON "$@"
if [ "$STEP_OK" -eq 1 ]; then
  step --tail 0 build cmake --build "$build" -j "$(nproc)"
fi
if [ "$STEP_OK" -eq 0 ]; then
  tail -n 40 "$LOG_DIR/configure.log" "$LOG_DIR/build.log" 2>/dev/null || true
  gpu_finish
fi
benchmark_lib=/usr/lib/x86_64-linux-gnu/libbenchmark.so.1debian
mkdir -p "$build/carry-lib"
if [ -e "$benchmark_lib" ]; then
  cp -L "$benchmark_lib" "$build/carry-lib/"
else
  say "note: $benchmark_lib not found: the benchmarks need Google Benchmark on the GPU machine"
fi
find "$build" -name '*.o' -delete
du -sh "$build"
gpu_finish
