# shellcheck shell=bash
# Shared by the GPU scripts in scripts/gpu/ (source it; it runs nothing by itself).
#
# These scripts run on a machine with an NVIDIA GPU against a build directory made elsewhere
# (prepare-build.sh) and build nothing. Each one:
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   gpu_init NAME [FILE]     # root, build, OUT, LOG_DIR=$OUT/NAME, SUMMARY=$LOG_DIR/FILE
#                            # (default summary.txt), failures=0, PATHs
#   step [options] STEP CMD...   # run, log, time, count a failure
#   say TEXT / fail TEXT     # a summary line / a failed check
#   gpu_finish               # the closing line; exit status = number of failed steps and checks
#
# Environment: NSIGHTKIT_GPU_BUILD (default <repo>/build-gpu), OUT (default <repo>/gpu-out).
# The scripts run under `set -euo pipefail`: a step's command may fail (step records it and goes
# on), anything else that fails unexpectedly ends the script with an error.

# The variables set here are read by the scripts that source this file.
# shellcheck disable=SC2034

# Where the repository is, whichever script sourced this file.
NSK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# gpu_init NAME [SUMMARY FILE NAME]: the variables every script uses, the toolkit's and Nsight
# Compute's directories on PATH, the build's carried libraries on LD_LIBRARY_PATH.
gpu_init() {
  local name=$1
  root=$NSK_ROOT
  build=${NSIGHTKIT_GPU_BUILD:-$root/build-gpu}
  OUT=${OUT:-$root/gpu-out}
  LOG_DIR="$OUT/$name"
  SUMMARY="$LOG_DIR/${2:-summary.txt}"
  GPU_SCRIPT=$name
  failures=0
  STEP_RC=0
  STEP_SECS=0
  STEP_OK=1
  mkdir -p "$LOG_DIR"
  : >"$SUMMARY"
  : >"$LOG_DIR/runs.log"
  export LD_LIBRARY_PATH="$build/carry-lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="/usr/local/cuda/bin:$PATH"
  if ! command -v ncu >/dev/null; then
    local ncu_dir
    # shellcheck disable=SC2012 # versioned directory names, newest last
    ncu_dir=$(ls -d /opt/nvidia/nsight-compute/*/ /usr/local/cuda/nsight-compute-*/ 2>/dev/null | tail -n 1 || true)
    if [ -n "$ncu_dir" ]; then export PATH="$ncu_dir:$PATH"; fi
  fi
  # NCCL (resnet_training links it): the loader's copy if it has one, else the Python packages'.
  if ! { ldconfig -p 2>/dev/null || true; } | grep 'libnccl.so.2 ' >/dev/null; then
    local nccl_lib
    nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
    if [ -n "$nccl_lib" ]; then export LD_LIBRARY_PATH="$nccl_lib:$LD_LIBRARY_PATH"; fi
  fi
  # Settings that would change what is measured or profiled.
  unset NSIGHTKIT_REPORT NSIGHTKIT_CAPTURE NVTX_INJECTION64_PATH
}

# say TEXT...: prints a line and keeps it in $SUMMARY.
say() {
  echo "$*" | tee -a "$SUMMARY"
}

# fail TEXT...: a failed check: "FAIL: TEXT" printed and kept, one more failure.
fail() {
  say "FAIL: $*"
  failures=$((failures + 1))
}

# step [--timeout S] [--expect 0|nonzero|any] [--tail N] [--quiet] STEP CMD...
#   Runs CMD with its output in $LOG_DIR/STEP.log (and appended to $LOG_DIR/runs.log), prints
#   the command, the last N lines of its output (default 25; 0: none) and its exit status and
#   time. It fails when the status is not the expected one (default 0; `nonzero` for a run that
#   must fail, `any` to only record it); 77 is reported as "skipped: no usable device" and fails
#   like any other status other than 0, since these scripts run where a GPU must be.
#   Sets STEP_RC, STEP_SECS and STEP_OK (1 passed, 0 failed) and writes "RC SECS" to
#   $LOG_DIR/STEP.rc. Always returns 0: under `set -e` a failed step must not end the script.
step() {
  local limit="" expect=0 lines=25 quiet=0
  while [ $# -gt 0 ]; do
    case $1 in
      --timeout) limit=$2; shift 2 ;;
      --expect) expect=$2; shift 2 ;;
      --tail) lines=$2; shift 2 ;;
      --quiet) quiet=1; shift ;;
      *) break ;;
    esac
  done
  local name=$1
  shift
  local log="$LOG_DIR/$name.log" t0 t1 ms rc=0
  [ "$quiet" -eq 1 ] || echo "--- $name: $*"
  echo "===== $name: $*" >>"$LOG_DIR/runs.log"
  t0=$(date +%s%N)
  if [ -n "$limit" ]; then
    timeout "$limit" "$@" >"$log" 2>&1 || rc=$?
  else
    "$@" >"$log" 2>&1 || rc=$?
  fi
  t1=$(date +%s%N)
  ms=$(((t1 - t0) / 1000000))
  STEP_RC=$rc
  STEP_OK=1
  STEP_SECS="$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
  cat "$log" >>"$LOG_DIR/runs.log"
  echo "===== $name: exit $rc after $STEP_SECS s" >>"$LOG_DIR/runs.log"
  echo "$rc $STEP_SECS" >"$LOG_DIR/$name.rc"
  local ok=1
  case $expect in
    any) ;;
    nonzero) [ "$rc" -ne 0 ] || ok=0 ;;
    *) [ "$rc" -eq "$expect" ] || ok=0 ;;
  esac
  if [ "$quiet" -eq 0 ]; then
    if [ "$lines" -gt 0 ]; then tail -n "$lines" "$log"; fi
    local note=""
    if [ "$rc" -eq 77 ]; then note=" (skipped: no usable device)"; fi
    if [ "$rc" -eq 124 ] && [ -n "$limit" ]; then note=" (timed out after $limit s)"; fi
    echo "--- $name: exit $rc after $STEP_SECS s$note$([ "$ok" -eq 1 ] || echo ", expected $expect: FAILED")"
  fi
  if [ "$ok" -eq 0 ]; then
    failures=$((failures + 1))
    STEP_OK=0
  fi
  return 0
}

# need_ncu: 0 when ncu is on PATH; else a failed check and 1.
need_ncu() {
  if command -v ncu >/dev/null; then return 0; fi
  fail "ncu (Nsight Compute) not found on PATH, in /opt/nvidia/nsight-compute or the toolkit"
  return 1
}

# gpu_finish: the closing line, then exits with the number of failures (at most 100).
gpu_finish() {
  say "$GPU_SCRIPT: $failures failed step(s) or check(s); logs in $LOG_DIR"
  exit $((failures > 100 ? 100 : failures))
}
