#!/usr/bin/env bash
# Tests nsightkit's Conan 2 recipe (conanfile.py, test_package/) offline, from a clean state:
#   1. installs Conan from PyPI into a fresh virtualenv and uses a throwaway CONAN_HOME in the work
#      directory (~/.conan2 is never touched), then `conan profile detect`
#   2. conan create with packaging/conan/profiles/offline: fmt and NVTX3 from the system
#      ([platform_requires]: Debian's libfmt-dev, the CUDA toolkit's nvtx3) — test_package checks
#      through the Recorder that its ranges reach NVTX
#   3. the same with -o nsightkit/*:disable=True — test_package checks that NSIGHTKIT_DISABLE
#      reached its compile and nothing was emitted
#   4. NVTX3 as a Conan package (nvtx::nvtx, aliases nvtx3::nvtx3-cpp, as conan center's `nvtx`),
#      made locally from the CUDA toolkit's headers (packaging/conan/nvtx-standin) — the consumer
#      must compile against that package's include directory
#   5. the package's own CMake config (share/cmake/nsightkit, found through builddirs with
#      CMakeToolchain only) with tests/consumers/installed, enabled and disabled
#   6. PkgConfigDeps' nsightkit.pc with the pkg-config consumer
#   7. a C++14 profile is refused by validate()
# Usage: scripts/check-conan.sh [work dir (default build/conan-check)]
# Env: NSIGHTKIT_CONAN_VERSION (default 2.34.0), CXX (default g++)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/build/conan-check}
work=$(mkdir -p "$work" && cd "$work" && pwd)
conan_version=${NSIGHTKIT_CONAN_VERSION:-2.34.0}
cxx=${CXX:-g++}
offline="$root/packaging/conan/profiles/offline"
tested=()

step() { echo "::: [conan] $*"; }
fail() { echo "check-conan: FAILED: $*" >&2; exit 1; }
expect_in() {  # file, fixed string, what
  grep -qF -- "$2" "$1" || { tail -40 "$1" >&2; fail "$3: '$2' not in $1"; }
}

rm -rf "$work"
mkdir -p "$work"
step "install conan==$conan_version from PyPI into $work/venv"
python3 -m venv "$work/venv" || fail "python3 -m venv failed (Debian: apt-get install python3-venv)"
"$work/venv/bin/pip" install -q --disable-pip-version-check "conan==$conan_version" >"$work/pip.log" 2>&1 \
  || { cat "$work/pip.log" >&2; fail "pip install conan==$conan_version"; }
conan="$work/venv/bin/conan"
export CONAN_HOME="$work/conan-home"
"$conan" --version
"$conan" profile detect >"$work/detect.log" 2>&1 || { cat "$work/detect.log" >&2; fail "conan profile detect"; }
grep -E '^(compiler|compiler.version|compiler.cppstd|os|arch)=' "$CONAN_HOME/profiles/default" | tr '\n' ' '
echo

# The test_package build folder and CMakeUserPresets.json stay out of the source tree.
common=(--build=missing -nr
  -c "tools.cmake.cmake_layout:test_folder=$work/test_package"
  -c "tools.cmake.cmaketoolchain:user_presets=")

create() {  # log name, conan create args...
  local log="$work/$1.log"; shift
  if ! "$conan" create "$root" "${common[@]}" "$@" >"$log" 2>&1; then
    tail -60 "$log" >&2; fail "conan create $* (log: $log)"
  fi
}

step "create: offline profile (fmt and NVTX3 from the system)"
create offline -pr:h "$offline" -pr:b "$offline"
expect_in "$work/offline.log" "fmt/9.1.0 - Platform" "fmt from [platform_requires]"
expect_in "$work/offline.log" "nvtx/3.1.0 - Platform" "nvtx from [platform_requires]"
expect_in "$work/offline.log" "nsightkit: NVTX3 from CUDA::nvtx3, fmt from fmt::fmt" "providers seen by the consumer"
expect_in "$work/offline.log" "test_package ok: nsightkit" "test_package"
expect_in "$work/offline.log" "instrumentation enabled, 7 NVTX events recorded" "test_package (enabled)"
tested+=("conan create, offline profile (system fmt 9.1.0 + CUDA toolkit NVTX3): test_package enabled, 7 NVTX events")

step "create: -o nsightkit/*:disable=True"
create disabled -pr:h "$offline" -pr:b "$offline" -o "nsightkit/*:disable=True"
expect_in "$work/disabled.log" "instrumentation disabled, 0 NVTX events recorded" "test_package (disabled)"
tested+=("conan create -o nsightkit/*:disable=True: NSIGHTKIT_DISABLE reached the consumer, 0 NVTX events")

step "create: NVTX3 as a Conan package (local stand-in for conan center's nvtx)"
fmt_only="$work/fmt-only.profile"
printf 'include(default)\n\n[settings]\ncompiler.cppstd=17\n\n[platform_requires]\nfmt/9.1.0\n\n[conf]\ntools.cmake.cmaketoolchain:generator=Ninja\n' >"$fmt_only"
cuda_root=""
for d in "${CUDA_PATH:-}" "${CUDA_HOME:-}" /usr/local/cuda; do
  if [ -n "$d" ] && [ -f "$d/include/nvtx3/nvtx3.hpp" ]; then cuda_root=$d; break; fi
done
[ -n "$cuda_root" ] || fail "no CUDA toolkit with include/nvtx3 found (CUDA_PATH, CUDA_HOME, /usr/local/cuda)"
"$conan" create "$root/packaging/conan/nvtx-standin" --version 3.1.0 -pr:h "$fmt_only" -pr:b "$fmt_only" -nr \
  -o "nvtx/*:cuda_root=$cuda_root" >"$work/nvtx-standin.log" 2>&1 \
  || { tail -30 "$work/nvtx-standin.log" >&2; fail "creating the nvtx stand-in package"; }
rm -rf "$work/test_package"
create conan-nvtx -pr:h "$fmt_only" -pr:b "$fmt_only" -o "nvtx/*:cuda_root=$cuda_root"
expect_in "$work/conan-nvtx.log" "nsightkit: NVTX3 from nvtx3::nvtx3-cpp, fmt from fmt::fmt" "providers seen by the consumer"
expect_in "$work/conan-nvtx.log" "instrumentation enabled, 7 NVTX events recorded" "test_package (Conan nvtx)"
nvtx_pkg=$("$conan" cache path "nvtx/3.1.0:da39a3ee5e6b4b0d3255bfef95601890afd80709")
# /usr/local/include may also hold the toolkit's headers: check the compile used the package's.
ninja_file=$(find "$work/test_package" -name build.ninja | head -1)
[ -n "$ninja_file" ] || fail "test_package build.ninja not found under $work/test_package"
expect_in "$ninja_file" "$nvtx_pkg/include" "the nvtx package's include directory on the consumer's compile line"
tested+=("conan create with NVTX3 from a Conan package (nvtx::nvtx / nvtx3::nvtx3-cpp, CMakeDeps): test_package compiled with $nvtx_pkg/include")

step "the package's own CMake config (CMakeToolchain only, found through builddirs)"
pkg=$("$conan" cache path "nsightkit/0.1.0:da39a3ee5e6b4b0d3255bfef95601890afd80709")
for f in include/nsightkit/nsightkit.hpp include/nsightkit/range.hpp \
         share/cmake/nsightkit/nsightkit-config.cmake share/cmake/nsightkit/nsightkit-config-version.cmake \
         share/cmake/nsightkit/nsightkit-targets.cmake share/cmake/nsightkit/nsightkitDependencies.cmake \
         share/cmake/nsightkit/nsightkit-conan.cmake; do
  [ -f "$pkg/$f" ] || fail "package lacks $f"
done
[ ! -e "$pkg/share/pkgconfig" ] || fail "package still has share/pkgconfig (machine-specific paths)"
if [ -f "$root/LICENSE" ] && [ ! -f "$pkg/licenses/LICENSE" ]; then fail "package lacks licenses/LICENSE"; fi
[ -f "$root/LICENSE" ] || echo "check-conan: note: the repository has no LICENSE file, so the package has no licenses/ (not checked)"
# Run from the output folder: a --requires install writes CMakeUserPresets.json into the cwd.
mkdir -p "$work/own-config"
(cd "$work/own-config" && "$conan" install --requires="nsightkit/0.1.0" -pr:h "$offline" -pr:b "$offline" -nr \
  -g CMakeToolchain -g PkgConfigDeps --output-folder=.) >"$work/own-config.log" 2>&1 \
  || { tail -30 "$work/own-config.log" >&2; fail "conan install --requires nsightkit/0.1.0"; }
[ ! -f "$work/own-config/nsightkit-config.cmake" ] || fail "CMakeDeps config generated although only CMakeToolchain was asked for"
cmake -S "$root/tests/consumers/installed" -B "$work/own-config/build" -G Ninja \
  -DCMAKE_TOOLCHAIN_FILE="$work/own-config/conan_toolchain.cmake" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" >"$work/own-config/cmake.log" 2>&1 \
  || { tail -30 "$work/own-config/cmake.log" >&2; fail "configure tests/consumers/installed with nsightkit's own config"; }
expect_in "$work/own-config/build/CMakeCache.txt" "nsightkit_DIR:PATH=$pkg/share/cmake/nsightkit" "find_package(nsightkit) used the package's own config"
cmake --build "$work/own-config/build" >>"$work/own-config/cmake.log" 2>&1 \
  || { tail -30 "$work/own-config/cmake.log" >&2; fail "build tests/consumers/installed"; }
"$work/own-config/build/consumer"
"$work/own-config/build/consumer_disabled"
tested+=("nsightkit's own config from the package (CMakeToolchain + builddirs): tests/consumers/installed, enabled and disabled")

step "PkgConfigDeps: pkg-config consumer"
pc="$work/own-config/nsightkit.pc"
[ -f "$pc" ] || fail "PkgConfigDeps generated no nsightkit.pc"
# fmt and nvtx are [platform_requires] here, so nsightkit.pc requires neither: the consumer asks
# pkg-config for the system's fmt and names the CUDA toolkit's include directory itself.
# shellcheck disable=SC2046
PKG_CONFIG_PATH="$work/own-config" "$cxx" -std=c++17 -o "$work/own-config/pkgconfig_consumer" \
  "$root/tests/consumers/common/main.cpp" "$root/tests/consumers/common/recorder.cpp" \
  $(PKG_CONFIG_PATH="$work/own-config" pkg-config --cflags --libs nsightkit fmt) -I"$cuda_root/include" -pthread \
  || fail "compile the pkg-config consumer"
"$work/own-config/pkgconfig_consumer"
tested+=("PkgConfigDeps nsightkit.pc (+ system fmt.pc, -I CUDA include): tests/consumers/common/main.cpp")

step "validate(): a C++14 profile is refused"
if (cd "$work" && "$conan" install --requires="nsightkit/0.1.0" -pr:h "$offline" -pr:b "$offline" -nr \
     -s compiler.cppstd=14) >"$work/cpp14.log" 2>&1; then
  fail "conan install with compiler.cppstd=14 succeeded"
fi
expect_in "$work/cpp14.log" "Current cppstd (14) is lower than the required C++ standard (17)" "C++14 refusal message"
tested+=("compiler.cppstd=14 refused by validate() with a message naming C++17")

echo "check-conan: conan $conan_version, $(cmake --version | head -1), $("$cxx" --version | head -1)"
for t in "${tested[@]}"; do echo "  passed: $t"; done
echo "${#tested[@]} passed, 0 failed"
