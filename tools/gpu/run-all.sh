#!/usr/bin/env bash
# Runs on the lent GPU machine (device tool), from the repository root, with build-gpu carried:
# tools/gpu/<component>.sh for each component named (default: all present). Every log goes into
# one archive, $OUT/gpu-logs.tgz (the device tool returns at most 8 files), plus $OUT/summary.txt
# with the tail of each component's output.
# usage: tools/gpu/run-all.sh [component ...]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${NSIGHTKIT_GPU_BUILD:-$root/build-gpu}
export NSIGHTKIT_GPU_BUILD=$build
final=${OUT:-$root/gpu-out}
mkdir -p "$final"
work=$(mktemp -d)/gpu-logs
mkdir -p "$work"
export OUT=$work
export LD_LIBRARY_PATH="$build/carry-lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="/usr/local/cuda/bin:$PATH"
ncu_dir=$(ls -d /opt/nvidia/nsight-compute/*/ 2>/dev/null | tail -1)
if ! command -v ncu >/dev/null && [ -n "$ncu_dir" ]; then export PATH="$ncu_dir:$PATH"; fi
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; uname -r; date -u; } >"$OUT/machine.txt" 2>&1
components=("$@")
if [ ${#components[@]} -eq 0 ]; then
  components=(foundation)
  for f in "$root"/tools/gpu/*.sh; do
    n=$(basename "$f" .sh)
    case $n in prepare-build|run-all|foundation) ;; *) components+=("$n") ;; esac
  done
fi
: >"$final/summary.txt"
for c in "${components[@]}"; do
  start=$(date +%s)
  bash "$root/tools/gpu/$c.sh" >"$OUT/$c.log" 2>&1
  rc=$?
  { echo "===== $c (exit $rc, $(( $(date +%s) - start )) s)"; tail -60 "$OUT/$c.log"; } >>"$final/summary.txt"
done
tar czf "$final/gpu-logs.tgz" -C "$(dirname "$work")" gpu-logs
cat "$final/summary.txt"
