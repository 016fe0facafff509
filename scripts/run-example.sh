#!/usr/bin/env bash
# The main job: builds the ResNet-style training example and trains it, instrumented with
# nsightkit end to end; it prints loss/accuracy, images/s and nsightkit's per-module report.
# With no CUDA device it runs the same network on the CPU at a small size.
# Extra arguments go to the example (see --help), e.g. scripts/run-example.sh --steps 100.
# Usage: scripts/run-example.sh [--no-install] [example flags...]
#
# Each step says what it does on stderr, the build shows ninja's progress lines, and a failing
# step prints the tool's own output and which step failed. The example's output goes to stdout.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build/example"
steps=4
started=$SECONDS

say() { printf 'run-example: %s\n' "$*" >&2; }
fail() {  # fail STEP EXIT_CODE [LOG]: the tool's output (if it was kept in a log), then the step
  if [ -n "${3:-}" ] && [ -s "$3" ]; then
    cat "$3" >&2
  fi
  say "FAILED at step $1 (exit code $2)${3:+; full output in ${3#"$root/"}}"
  exit "$2"
}

if [ "${1:-}" = "--no-install" ]; then
  shift
  say "[1/$steps] installing dependencies: skipped (--no-install)"
else
  say "[1/$steps] installing dependencies (scripts/install-deps.sh, apt-get) ..."
  "$root/scripts/install-deps.sh" >&2 || fail "1/$steps: installing dependencies" $?
fi
if [ -d /usr/local/cuda/bin ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi

# Configure: cmake's chatter goes to a log, shown in full only when configuring fails; the lines
# that say which backends the example gets (CUDA, cuDNN, NCCL or CPU only) are shown always.
mkdir -p "$build"
log="$build/run-example-configure.log"
say "[2/$steps] configuring ${build#"$root/"} (cmake, Ninja, RelWithDebInfo) ..."
t=$SECONDS
rc=0
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNSIGHTKIT_BUILD_TESTS=OFF -DNSIGHTKIT_BUILD_BENCHMARKS=OFF >"$log" 2>&1 || rc=$?
if [ "$rc" != 0 ]; then fail "2/$steps: configuring with cmake" "$rc" "$log"; fi
grep -E '^-- (nsightkit|resnet_training)' "$log" | sed 's/^-- /run-example:   /' >&2 || true
say "      configured in $((SECONDS - t)) s"

# Build: ninja's own progress lines ([n/N] Building ...) and, on failure, the compiler's errors.
jobs=$(nproc 2>/dev/null || echo 2)
say "[3/$steps] building target resnet_training with $jobs jobs (a first build compiles about 20 files) ..."
t=$SECONDS
rc=0
cmake --build "$build" --target resnet_training -j "$jobs" >&2 || rc=$?
if [ "$rc" != 0 ]; then fail "3/$steps: building resnet_training (the errors are above)" "$rc"; fi
say "      built in $((SECONDS - t)) s"

say "[4/$steps] running ${build#"$root/"}/examples/resnet_training/resnet_training --device auto${*:+ $*}"
rc=0
"$build/examples/resnet_training/resnet_training" --device auto "$@" || rc=$?
if [ "$rc" != 0 ]; then fail "4/$steps: running resnet_training" "$rc"; fi
say "done in $((SECONDS - started)) s"
