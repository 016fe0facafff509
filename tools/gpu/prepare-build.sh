#!/usr/bin/env bash
# Builds build-gpu/ here (no GPU needed) so the device tool can carry it to the lent GPU machine,
# where Debian's shared libraries are absent: fmt is linked header-only and libbenchmark is copied
# into build-gpu/carry-lib (run-all.sh puts it on LD_LIBRARY_PATH). Object files are deleted to keep
# the carried tree small; ctest only needs the executables and CTest files.
# usage: tools/gpu/prepare-build.sh [build dir] [extra cmake args...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build-gpu}
shift || true
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DNSIGHTKIT_FMT_TARGET=fmt::fmt-header-only -DNSIGHTKIT_CUDA=ON "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
mkdir -p "$build/carry-lib"
cp -L /usr/lib/x86_64-linux-gnu/libbenchmark.so.1debian "$build/carry-lib/"
find "$build" -name '*.o' -delete
du -sh "$build"
