#!/usr/bin/env bash
# The main job: builds the ResNet-style training example and trains it, instrumented with
# nsightkit end to end; it prints loss/accuracy, images/s and nsightkit's per-module report.
# With no CUDA device it runs the same network on the CPU at a small size.
# Extra arguments go to the example (see --help), e.g. scripts/run-example.sh --steps 100.
# Usage: scripts/run-example.sh [--no-install] [example flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = "--no-install" ]; then shift; else "$root/scripts/install-deps.sh"; fi
if [ -d /usr/local/cuda/bin ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
cmake -S "$root" -B "$root/build/example" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNSIGHTKIT_BUILD_TESTS=OFF -DNSIGHTKIT_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$root/build/example" --target resnet_training -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
"$root/build/example/examples/resnet_training/resnet_training" --device auto "$@"
