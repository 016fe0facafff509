#!/usr/bin/env bash
# The main job: builds nsightkit's quickstart example and runs it; it prints the ranges it emitted
# (recorded in-process, no Nsight Systems needed).
# Usage: scripts/run-example.sh [--no-install]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" != "--no-install" ]; then "$root/scripts/install-deps.sh"; fi
if [ -d /usr/local/cuda/bin ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
cmake -S "$root" -B "$root/build/example" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNSIGHTKIT_BUILD_TESTS=OFF -DNSIGHTKIT_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$root/build/example" --target quickstart -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
"$root/build/example/examples/quickstart/quickstart"
