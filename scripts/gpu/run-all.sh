#!/usr/bin/env bash
# Runs on a GPU machine, from the repository root, with the build directory made by
# prepare-build.sh: scripts/gpu/<component>.sh for each component named (default: foundation,
# then every other script here). Every log goes into one archive, $OUT/gpu-logs.tgz (one file to
# carry back), plus $OUT/summary.txt with the tail of each component's output.
# usage: scripts/gpu/run-all.sh [component ...]
# Exit status: the number of components that failed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
final=${OUT:-$NSK_ROOT/gpu-out}
mkdir -p "$final"
work=$(mktemp -d)/gpu-logs
OUT=$work
gpu_init run-all
SUMMARY="$final/summary.txt"
: >"$SUMMARY"
export OUT NSIGHTKIT_GPU_BUILD=$build
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; uname -r; date -u; } \
  >"$OUT/machine.txt" 2>&1 || true
components=("$@")
if [ ${#components[@]} -eq 0 ]; then
  components=(foundation)
  for f in "$root"/scripts/gpu/*.sh; do
    n=$(basename "$f" .sh)
    case $n in prepare-build | run-all | foundation | lib) ;; *) components+=("$n") ;; esac
  done
fi
for c in "${components[@]}"; do
  if [ ! -f "$root/scripts/gpu/$c.sh" ]; then
    fail "no such component: scripts/gpu/$c.sh"
    continue
  fi
  step --tail 0 "$c" bash "$root/scripts/gpu/$c.sh"
  { echo "===== $c (exit $STEP_RC, $STEP_SECS s)"; tail -n 60 "$LOG_DIR/$c.log"; } >>"$SUMMARY"
done
tar czf "$final/gpu-logs.tgz" -C "$(dirname "$work")" gpu-logs
cat "$SUMMARY"
LOG_DIR="$final/gpu-logs.tgz" # where the logs are now, for the closing line
gpu_finish
