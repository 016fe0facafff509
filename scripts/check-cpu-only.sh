#!/usr/bin/env bash
# nsightkit without the CUDA toolkit: what a CPU-only machine (or CI runner) sees.
#   1. installs PyPI's nvidia-nvtx (NVTX3's headers) into a virtualenv under the work directory
#   2. hides the CUDA toolkit from CMake and from the compiler (tests/consumers/hide_cuda.sh: no
#      nvcc on PATH, CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit, its include directories ignored and,
#      where the compiler searches one of them by itself, dropped from its search path); checks
#      that <cuda_runtime_api.h> and <nvtx3/nvToolsExt.h> are then unreachable
#   3. configures nsightkit (NVTX3 must come from the PyPI package, found through the virtualenv's
#      Python), builds its tests (no examples or benchmarks: the CI machine has 2 cores; every
#      public header on its own except the CUDA-only ones) and runs the CPU test suite
#      (ctest -LE "gpu|packaging", less the Python tools' and the browser's tests, which run
#      unchanged in the other suites); no program built may link a CUDA library
#   4. installs it and tests the NVTX3 provider order with a small consumer (tests/consumers/
#      probe), each case checking the status line and which nvtx3.hpp the compiler read:
#        a. NSIGHTKIT_NVTX3_INCLUDE_DIR wins over the toolkit      b. so does an nvtx3 CMake package
#        c. the toolkit (if this machine has one) wins over PyPI  d. a CUDA 12.x-like toolkit without
#           nvtx3.hpp: the headers come from PyPI, built and run   e. NSIGHTKIT_NVTX3_PYPI_DIR
#        e2. the same with nvidia-nvtx-cu12 in a pip install --target directory
#        f. pkg-config with the package's nvtx3_finder: its order (the toolkit where there is one,
#           else PyPI), then PyPI's directory (--source pypi) for a probe built and run
# Usage: scripts/check-cpu-only.sh [work dir (default build/cpu-only)]
# Env: CXX (default g++; CC for C sources), NSIGHTKIT_NVTX_PIP (what pip installs, default
#      nvidia-nvtx; a wheel file works too), JOBS (default: nproc). For step 3 only (the consumers
#      of step 4 are built plain): CPU_ONLY_BUILD_TYPE (default Release at -O2), CPU_ONLY_FLAGS
#      (added to the C and C++ flags: sanitizers), CPU_ONLY_CMAKE_ARGS (more -D arguments, split
#      at spaces). run-tests.sh runs it with clang++ and ASan+UBSan: it is CI's sanitizer suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/build/cpu-only}
work=$(mkdir -p "$work" && cd "$work" && pwd)
cxx=${CXX:-g++}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
gen=(-G Ninja)
tested=()
untested=()

step() { echo "::: [cpu-only] $*"; }
fail() { echo "check-cpu-only: FAILED: $*" >&2; exit 1; }
# shellcheck source=check-lib.sh
source "$root/scripts/check-lib.sh"

rm -rf "$work"
mkdir -p "$work"

step "PyPI's nvidia-nvtx into $work/venv"
python3 -m venv "$work/venv" || fail "python3 -m venv failed (Debian: apt-get install python3-venv)"
py="$work/venv/bin/python"
"$work/venv/bin/pip" install -q --disable-pip-version-check "${NSIGHTKIT_NVTX_PIP:-nvidia-nvtx}" >"$work/pip.log" 2>&1 \
  || { cat "$work/pip.log" >&2; fail "pip install ${NSIGHTKIT_NVTX_PIP:-nvidia-nvtx}"; }
pypi_inc=$("$py" "$root/cmake/nsightkit-find-nvtx3.py" --source pypi) || fail "the installed nvidia-nvtx has no nvtx3/nvtx3.hpp"
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "  $("$py" -m pip show nvidia-nvtx 2>/dev/null | grep -E '^(Name|Version)' | tr '\n' ' ')-> $pypi_inc"

step "hide the CUDA toolkit"
# shellcheck source=../tests/consumers/hide_cuda.sh
source "$root/tests/consumers/hide_cuda.sh" "$cxx"
nocuda_check || fail "could not hide the CUDA toolkit"
echo "  hidden: ${NOCUDA_HIDDEN:-nothing (no toolkit on this machine)}"
echo "  compiler flags: ${NOCUDA_CXXFLAGS:-none needed}"
nocuda_env=(env -u CUDA_PATH -u CUDA_HOME -u CUDAToolkit_ROOT -u NSIGHTKIT_NVTX3_INCLUDE_DIR
  -u NSIGHTKIT_NVTX3_PYPI_DIR "PATH=$NOCUDA_PATH")

step "configure, build and test nsightkit's tests (NVTX3 from PyPI)"
# Lean by default, for a 2-core CI machine: the tests only (no examples, no benchmarks), -O2
# without debug information.
b="$work/build"
suite_flags=${CPU_ONLY_FLAGS:-}
read -r -a suite_args <<<"${CPU_ONLY_CMAKE_ARGS:-}"
# NOCUDA_CMAKE_ARGS sets CMAKE_CXX_FLAGS to the hiding flags alone (the probes below use it as
# is); the later -D here replaces it with those flags plus the suite's.
"${nocuda_env[@]}" cmake -S "$root" -B "$b" "${gen[@]}" -DCMAKE_BUILD_TYPE="${CPU_ONLY_BUILD_TYPE:-Release}" \
  "-DCMAKE_CXX_FLAGS_RELEASE=-O2" -DCMAKE_CXX_COMPILER="$cxx" -DNSIGHTKIT_CUDA=OFF -DNSIGHTKIT_BUILD_EXAMPLES=OFF \
  -DNSIGHTKIT_BUILD_BENCHMARKS=OFF "${NOCUDA_CMAKE_ARGS[@]}" \
  "-DCMAKE_CXX_FLAGS=${NOCUDA_CXXFLAGS}${suite_flags:+ $suite_flags}" "-DCMAKE_C_FLAGS=$suite_flags" \
  ${suite_args[@]+"${suite_args[@]}"} -DNSIGHTKIT_PYTHON_EXECUTABLE="$py" -DCMAKE_INSTALL_PREFIX="$work/prefix" \
  >"$work/configure.log" 2>&1 || { tail -40 "$work/configure.log" >&2; fail "configure"; }
expect_in "$work/configure.log" "nsightkit: NVTX3 from PyPI's nvidia-nvtx ($pypi_inc" "NVTX3 provider of the build"
grep -E "^-- nsightkit" "$work/configure.log" | sed 's/^/  /'
# Every target is built. Without CUDA the tests' CMake leaves the CUDA-only headers out of the
# "each header on its own" objects and names them (the CUDA utilities' headers stop with #error
# without the CUDA runtime's headers, and cupti.hpp needs CUPTI's).
cuda_only=$(sed -n 's/.*these headers are not compiled on their own: //p' "$work/configure.log")
[ -n "$cuda_only" ] || fail "the configure named no CUDA-only header (toolkit not hidden?)"
headers_built=$(ninja -C "$b" -t targets all | grep -cE '^tests/CMakeFiles/standalone_headers_[a-z]+\.dir/standalone/[a-z]+/[a-z_]+\.cpp\.o' || true)
[ "$headers_built" -gt 10 ] || fail "only $headers_built standalone header objects"
start=$(date +%s)
"${nocuda_env[@]}" ninja -C "$b" -j "$jobs" >"$work/build.log" 2>&1 \
  || { grep -E "error|Error" -A3 "$work/build.log" | sed -n 1,60p >&2; fail "build (log: $work/build.log)"; }
echo "  built in $(($(date +%s) - start)) s (headers on their own: $headers_built objects; CUDA-only, not built: $cuda_only)"
# The CPU suite, less what runs in the other suites unchanged and needs nothing compiled here:
# the Python tools' unit tests (merge_*, launch_*) and the HTML page in headless Chromium
# (report_html_cap/page/scale/tool/trace; the page writer's C++ is test_report_html's).
python_only='^(merge_.*|launch_.*|report_html_(cap|page|scale|tool|trace))$'
# Under a sanitizer, resident memory is the sanitizer allocator's (its quarantine alone keeps up
# to 256 MiB of freed blocks): the memory tests (report_memory_*) judge the report's memory in
# the gcc suite, unsanitized.
if [[ "${CPU_ONLY_FLAGS:-}" == *sanitize* ]]; then
  python_only='^(merge_.*|launch_.*|report_html_(cap|page|scale|tool|trace)|report_memory_.*)$'
fi
"${nocuda_env[@]}" ctest --test-dir "$b" -j "$jobs" -LE "gpu|packaging" -E "$python_only" --no-tests=error \
  --output-on-failure >"$work/ctest.log" 2>&1 || { grep -vE "^ +[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed" "$work/ctest.log" | tail -60 >&2; fail "ctest"; }
tail -3 "$work/ctest.log" | sed 's/^/  /'
passed=$(grep -oE '[0-9]+ tests? passed|100% tests passed, 0 tests failed out of [0-9]+' "$work/ctest.log" | tail -1)
# Nothing built may need a CUDA library.
while IFS= read -r exe; do
  if readelf -d "$exe" 2>/dev/null | grep NEEDED | grep -ciE 'libcuda|libcudart|libcupti|libnvrtc' >/dev/null; then
    fail "$exe links a CUDA library"
  fi
done < <(find "$b" -type f -perm -u+x -newer "$work/configure.log" ! -name '*.sh' ! -name '*.py')
tested+=("nsightkit's tests built ($cxx${suite_flags:+ $suite_flags}) and the CPU suite run with the toolkit hidden and NVTX3 from PyPI ($passed); no program links a CUDA library; $headers_built headers compile on their own")

"${nocuda_env[@]}" cmake --install "$b" >"$work/install.log" 2>&1 || { tail -20 "$work/install.log" >&2; fail "install"; }
prefix="$work/prefix"

# probe <name> <expected source text> <expected nvtx3.hpp directory> <cmake args...>
# Configures and builds tests/consumers/probe against the install, checks the status line and the
# nvtx3.hpp the compiler read, runs the probe. Environment: the caller's (set "probe_env").
probe_env=("${nocuda_env[@]}")
probe() {
  local name=$1 source=$2 want=$3 dir="$work/probe-$1"; shift 3
  "${probe_env[@]}" cmake -S "$root/tests/consumers/probe" -B "$dir" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_PREFIX_PATH="$prefix" "$@" >"$dir.log" 2>&1 || { tail -30 "$dir.log" >&2; fail "$name: configure"; }
  expect_in "$dir.log" "NVTX3 from $source" "$name: NVTX3 provider"
  "${probe_env[@]}" cmake --build "$dir" >>"$dir.log" 2>&1 || { tail -30 "$dir.log" >&2; fail "$name: build"; }
  local used n=0
  ninja -C "$dir" -t deps >"$dir.deps"
  # Every object (the probe's and nsightkit's library built beside it) reads the same NVTX3.
  while IFS= read -r used; do
    n=$((n + 1))
    [ "$(cd "$(dirname "$used")/.." && pwd -P)" = "$(cd "$want" && pwd -P)" ] \
      || fail "$name: the compiler read $used, expected the one in $want/nvtx3"
  done < <(sed -nE '/nvtx3\/(nvtx3\.hpp|nvToolsExt\.h)$/{s/^ *//;p;}' "$dir.deps" | sort -u)
  [ "$n" -gt 0 ] || fail "$name: no object read NVTX3's headers"
  "$dir/probe" >>"$dir.log" || { tail -5 "$dir.log" >&2; fail "$name: the probe failed"; }
  echo "  $name: $(grep -m1 -o "NVTX3 from .*" "$dir.log" | cut -c1-150)"
}

step "provider order (tests/consumers/probe against the install)"
# Another copy of NVIDIA's headers, standing for the user's own: the PyPI package's include tree.
mkdir -p "$work/user-nvtx"
cp -r "$pypi_inc" "$work/user-nvtx/include"
# ... and as an NVTX3 CMake package with NVIDIA/NVTX's target names (nvtx3::nvtx3-cpp).
mkdir -p "$work/user-nvtx/lib/cmake/nvtx3"
cat >"$work/user-nvtx/lib/cmake/nvtx3/nvtx3-config.cmake" <<'CMK'
# Test fixture: the targets NVIDIA/NVTX's installed CMake package defines.
get_filename_component(_nvtx3_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET nvtx3::nvtx3-c)
  add_library(nvtx3::nvtx3-c INTERFACE IMPORTED)
  set_target_properties(nvtx3::nvtx3-c PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_nvtx3_prefix}/include"
    INTERFACE_LINK_LIBRARIES "${CMAKE_DL_LIBS}")
  add_library(nvtx3::nvtx3-cpp INTERFACE IMPORTED)
  set_target_properties(nvtx3::nvtx3-cpp PROPERTIES INTERFACE_LINK_LIBRARIES nvtx3::nvtx3-c)
endif()
CMK
toolkit_inc=""
for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
  if [ -n "$d" ] && [ -f "$d/include/nvtx3/nvtx3.hpp" ] && [ -x "$d/bin/nvcc" ]; then toolkit_inc="$d/include"; break; fi
done

# a, b, c: the toolkit visible (where there is one); the user's NVTX3 must still win.
probe_env=(env -u NSIGHTKIT_NVTX3_INCLUDE_DIR -u NSIGHTKIT_NVTX3_PYPI_DIR)
probe a-include-dir "NSIGHTKIT_NVTX3_INCLUDE_DIR ($work/user-nvtx/include)" "$work/user-nvtx/include" \
  -DNSIGHTKIT_NVTX3_INCLUDE_DIR="$work/user-nvtx/include" -DNSIGHTKIT_PYTHON_EXECUTABLE="$py"
tested+=("a. NSIGHTKIT_NVTX3_INCLUDE_DIR is taken first$([ -n "$toolkit_inc" ] && echo ", before the toolkit")")
probe b-nvtx3-package "the installed nvtx3::nvtx3-cpp package" "$work/user-nvtx/include" \
  -Dnvtx3_DIR="$work/user-nvtx/lib/cmake/nvtx3" -DNSIGHTKIT_PYTHON_EXECUTABLE="$py"
tested+=("b. an nvtx3 CMake package (nvtx3::nvtx3-cpp) is taken first$([ -n "$toolkit_inc" ] && echo ", before the toolkit")")
if [ -n "$toolkit_inc" ]; then
  probe c-toolkit "the CUDA toolkit" "$toolkit_inc" -DNSIGHTKIT_PYTHON_EXECUTABLE="$py"
  tested+=("c. the CUDA toolkit ($toolkit_inc) before PyPI's nvidia-nvtx (installed in the Python given)")
else
  untested+=("c. the toolkit before PyPI: this machine has no CUDA toolkit with nvtx3.hpp")
fi

# d: a CUDA 12.0-12.8-like toolkit: nvcc, the runtime's headers and library, NVTX3's C headers,
# but no nvtx3/nvtx3.hpp. The real toolkit stays hidden.
fake="$work/cuda-12.4"
mkdir -p "$fake/bin" "$fake/include/nvtx3" "$fake/lib64"
cat >"$fake/bin/nvcc" <<'SH'
#!/bin/sh
# Stand-in for CUDA 12.4's nvcc: only what CMake's FindCUDAToolkit asks.
case "$*" in *--version*) echo "nvcc: NVIDIA (R) Cuda compiler driver"; echo "Cuda compilation tools, release 12.4, V12.4.131" ;; esac
exit 0
SH
chmod +x "$fake/bin/nvcc"
printf '{\n  "cuda" : { "name" : "CUDA SDK", "version" : "12.4.1" }\n}\n' >"$fake/version.json"
# The headers FindCUDAToolkit looks for, as stand-ins no file may include; no cuda_runtime_api.h, so
# nsightkit's library (compiled in the probe's build) sees no CUDA runtime (config.hpp).
for h in cuda_runtime.h cuda.h; do printf '#error "stand-in for a CUDA 12.4 toolkit"\n' >"$fake/include/$h"; done
(cd "$pypi_inc/nvtx3" && cp -r nvToolsExt*.h nvtxDetail "$fake/include/nvtx3/")
[ ! -e "$fake/include/nvtx3/nvtx3.hpp" ] || fail "the 12.x-like toolkit has nvtx3.hpp"
: >"$fake/lib64/libcudart.so"
probe_env=("${nocuda_env[@]}" "PATH=$fake/bin:$NOCUDA_PATH")
probe d-cuda12-layout "PyPI's nvidia-nvtx ($pypi_inc" "$pypi_inc" "-DCMAKE_IGNORE_PATH=$NOCUDA_HIDDEN" \
  "-DCMAKE_CXX_FLAGS=$NOCUDA_CXXFLAGS" -DCUDAToolkit_ROOT="$fake" -DNSIGHTKIT_PYTHON_EXECUTABLE="$py"
expect_in "$work/probe-d-cuda12-layout.log" "the CUDA toolkit 12.4.131 ($fake/include) has NVTX3's C headers but no nvtx3/nvtx3.hpp" \
  "d: the status says why the 12.x toolkit was passed over"
tested+=("d. a CUDA 12.4-like toolkit without nvtx3.hpp: NVTX3 from PyPI's nvidia-nvtx, probe built and run")

# e: PyPI through NSIGHTKIT_NVTX3_PYPI_DIR (no Python asked: the interpreter given does not exist).
probe_env=("${nocuda_env[@]}")
probe e-pypi-dir "PyPI's nvidia-nvtx in NSIGHTKIT_NVTX3_PYPI_DIR ($pypi_inc)" "$pypi_inc" "${NOCUDA_CMAKE_ARGS[@]}" \
  -DNSIGHTKIT_NVTX3_PYPI_DIR="$site" -DNSIGHTKIT_PYTHON_EXECUTABLE="$work/no-such-python"
tested+=("e. NSIGHTKIT_NVTX3_PYPI_DIR=<site-packages> (no Python needed)")

# e2: the CUDA 12 flavour (nvidia-nvtx-cu12, headers in nvidia/nvtx/include from 12.9 on) in a
# pip install --target directory.
if "$work/venv/bin/pip" install -q --disable-pip-version-check --target "$work/pip-target-cu12" \
     "nvidia-nvtx-cu12>=12.9" >"$work/pip-cu12.log" 2>&1; then
  cu12_inc="$work/pip-target-cu12/nvidia/nvtx/include"
  [ -f "$cu12_inc/nvtx3/nvtx3.hpp" ] || fail "nvidia-nvtx-cu12 has no nvidia/nvtx/include/nvtx3/nvtx3.hpp"
  probe e2-pypi-target-cu12 "PyPI's nvidia-nvtx in NSIGHTKIT_NVTX3_PYPI_DIR ($cu12_inc)" "$cu12_inc" \
    "${NOCUDA_CMAKE_ARGS[@]}" -DNSIGHTKIT_NVTX3_PYPI_DIR="$work/pip-target-cu12" \
    -DNSIGHTKIT_PYTHON_EXECUTABLE="$work/no-such-python"
  tested+=("e2. nvidia-nvtx-cu12 (nvidia/nvtx/include) in a pip install --target directory")
else
  untested+=("e2. nvidia-nvtx-cu12: pip could not install it ($work/pip-cu12.log)")
fi

step "f. pkg-config with the package's nvtx3_finder"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
finder=$(pkg-config --variable=nvtx3_finder nsightkit)
# The finder looks in the usual toolkit places itself (/usr/local/cuda, nvcc on PATH, ...): in
# its order it must name the toolkit where this machine has one, else PyPI's package.
first=$("${nocuda_env[@]}" "$py" "$finder" --define-variable) || fail "nvtx3_finder found nothing"
want_first=${toolkit_inc:-$pypi_inc}
[ "$first" = "--define-variable=nvtx3_includedir=$want_first" ] || fail "nvtx3_finder gave $first, expected $want_first"
# PyPI's, asked for (the answer on a machine without the toolkit), for the compile below.
define=$("${nocuda_env[@]}" "$py" "$finder" --source pypi --define-variable) || fail "nvtx3_finder --source pypi found nothing"
[ "$define" = "--define-variable=nvtx3_includedir=$pypi_inc" ] || fail "nvtx3_finder --source pypi gave $define, expected $pypi_inc"
# (probe.cpp on its own first: its dependency file says which nvtx3.hpp it read.) The installed
# libnsightkit was built with the suite's flags (sanitizers): the probe that links it takes them too.
# shellcheck disable=SC2046,SC2086
"${nocuda_env[@]}" "$cxx" $NOCUDA_CXXFLAGS $suite_flags -std=c++17 -MD -MF "$work/probe_pc.d" -c -o "$work/probe_pc.o" \
  "$root/tests/consumers/common/probe.cpp" $(pkg-config "$define" --cflags nsightkit) || fail "pkg-config probe: compile"
# (A compiled-mode file reads NVTX3's C header only, not nvtx3.hpp.)
grep -qF "$pypi_inc/nvtx3/nvToolsExt.h" "$work/probe_pc.d" || fail "pkg-config probe: not compiled with PyPI's NVTX3"
! tr ' \\' '\n\n' <"$work/probe_pc.d" | grep -E '/nvtx3/[^/]+$' | grep -vF "$pypi_inc/nvtx3/" \
  || fail "pkg-config probe: it read the NVTX3 headers above besides PyPI's"
# shellcheck disable=SC2046,SC2086
"${nocuda_env[@]}" "$cxx" $NOCUDA_CXXFLAGS $suite_flags -std=c++17 -o "$work/probe_pc" "$work/probe_pc.o" \
  "$root/tests/consumers/common/recorder.cpp" $(pkg-config "$define" --cflags --libs nsightkit) -pthread \
  || fail "pkg-config probe: compile and link"
"$work/probe_pc" | sed 's/^/  /'
tested+=("f. pkg-config: nvtx3_finder -> ${first#--define-variable=nvtx3_includedir=} in its order, --source pypi -> $define, probe built (toolkit hidden) and run")

echo "check-cpu-only: $(cmake --version | sed -n 1p), $("$cxx" --version | sed -n 1p)"
for t in "${tested[@]}"; do echo "  passed: $t"; done
for t in "${untested[@]}"; do echo "  NOT TESTED: $t"; done
echo "${#tested[@]} passed, 0 failed"
