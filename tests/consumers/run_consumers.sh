#!/usr/bin/env bash
# Builds and RUNS consumers of nsightkit, compiled by a plain C++ compiler, through each documented
# route, against a fresh install:
#   1. find_package(nsightkit CONFIG) on the installed package (enabled and disabled builds)
#   2. add_subdirectory(<source>) (tests, examples and benchmarks of nsightkit stay off)
#   3. pkg-config --cflags --libs nsightkit
# Each route builds two programs:
#   - common/main.cpp: every instrumentation feature (ranges, module hooks, CaptureWindow, Report,
#     Recorder). It must link no CUDA library; where no CUDA driver is installed its capture
#     window must say so in exactly one line and go on. Its report files must parse.
#   - common/cuda_utilities.cpp: the CUDA utilities, linked with the CUDA runtime the route's way
#     (CMake: CUDA::cudart; pkg-config: the toolkit's -lcudart). Without a device each utility
#     must fail soft with a CudaError naming the call (the program checks that).
# usage: run_consumers.sh <nsightkit source dir> <work dir> <c++ compiler>
set -euo pipefail
src=$1 work=$2 cxx=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
fail() { echo "run_consumers: $*" >&2; exit 1; }

# The CUDA toolkit (for the CUDA utilities consumers): CUDA_HOME, CUDA_PATH, nvcc's, /usr/local/cuda.
cuda_root=${CUDA_HOME:-${CUDA_PATH:-}}
if [ -z "$cuda_root" ] && command -v nvcc >/dev/null; then
  cuda_root=$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)
fi
cuda_root=${cuda_root:-/usr/local/cuda}
have_toolkit=0
[ -f "$cuda_root/include/cuda_runtime_api.h" ] && have_toolkit=1
# Is a CUDA driver installed? (Decides whether the capture window must print its no-driver line.)
have_driver=0
python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null && have_driver=1
no_driver_line="nsightkit: CaptureWindow: no CUDA driver/device (the NVIDIA driver library libcuda.so.1 could not be loaded): capture continues without the profiler"
echo "== CUDA toolkit: $([ $have_toolkit = 1 ] && echo "$cuda_root" || echo none); CUDA driver: $([ $have_driver = 1 ] && echo installed || echo none)"

# check_no_cuda_link <program>: no CUDA library needed, no CUDA symbol left to resolve.
check_no_cuda_link() {
  local needed
  needed=$(readelf -d "$1" | grep NEEDED || true)
  if grep -qi cuda <<<"$needed"; then fail "$1 links a CUDA library:"$'\n'"$needed"; fi
  if nm -D --undefined-only "$1" | grep -E ' (cuda|cu)[A-Z]'; then
    fail "$1 has unresolved CUDA symbols (above)"
  fi
}

# run_instrumentation <program> <mode: enabled|disabled> <name>: runs it with an output directory,
# then checks its stderr (the no-driver line) and its report files.
run_instrumentation() {
  local prog=$1 mode=$2 name=$3 out="$work/out/$3"
  check_no_cuda_link "$prog"
  rm -rf "$out"
  "$prog" "$out" 2>"$out.stderr" || { cat "$out.stderr" >&2; fail "$name failed"; }
  cat "$out.stderr"
  local lines
  lines=$(grep -cFx "$no_driver_line" "$out.stderr" || true)
  if [ "$mode" = enabled ] && [ $have_driver = 0 ]; then
    [ "$lines" = 1 ] || fail "$name: expected the capture window's no-driver line once on stderr, got $lines"
  else
    [ "$lines" = 0 ] || fail "$name: printed the no-driver line $lines times"
  fi
  if [ "$mode" = enabled ]; then
    python3 - "$out" <<'PY' || fail "$name: the report's files do not parse"
import csv, json, sys
d = sys.argv[1]
summary = json.load(open(d + "/summary.json"))
paths = [p.get("path") for p in summary.get("paths", [])]
assert "train/forward 1" in paths, "summary.json lacks path 'train/forward 1': %s" % paths
trace = json.load(open(d + "/trace.json"))
assert any(e.get("name") == "forward 0" for e in trace["traceEvents"]), "trace.json lacks 'forward 0'"
rows = list(csv.DictReader(open(d + "/summary.csv")))
assert any(r["path"] == "train" and r["count"] == "3" for r in rows if r["scope"] == "all"), rows
assert "train" in open(d + "/table.txt").read()
print("  report files parse: summary.json (%d paths), trace.json (%d events), summary.csv (%d rows), table.txt"
      % (len(paths), len(trace["traceEvents"]), len(rows)))
PY
  fi
}

# run_cuda <program> <name>: the CUDA utilities consumer, which must link the CUDA runtime.
run_cuda() {
  local prog=$1 name=$2
  readelf -d "$prog" | grep NEEDED | grep -q libcudart || fail "$name does not link the CUDA runtime"
  "$prog" || fail "$name failed"
}

echo "== install nsightkit into $work/prefix"
cmake -S "$src" -B "$work/lib" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
  -DNSIGHTKIT_BUILD_TESTS=OFF -DNSIGHTKIT_BUILD_EXAMPLES=OFF -DNSIGHTKIT_BUILD_BENCHMARKS=OFF \
  -DNSIGHTKIT_INSTALL=ON -DCMAKE_INSTALL_PREFIX="$work/prefix" >"$work/lib.log"
cmake --install "$work/lib" >>"$work/lib.log"
test -f "$work/prefix/include/nsightkit/nsightkit.hpp"
test -f "$work/prefix/share/cmake/nsightkit/nsightkit-config.cmake"
test -f "$work/prefix/share/cmake/nsightkit/nsightkit-config-version.cmake"
test -f "$work/prefix/share/pkgconfig/nsightkit.pc"
if grep -q NSIGHTKIT_DISABLE "$work/prefix/share/cmake/nsightkit/nsightkit-targets.cmake"; then
  echo "the installed targets bake NSIGHTKIT_DISABLE in" >&2; exit 1
fi
mkdir -p "$work/out"

echo "== find_package consumer"
cmake -S "$here/installed" -B "$work/installed" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/installed.log"
cmake --build "$work/installed" >>"$work/installed.log"
run_instrumentation "$work/installed/consumer" enabled installed
run_instrumentation "$work/installed/consumer_disabled" disabled installed_disabled
if [ $have_toolkit = 1 ]; then
  [ -x "$work/installed/consumer_cuda" ] || fail "find_package(CUDAToolkit) found no CUDA::cudart"
  run_cuda "$work/installed/consumer_cuda" installed_cuda
fi

echo "== find_package with an incompatible version is refused"
mkdir -p "$work/badversion"
cat >"$work/badversion/CMakeLists.txt" <<CMK
cmake_minimum_required(VERSION 3.22)
project(badversion LANGUAGES CXX)
find_package(nsightkit 9.0 CONFIG REQUIRED)
CMK
if cmake -S "$work/badversion" -B "$work/badversion/build" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/badversion.log" 2>&1; then
  echo "find_package(nsightkit 9.0) unexpectedly succeeded" >&2; exit 1
fi

echo "== add_subdirectory consumer"
cmake -S "$here/subdir" -B "$work/subdir" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
  -DNSIGHTKIT_SOURCE_DIR="$src" >"$work/subdir.log"
cmake --build "$work/subdir" >>"$work/subdir.log"
run_instrumentation "$work/subdir/consumer" enabled subdir
if [ $have_toolkit = 1 ]; then
  [ -x "$work/subdir/consumer_cuda" ] || fail "find_package(CUDAToolkit) found no CUDA::cudart"
  run_cuda "$work/subdir/consumer_cuda" subdir_cuda
fi
if [ -d "$work/subdir/nsightkit/tests" ]; then
  echo "add_subdirectory built nsightkit's tests; they must be off for subprojects" >&2; exit 1
fi

echo "== pkg-config consumer"
if command -v pkg-config >/dev/null; then
  export PKG_CONFIG_PATH="$work/prefix/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  pkg-config --exists nsightkit
  # shellcheck disable=SC2046
  "$cxx" -std=c++17 -o "$work/pkgconfig_consumer" "$here/common/main.cpp" "$here/common/recorder.cpp" \
    $(pkg-config --cflags --libs nsightkit) -pthread
  run_instrumentation "$work/pkgconfig_consumer" enabled pkgconfig
  if [ $have_toolkit = 1 ]; then
    # The toolkit's own cudart-<version>.pc where its packages installed one, else -lcudart.
    cudart_pc=$(pkg-config --list-all 2>/dev/null | awk '$1 ~ /^cudart-[0-9.]+$/ {print $1; exit}' || true)
    if [ -n "$cudart_pc" ]; then
      cudart=$(pkg-config --cflags --libs "$cudart_pc")
    else
      cudart="-I$cuda_root/include -L$cuda_root/lib64 -Wl,-rpath,$cuda_root/lib64 -lcudart"
    fi
    echo "  CUDA runtime: $cudart"
    # shellcheck disable=SC2046,SC2086
    "$cxx" -std=c++17 -o "$work/pkgconfig_consumer_cuda" "$here/common/cuda_utilities.cpp" \
      $(pkg-config --cflags --libs nsightkit) $cudart -pthread
    run_cuda "$work/pkgconfig_consumer_cuda" pkgconfig_cuda
  fi
else
  echo "pkg-config not installed" >&2; exit 1
fi
echo "all consumers passed"
