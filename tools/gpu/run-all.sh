#!/usr/bin/env bash
# Runs on the lent GPU machine (device tool), from the repository root, with build-gpu carried:
# the GPU test suite, then every tools/gpu/<component>.sh present. Logs go to $OUT.
# usage: tools/gpu/run-all.sh [component ...]   (default: all)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${NSIGHTKIT_GPU_BUILD:-$root/build-gpu}
export NSIGHTKIT_GPU_BUILD=$build
export OUT=${OUT:-$root/gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$build/carry-lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="/usr/local/cuda/bin:$PATH"
ncu_dir=$(ls -d /opt/nvidia/nsight-compute/*/ 2>/dev/null | tail -1)
if ! command -v ncu >/dev/null && [ -n "$ncu_dir" ]; then export PATH="$ncu_dir:$PATH"; fi
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; uname -r; } >"$OUT/machine.txt" 2>&1
components=("$@")
if [ ${#components[@]} -eq 0 ]; then
  components=(foundation)
  for f in "$root"/tools/gpu/*.sh; do
    n=$(basename "$f" .sh)
    case $n in prepare-build|run-all|foundation) ;; *) components+=("$n") ;; esac
  done
fi
for c in "${components[@]}"; do
  echo "===== $c"
  bash "$root/tools/gpu/$c.sh" 2>&1 | tee "$OUT/$c.log" | tail -40
done
