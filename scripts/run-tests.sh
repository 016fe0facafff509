#!/usr/bin/env bash
# Runs every nsightkit test on this machine: the same script CI runs (.ci/run).
#   1. g++ (-O2, no debug information): all tests, examples and benchmarks built, in the compiled
#      mode nsightkit::nsightkit gives (libnsightkit), the range, module, pool and graph tests also
#      header-only; nvcc TUs when CUDA exists
#   2. g++ with NSIGHTKIT_DISABLE=ON: the suite again (less benchmarks and the packaging test),
#      proving the disabled build silent
#   3. clang++ with ThreadSanitizer: the tests labelled "tsan" (only their executables are built);
#      clang++ with ASan+UBSan: the tests labelled "cuda" (CPU tests that need the toolkit)
#   4. clang-format check, Doxygen API reference with warnings as errors
#   5. packaging: Conan 2 create (offline) and the vcpkg overlay port's install tree
#   6. CPU only, with clang++ and AddressSanitizer + UndefinedBehaviorSanitizer: the CUDA toolkit
#      hidden, NVTX3 from PyPI's nvidia-nvtx (installed from PyPI): the tests and examples built
#      header-only (NSIGHTKIT_TEST_HEADER_ONLY: what a plain -I user gets), the CPU suite run under
#      the sanitizers (each header on its own in the enabled mode only), and the NVTX3 provider
#      order (scripts/check-cpu-only.sh): one build is the sanitizer suite, the CPU-only check and
#      the whole suite header-only.
# Tests labelled "gpu" report themselves skipped where no CUDA device exists.
# --quick: only suite 1's unit tests (the Catch2 executables, label "unit"), built in its tree
# (build/ci/gcc, incrementally), for a change to be checked in minutes; CI runs everything.
# Usage: scripts/run-tests.sh [--quick] [--no-install]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
quick=0 install=1
for arg in "$@"; do
  case $arg in
    --quick) quick=1 ;;
    --no-install) install=0 ;;
    *) echo "usage: scripts/run-tests.sh [--quick] [--no-install]" >&2; exit 2 ;;
  esac
done
if [ $install = 1 ]; then "$root/scripts/install-deps.sh"; fi
if [ -d /usr/local/cuda/bin ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
jobs=$(nproc 2>/dev/null || echo 2)
out="$root/build/ci"
failed=()
started=$(date +%s)
took() { echo "  ($1: $(($(date +%s) - $2)) s; $(($(date +%s) - started)) s since the start)"; }

run_suite() {  # name, ctest args, cmake args... (build_target=T run_suite ...: only target T built)
  local name=$1 ctest_args=$2 build_target=${build_target:-} t0; shift 2
  t0=$(date +%s)
  echo "::: [$name] configure"
  cmake -S "$root" -B "$out/$name" -G Ninja "$@" >"$out/$name.configure.log" 2>&1 \
    || { cat "$out/$name.configure.log"; failed+=("$name (configure)"); return; }
  echo "::: [$name] build${build_target:+ (target $build_target)}"
  if ! cmake --build "$out/$name" -j "$jobs" ${build_target:+--target "$build_target"} >"$out/$name.build.log" 2>&1; then
    grep -E "error|Error" -A3 "$out/$name.build.log" | sed -n 1,60p; failed+=("$name (build)"); return
  fi
  took "$name build" "$t0"
  echo "::: [$name] test"
  # shellcheck disable=SC2086
  if ! ctest --test-dir "$out/$name" -j "$jobs" --output-on-failure $ctest_args; then
    failed+=("$name (tests)")
  fi
  took "$name" "$t0"
}

mkdir -p "$out"
# -O2 without debug information: -g costs g++ about half as much again per test file, and
# nothing here reads it.
release_o2=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" "-DCMAKE_CUDA_FLAGS_RELEASE=-O2 -DNDEBUG")
nvtx_venv="$out/venv-nvtx"
hta_venv="$out/venv-hta"
# The quick run configures the gcc tree exactly as the full run does, so each keeps the other's
# build; it runs no Python test, so it makes no virtual environment.
gcc_args=("${release_o2[@]}" -DCMAKE_CXX_COMPILER=g++
  "-DNSIGHTKIT_TEST_PYTHON_NVTX=$nvtx_venv/bin/python" "-DNSIGHTKIT_TEST_PYTHON_HTA=$hta_venv/bin/python")
if [ $quick = 1 ]; then
  build_target=nsightkit_unit_tests run_suite gcc "-L unit --no-tests=error" "${gcc_args[@]}"
  if [ ${#failed[@]} -ne 0 ]; then
    echo "FAILED: ${failed[*]}"
    exit 1
  fi
  echo "unit tests passed (gcc); the full run (scripts/run-tests.sh) runs every suite"
  exit 0
fi
# A Python with PyPI's nvtx package: `nsightkit profile` runs a Python script annotated with it.
if [ ! -x "$nvtx_venv/bin/python" ] || ! "$nvtx_venv/bin/python" -c "import nvtx" 2>/dev/null; then
  python3 -m venv "$nvtx_venv" && "$nvtx_venv/bin/pip" install -q nvtx \
    || echo "could not install PyPI's nvtx package: the Python profile test will be skipped"
fi
# A Python with PyPI's HolisticTraceAnalysis: HTA loads a Kineto-schema trace (report_kineto_hta).
# Made once and kept; HTA's runtime needs only these (it also declares JupyterLab and pytest, for
# its notebooks and its own tests: 500 MB installed instead of 290).
if [ ! -x "$hta_venv/bin/python" ] ||
  ! "$hta_venv/bin/python" -c "from hta.trace_analysis import TraceAnalysis" 2>/dev/null; then
  python3 -m venv "$hta_venv" &&
    "$hta_venv/bin/pip" install -q numpy pandas plotly networkx pydot psutil pyyaml &&
    "$hta_venv/bin/pip" install -q --no-deps HolisticTraceAnalysis ||
    echo "could not install HTA from PyPI: the Kineto-schema trace test will be skipped"
fi
run_suite gcc "--no-tests=error" "${gcc_args[@]}"
# The packaging test (consumers) builds its programs with the plain compiler, the same as in the gcc
# suite, and benchmarks have nothing to measure when disabled: both are left out here.
run_suite disabled "-LE gpu|packaging" "${release_o2[@]}" -DCMAKE_CXX_COMPILER=g++ -DNSIGHTKIT_CUDA=OFF \
  -DNSIGHTKIT_DISABLE=ON -DNSIGHTKIT_BUILD_BENCHMARKS=OFF
# Only the executables of the "tsan" tests are built (target nsightkit_tsan_tests).
build_target=nsightkit_tsan_tests run_suite clang-tsan "-L tsan --no-tests=error" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DNSIGHTKIT_CUDA=OFF -DNSIGHTKIT_BUILD_BENCHMARKS=OFF -DNSIGHTKIT_BUILD_EXAMPLES=OFF \
  "-DCMAKE_CXX_FLAGS=-fsanitize=thread" "-DCMAKE_C_FLAGS=-fsanitize=thread"

run_check() {  # name, command...
  local name=$1 t0; shift
  t0=$(date +%s)
  echo "::: [$name]"
  if ! "$@" >"$out/$name.log" 2>&1; then
    tail -40 "$out/$name.log"; failed+=("$name")
  else
    tail -3 "$out/$name.log"
  fi
  took "$name" "$t0"
}
# The CPU tests that need the CUDA toolkit (label "cuda": the pinned pool, the prefetcher, graph
# capture's fail-soft paths, CudaError, the CUPTI component's fallback) under ASan+UBSan too: the
# sanitizer suite below hides the toolkit, so only their executables are built here.
asan="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
build_target=nsightkit_cuda_tests run_suite clang-asan-cuda "-L cuda --no-tests=error" \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DNSIGHTKIT_CUDA=OFF \
  -DNSIGHTKIT_BUILD_BENCHMARKS=OFF -DNSIGHTKIT_BUILD_EXAMPLES=OFF -DNSIGHTKIT_TEST_HEADER_MODES=enabled \
  "-DCMAKE_CXX_FLAGS=$asan" "-DCMAKE_C_FLAGS=$asan"

run_check format bash "$root/scripts/check-format.sh"
run_check docs bash "$root/scripts/build-docs.sh" "$out/docs"
run_check conan bash "$root/scripts/check-conan.sh" "$out/conan"
run_check vcpkg-port bash "$root/scripts/check-vcpkg-port.sh" "$out/vcpkg"
# The sanitizer suite, header-only: each header on its own is compiled in one mode here (clang++),
# in all four in the gcc suite; the Python tools' tests and the packaging test run in the gcc suite.
run_check cpu-only-asan env CXX=clang++ CC=clang CPU_ONLY_BUILD_TYPE=Debug CPU_ONLY_FLAGS="$asan" \
  CPU_ONLY_CMAKE_ARGS="-DNSIGHTKIT_BUILD_EXAMPLES=ON -DNSIGHTKIT_TEST_HEADER_MODES=enabled -DNSIGHTKIT_TEST_HEADER_ONLY=ON" \
  bash "$root/scripts/check-cpu-only.sh" "$out/cpu-only"

if [ ${#failed[@]} -ne 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all suites passed: gcc, disabled, clang-tsan, clang-asan-cuda, format, docs, conan, vcpkg-port, cpu-only-asan"
