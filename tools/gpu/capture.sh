#!/usr/bin/env bash
# Capture-window check on the lent GPU machine. Builds nothing: it runs the already built
# examples/capture_window under Nsight Compute and checks which kernels were profiled.
#
#   tools/gpu/capture.sh [BUILD_DIR]        (default build-gpu; logs and summary go to "$OUT")
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
set -u
BUILD=${1:-build-gpu}
APP="$BUILD/examples/capture_window/capture_window"
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
SUMMARY="$OUT/capture-summary.txt"
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }

if [ ! -x "$APP" ]; then
  say "FAIL: $APP not built (examples/CMakeLists.txt needs add_subdirectory(capture_window); nvcc needed)"
  exit 1
fi
say "ncu: $("$NCU" --version 2>&1 | tail -n 1)"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"

# One metric: one replay pass per kernel, the run stays short.
NCU_BASE=("$NCU" --clock-control none --metrics gpu__time_duration.sum)
failures=0

# check NAME "EXPECTED STEPS" LOG: compares the kernels ncu profiled with the expectation.
check() {
  local name=$1 expected=$2 log=$3
  local count grids names ncu_lines
  count=$(grep -o '==PROF== Profiling' "$log" | wc -l)
  # Kernel header lines: "<name> (8, 1, 1)x(64, 1, 1), Context 1, Stream 7, Device 0, CC 9.0".
  grids=$(sed -nE 's/.*\(([0-9]+), 1, 1\)x\(64, 1, 1\), Context.*/\1/p' "$log" |
    awk '{ print $1 - 1 }' | sort -n | tr '\n' ' ' | sed 's/ $//')
  # NVTX step names as ncu prints them (the program's own lines start with "capture_window:").
  ncu_lines=$(grep -v '^capture_window:' "$log")
  names=$(echo "$ncu_lines" | grep -oE '\bstep [0-9]+\b' | sort -u -t ' ' -k2,2n | tr '\n' ',' | sed 's/,$//')
  local want_names
  want_names=$(for s in $expected; do printf 'step %s,' "$s"; done | sed 's/,$//')
  local n_expected
  n_expected=$(echo "$expected" | wc -w)
  if [ "$count" -eq "$n_expected" ] && [ "$grids" = "$expected" ] && [ "$names" = "$want_names" ]; then
    say "PASS $name: profiled $count kernels, steps by grid: $grids; NVTX: $names"
  else
    say "FAIL $name: profiled $count kernels (want $n_expected), steps by grid: '$grids' (want '$expected'), NVTX: '$names' (want '$want_names'); see $log"
    failures=$((failures + 1))
  fi
  grep '^capture_window:' "$log" | sed 's/^/    /' | tee -a "$SUMMARY" >/dev/null
}

# The program alone (no profiler): what it expects, and that its results are right.
"$APP" >"$OUT/plain.log" 2>&1
rc=$?
say "plain run: exit $rc ($(grep -c 'results OK' "$OUT/plain.log") x 'results OK')"
[ "$rc" -eq 0 ] || failures=$((failures + 1))

log="$OUT/ncu-code.log"
env -u NSIGHTKIT_CAPTURE "${NCU_BASE[@]}" --profile-from-start off --nvtx --print-nvtx-rename kernel \
  "$APP" >"$log" 2>&1
check code "7 8 9" "$log"

log="$OUT/ncu-env.log"
NSIGHTKIT_CAPTURE="wait=5,warmup=2,active=3" "${NCU_BASE[@]}" --profile-from-start off --nvtx \
  --print-nvtx-rename kernel "$APP" --env-only >"$log" 2>&1
check env "7 8 9" "$log"

log="$OUT/ncu-env-repeat.log"
NSIGHTKIT_CAPTURE="skip_first=2,wait=3,warmup=1,active=2,repeat=2" "${NCU_BASE[@]}" \
  --profile-from-start off --nvtx --print-nvtx-rename kernel "$APP" >"$log" 2>&1
check env-repeat "6 7 12 13" "$log"

log="$OUT/ncu-nvtx-window.log"
env -u NSIGHTKIT_CAPTURE "${NCU_BASE[@]}" --nvtx --nvtx-include "nsightkit@capture" \
  --print-nvtx-rename kernel "$APP" >"$log" 2>&1
check nvtx-window "7 8 9" "$log"

log="$OUT/ncu-nvtx-step.log"
env -u NSIGHTKIT_CAPTURE "${NCU_BASE[@]}" --nvtx --nvtx-include "nsightkit@step 8/" \
  --print-nvtx-rename kernel "$APP" >"$log" 2>&1
check nvtx-step "8" "$log"

# A bad value: one message naming the variable and the bad part; the run goes on uncaptured.
NSIGHTKIT_CAPTURE="wait=5,active=-3" "$APP" >"$OUT/bad-env.log" 2>&1
rc=$?
say "bad NSIGHTKIT_CAPTURE: exit $rc, $(grep -c 'NSIGHTKIT_CAPTURE=' "$OUT/bad-env.log") message(s):"
grep 'NSIGHTKIT_CAPTURE=' "$OUT/bad-env.log" | sed 's/^/    /' | tee -a "$SUMMARY"

say "failed checks: $failures (logs in $OUT)"
exit "$failures"
