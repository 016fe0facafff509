#!/usr/bin/env bash
# Capture-window check on a GPU machine. Builds nothing: it runs the already built
# examples/capture_window under Nsight Compute and checks which kernels were profiled.
#
#   scripts/gpu/capture.sh [BUILD_DIR]   (default $NSIGHTKIT_GPU_BUILD or build-gpu; logs in $OUT/capture)
#
# The example runs 20 steps, one kernel per step, launched with step+1 blocks of 64 threads, so
# a profiled kernel's grid "(N+1, 1, 1)x(64, 1, 1)" names its step N; its NVTX range "step N"
# (printed by ncu with --nvtx) names it a second time. Checks:
#   code       schedule wait=5,warmup=2,active=3 in code, ncu --profile-from-start off -> 7 8 9
#   env        no schedule in code (--env-only), NSIGHTKIT_CAPTURE gives it       -> 7 8 9
#   env-repeat NSIGHTKIT_CAPTURE=skip_first=2,wait=3,warmup=1,active=2,repeat=2  -> 6 7 12 13
#   nvtx-window  ncu --nvtx --nvtx-include nsightkit@capture (the NVTX window range) -> 7 8 9
#   nvtx-step    ncu --nvtx --nvtx-include "nsightkit@step 8/" (one step range)      -> 8
# Exit status: the number of failed checks.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [ $# -gt 0 ]; then NSIGHTKIT_GPU_BUILD=$1; fi
gpu_init capture
APP="$build/examples/capture_window/capture_window"

if [ ! -x "$APP" ]; then
  fail "$APP not built (examples/CMakeLists.txt needs add_subdirectory(capture_window); nvcc needed)"
  gpu_finish
fi
need_ncu || gpu_finish
say "ncu: $(ncu --version 2>&1 | tail -n 1)"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || true)"

# One metric: one replay pass per kernel, the run stays short.
NCU_BASE=(ncu --clock-control none --metrics gpu__time_duration.sum)

# check NAME "EXPECTED STEPS": runs step NAME (the ncu command after it), then compares the kernels
# ncu profiled with the expectation. ncu's exit status is recorded, not judged: the kernels decide.
check() {
  local name=$1 expected=$2
  shift 2
  step --tail 0 --expect any "$name" "$@"
  local log="$LOG_DIR/$name.log" count grids names want_names n_expected
  count=$(grep -c '==PROF== Profiling' "$log" || true)
  # Kernel header lines: "<name> (8, 1, 1)x(64, 1, 1), Context 1, Stream 7, Device 0, CC 9.0".
  grids=$(sed -nE 's/.*\(([0-9]+), 1, 1\)x\(64, 1, 1\), Context.*/\1/p' "$log" |
    awk '{ print $1 - 1 }' | sort -n | tr '\n' ' ' | sed 's/ $//')
  # NVTX step names as ncu prints them (the program's own lines start with "capture_window:").
  names=$({ grep -v '^capture_window:' "$log" || true; } | { grep -oE '\bstep [0-9]+\b' || true; } |
    sort -u -t ' ' -k2,2n | tr '\n' ',' | sed 's/,$//')
  want_names=$(for s in $expected; do printf 'step %s,' "$s"; done | sed 's/,$//')
  n_expected=$(echo "$expected" | wc -w)
  if [ "$count" -eq "$n_expected" ] && [ "$grids" = "$expected" ] && [ "$names" = "$want_names" ]; then
    say "PASS $name: profiled $count kernels, steps by grid: $grids; NVTX: $names (ncu exit $STEP_RC)"
  else
    fail "$name: profiled $count kernels (want $n_expected), steps by grid: '$grids' (want '$expected'), NVTX: '$names' (want '$want_names'); ncu exit $STEP_RC; see $log"
  fi
  { grep '^capture_window:' "$log" || true; } | sed 's/^/    /' >>"$SUMMARY"
}

# The program alone (no profiler): what it expects, and that its results are right.
step --tail 0 plain "$APP"
say "plain run: exit $STEP_RC ($(grep -c 'results OK' "$LOG_DIR/plain.log" || true) x 'results OK')"

check code "7 8 9" "${NCU_BASE[@]}" --profile-from-start off --nvtx --print-nvtx-rename kernel "$APP"
check env "7 8 9" env NSIGHTKIT_CAPTURE="wait=5,warmup=2,active=3" "${NCU_BASE[@]}" \
  --profile-from-start off --nvtx --print-nvtx-rename kernel "$APP" --env-only
check env-repeat "6 7 12 13" env NSIGHTKIT_CAPTURE="skip_first=2,wait=3,warmup=1,active=2,repeat=2" \
  "${NCU_BASE[@]}" --profile-from-start off --nvtx --print-nvtx-rename kernel "$APP"
check nvtx-window "7 8 9" "${NCU_BASE[@]}" --nvtx --nvtx-include "nsightkit@capture" \
  --print-nvtx-rename kernel "$APP"
check nvtx-step "8" "${NCU_BASE[@]}" --nvtx --nvtx-include "nsightkit@step 8/" \
  --print-nvtx-rename kernel "$APP"

# A bad value: one message naming the variable and the bad part; the run goes on uncaptured.
step --tail 0 --expect any bad-env env NSIGHTKIT_CAPTURE="wait=5,active=-3" "$APP"
say "bad NSIGHTKIT_CAPTURE: exit $STEP_RC, $(grep -c 'NSIGHTKIT_CAPTURE=' "$LOG_DIR/bad-env.log" || true) message(s):"
{ grep 'NSIGHTKIT_CAPTURE=' "$LOG_DIR/bad-env.log" || true; } | sed 's/^/    /' | tee -a "$SUMMARY"
gpu_finish
