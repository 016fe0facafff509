#!/usr/bin/env bash
# Tests nsightkit's Conan 2 recipe (conanfile.py, test_package/) offline, from a clean state:
#   1. installs Conan (and PyPI's nvidia-nvtx, for step 7) from PyPI into a fresh virtualenv and
#      uses a throwaway CONAN_HOME in the work directory (~/.conan2 is never touched), then
#      `conan profile detect`
#   2. conan create with packaging/conan/profiles/offline: fmt, NVTX3 and nlohmann_json from the
#      system ([platform_requires]: Debian's libfmt-dev, the CUDA toolkit's nvtx3, Debian's
#      nlohmann-json3-dev) — the package is built (libnsightkit, the nsightkit command, its NVTX tool
#      libraries); test_package, compiled in the compiled mode, checks through the Recorder that its
#      ranges reach NVTX; it links no libfmt and runs with a broken libfmt first on
#      LD_LIBRARY_PATH; the packaged command runs (--version) and `nsightkit profile` reports the
#      ranges of an unmodified NVTX program through the packaged tool library
#   3. the same with -o nsightkit/*:disable=True — test_package checks that NSIGHTKIT_DISABLE
#      reached its compile and nothing was emitted
#   4. NVTX3 as a Conan package (nvtx::nvtx, aliases nvtx3::nvtx3-cpp, as conan center's `nvtx`),
#      made locally from the CUDA toolkit's headers (packaging/conan/nvtx-standin) — the consumer
#      must compile against that package's include directory
#   5. -o nsightkit/*:nvtx=system (no nvtx requirement): NVTX3 from the CUDA toolkit
#   7. without the CUDA toolkit (hidden as tests/consumers/hide_cuda.sh does) and nvtx=system:
#      NVTX3 from PyPI's nvidia-nvtx (NSIGHTKIT_NVTX3_PYPI_DIR)
#   8. the package's own CMake config (share/cmake/nsightkit, found through builddirs with
#      CMakeToolchain only) with tests/consumers/installed, enabled and disabled
#   9. PkgConfigDeps' nsightkit.pc with the pkg-config consumer
#  10. a C++14 profile is refused by validate()
#  11. conan create with another major of {fmt} as [platform_requires] (test_package then links no
#      libfmt either): Debian's newest libfmt-dev (experimental's 12.2.0 when written) fetched
#      with apt into the work directory and unpacked there, or NSIGHTKIT_CONAN_EXTRA_FMT=<version>=<dir of its
#      fmt-config.cmake>; where neither can be had it says NOT TESTED
# Usage: scripts/check-conan.sh [work dir (default build/conan-check)]
# Env: NSIGHTKIT_CONAN_VERSION (default 2.34.0), CXX (default g++), NSIGHTKIT_CONAN_EXTRA_FMT
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/build/conan-check}
work=$(mkdir -p "$work" && cd "$work" && pwd)
conan_version=${NSIGHTKIT_CONAN_VERSION:-2.34.0}
cxx=${CXX:-g++}
offline="$root/packaging/conan/profiles/offline"
tested=()
untested=()

step() { echo "::: [conan] $*"; }
fail() { echo "check-conan: FAILED: $*" >&2; exit 1; }
# shellcheck source=check-lib.sh
source "$root/scripts/check-lib.sh"

rm -rf "$work"
mkdir -p "$work"
step "install conan==$conan_version from PyPI into $work/venv"
python3 -m venv "$work/venv" || fail "python3 -m venv failed (Debian: apt-get install python3-venv)"
"$work/venv/bin/pip" install -q --disable-pip-version-check "conan==$conan_version" nvidia-nvtx >"$work/pip.log" 2>&1 \
  || { cat "$work/pip.log" >&2; fail "pip install conan==$conan_version nvidia-nvtx"; }
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

# test_package_binary: the test_package executable of the last create.
test_package_binary() {
  local tp
  tp=$(find "$work/test_package" -type f -name test_package -perm -u+x | sed -n 1p)
  [ -n "$tp" ] || fail "test_package binary not found under $work/test_package"
  echo "$tp"
}
# A directory of broken libfmt.so files: a program that needs libfmt fails to start with it first
# on LD_LIBRARY_PATH.
mkdir -p "$work/no-libfmt"
for so in libfmt.so.9 libfmt.so.10 libfmt.so.11 libfmt.so.12; do echo "not a library" >"$work/no-libfmt/$so"; done

step "create: offline profile (fmt, NVTX3 and nlohmann_json from the system)"
create offline -pr:h "$offline" -pr:b "$offline"
expect_in "$work/offline.log" "fmt/9.1.0 - Platform" "fmt from [platform_requires]"
expect_in "$work/offline.log" "nvtx/3.1.0 - Platform" "nvtx from [platform_requires]"
expect_in "$work/offline.log" "nsightkit: NVTX3 from the CUDA toolkit" "providers seen by the consumer"
expect_in "$work/offline.log" "fmt from fmt::fmt" "providers seen by the consumer"
expect_in "$work/offline.log" "test_package ok: nsightkit" "test_package"
expect_in "$work/offline.log" "instrumentation enabled, 7 NVTX events recorded, CUDA helpers on, compiled" "test_package (enabled, compiled mode)"
tp=$(test_package_binary)
if readelf -d "$tp" | grep NEEDED | grep -q libfmt; then fail "test_package links libfmt: $(readelf -d "$tp" | grep libfmt)"; fi
LD_LIBRARY_PATH="$work/no-libfmt" "$tp" enabled || fail "test_package failed with a broken libfmt first on LD_LIBRARY_PATH"
# The package folder of this create: the command, its tool library, libnsightkit.
pkg_ref=$(sed -n 's/^Full package reference: \(nsightkit\/.*\)$/\1/p' "$work/offline.log" | tail -1)
[ -n "$pkg_ref" ] || fail "no package reference in $work/offline.log"
pkg=$("$conan" cache path "$pkg_ref") && [ -d "$pkg" ] || fail "no package folder for $pkg_ref"
for f in lib/libnsightkit.a bin/nsightkit lib/nsightkit/libnsightkit-nvtx.so; do
  [ -f "$pkg/$f" ] || fail "package lacks $f"
done
"$pkg/bin/nsightkit" --version | grep -q "^nsightkit 0.1.0" || fail "the packaged nsightkit --version"
nvtx_program="$work/nvtx_program"
nvtx_inc=$(python3 "$root/cmake/nsightkit-find-nvtx3.py") || fail "no NVTX3 headers for the test program"
"$cxx" -std=c++17 -O1 -I"$nvtx_inc" "$root/tests/nvtx_tool/nvtx_program.cpp" -o "$nvtx_program" -ldl -pthread \
  || fail "compile tests/nvtx_tool/nvtx_program.cpp"
"$pkg/bin/nsightkit" profile --report "table=$work/profile-table.txt" -- "$nvtx_program" 0 >"$work/profile.log" 2>&1 \
  || { cat "$work/profile.log" >&2; fail "the packaged nsightkit profile"; }
expect_in "$work/profile-table.txt" "train_step" "nsightkit profile's table of an unmodified NVTX program"
tested+=("conan create, offline profile (system fmt 9.1.0, CUDA toolkit NVTX3, nlohmann_json 3.11.2): package with libnsightkit, bin/nsightkit, lib/nsightkit/libnsightkit-nvtx.so; test_package compiled mode, 7 NVTX events, no libfmt needed; nsightkit profile reports an NVTX program")

step "create: -o nsightkit/*:disable=True"
rm -rf "$work/test_package"
create disabled -pr:h "$offline" -pr:b "$offline" -o "nsightkit/*:disable=True"
expect_in "$work/disabled.log" "instrumentation disabled, 0 NVTX events recorded" "test_package (disabled)"
if nm -C "$(test_package_binary)" | grep -q "nsightkit::v0::detail::report"; then
  fail "disable=True: test_package links the report engine"
fi
tested+=("conan create -o nsightkit/*:disable=True: NSIGHTKIT_DISABLE reached the consumer, 0 NVTX events, no report engine linked")

step "create: NVTX3 as a Conan package (local stand-in for conan center's nvtx)"
fmt_only="$work/fmt-only.profile"
printf 'include(default)\n\n[settings]\ncompiler.cppstd=17\n\n[platform_requires]\nfmt/9.1.0\nnlohmann_json/3.11.2\n\n[conf]\ntools.cmake.cmaketoolchain:generator=Ninja\n' >"$fmt_only"
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
expect_in "$work/conan-nvtx.log" "nsightkit: NVTX3 from target nvtx3::nvtx3-cpp, fmt from fmt::fmt" "providers seen by the consumer"
expect_in "$work/conan-nvtx.log" "instrumentation enabled, 7 NVTX events recorded" "test_package (Conan nvtx)"
nvtx_pkg=$("$conan" cache path "nvtx/3.1.0:da39a3ee5e6b4b0d3255bfef95601890afd80709")
# /usr/local/include may also hold the toolkit's headers: check the compile used the package's.
ninja_file=$(find "$work/test_package" -name build.ninja | sed -n 1p)
[ -n "$ninja_file" ] || fail "test_package build.ninja not found under $work/test_package"
expect_in "$ninja_file" "$nvtx_pkg/include" "the nvtx package's include directory on the consumer's compile line"
tested+=("conan create with NVTX3 from a Conan package (nvtx::nvtx / nvtx3::nvtx3-cpp, CMakeDeps): test_package compiled with $nvtx_pkg/include")

step "create: -o nsightkit/*:nvtx=system (no nvtx requirement: NVTX3 found when the consumer configures)"
rm -rf "$work/test_package"
create nvtx-system -pr:h "$fmt_only" -pr:b "$fmt_only" -o "nsightkit/*:nvtx=system"
grep -qE "^ +nvtx/" "$work/nvtx-system.log" && fail "nvtx=system still required nvtx"
expect_in "$work/nvtx-system.log" "nsightkit: NVTX3 from the CUDA toolkit" "nvtx=system: NVTX3 from the toolkit"
expect_in "$work/nvtx-system.log" "instrumentation enabled, 7 NVTX events recorded" "test_package (nvtx=system)"
tested+=("conan create -o nsightkit/*:nvtx=system: no nvtx requirement, NVTX3 from the CUDA toolkit at the consumer's configure")

step "create without the CUDA toolkit: nvtx=system, NVTX3 from PyPI's nvidia-nvtx (NSIGHTKIT_NVTX3_PYPI_DIR)"
# shellcheck source=../tests/consumers/hide_cuda.sh
source "$root/tests/consumers/hide_cuda.sh" "$cxx"
nocuda_check || fail "could not hide the CUDA toolkit"
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
pypi_inc=$("$work/venv/bin/python" "$root/cmake/nsightkit-find-nvtx3.py" --source pypi) || fail "PyPI's nvidia-nvtx has no nvtx3.hpp"
cpu_only="$work/cpu-only.profile"
{
  printf 'include(default)\n\n[settings]\ncompiler.cppstd=17\n\n[platform_requires]\nfmt/9.1.0\nnlohmann_json/3.11.2\n\n[conf]\n'
  printf 'tools.cmake.cmaketoolchain:generator=Ninja\n'
  python3 - "$NOCUDA_CXXFLAGS" "$NOCUDA_HIDDEN" "$site" <<'PY'
import sys
flags, hidden, site = sys.argv[1].split(), sys.argv[2], sys.argv[3]
if flags:
    print(f"tools.build:cxxflags={flags!r}")
print("tools.cmake.cmaketoolchain:extra_variables=" +
      repr({"CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit": "ON", "CMAKE_IGNORE_PATH": hidden,
            "NSIGHTKIT_NVTX3_PYPI_DIR": site}))
PY
} >"$cpu_only"
rm -rf "$work/test_package"
# (NSIGHTKIT_NVTX3_PYPI_DIR as a CMake variable in the profile, not in the environment, where
# test_package would see it too.)
env -u CUDA_PATH -u CUDA_HOME PATH="$NOCUDA_PATH" \
  "$conan" create "$root" "${common[@]}" -pr:h "$cpu_only" -pr:b "$cpu_only" -o "nsightkit/*:nvtx=system" \
  >"$work/cpu-only.log" 2>&1 || { tail -60 "$work/cpu-only.log" >&2; fail "conan create without the CUDA toolkit"; }
expect_in "$work/cpu-only.log" "nsightkit: NVTX3 from PyPI's nvidia-nvtx in NSIGHTKIT_NVTX3_PYPI_DIR ($pypi_inc)" "NVTX3 from PyPI"
expect_in "$work/cpu-only.log" "instrumentation enabled, 7 NVTX events recorded, CUDA helpers off" "test_package (CPU only)"
tested+=("conan create without the CUDA toolkit (nvtx=system): NVTX3 from PyPI's nvidia-nvtx, CUDA helpers off, 7 NVTX events")

step "the package's own CMake config (CMakeToolchain only, found through builddirs)"
for f in include/nsightkit/nsightkit.hpp include/nsightkit/range.hpp \
         share/cmake/nsightkit/nsightkit-config.cmake share/cmake/nsightkit/nsightkit-config-version.cmake \
         share/cmake/nsightkit/nsightkit-targets.cmake share/cmake/nsightkit/nsightkitDependencies.cmake \
         share/cmake/nsightkit/nsightkit-conan.cmake share/cmake/nsightkit/nsightkitLibrary.cmake \
         share/cmake/nsightkit/src/nsightkit.cpp share/cmake/nsightkit/src/nsightkit_cuda.cpp \
         share/cmake/nsightkit/src/nsightkit_startup.cpp; do
  [ -f "$pkg/$f" ] || fail "package lacks $f"
done
[ ! -e "$pkg/lib/pkgconfig" ] || fail "package still has lib/pkgconfig (PkgConfigDeps makes nsightkit.pc)"
if [ -f "$root/LICENSE" ] && [ ! -f "$pkg/licenses/LICENSE" ]; then fail "package lacks licenses/LICENSE"; fi
[ -f "$root/LICENSE" ] || echo "check-conan: note: the repository has no LICENSE file, so the package has no licenses/ (not checked)"
# Run from the output folder: a --requires install writes CMakeUserPresets.json into the cwd.
mkdir -p "$work/own-config"
# The recipe revision of step 2's package (a later create may have exported another).
(cd "$work/own-config" && "$conan" install --requires="${pkg_ref%%:*}" -pr:h "$offline" -pr:b "$offline" -nr \
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
grep -q "libnsightkit.a" "$work/own-config/build/build.ninja" || fail "the own-config consumer did not build libnsightkit"
tested+=("nsightkit's own config from the package (CMakeToolchain + builddirs): tests/consumers/installed, libnsightkit built from the packaged sources, enabled and disabled")

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
expect_in "$pc" "startup=-Wl,-u,nsightkit_detail_startup" "PkgConfigDeps' nsightkit.pc names the start-up's link option"
tested+=("PkgConfigDeps nsightkit.pc (-DNSIGHTKIT_COMPILED -lnsightkit, + system fmt.pc, -I CUDA include): tests/consumers/common/main.cpp")

step "validate(): a C++14 profile is refused"
if (cd "$work" && "$conan" install --requires="nsightkit/0.1.0" -pr:h "$offline" -pr:b "$offline" -nr \
     -s compiler.cppstd=14) >"$work/cpp14.log" 2>&1; then
  fail "conan install with compiler.cppstd=14 succeeded"
fi
expect_in "$work/cpp14.log" "Current cppstd (14) is lower than the required C++ standard (17)" "C++14 refusal message"
tested+=("compiler.cppstd=14 refused by validate() with a message naming C++17")

# fetch_debian_fmt <dir>: the newest libfmt-dev of Debian's experimental suite, else of unstable,
# with its library package, unpacked into <dir>/root (apt's lists and cache in <dir>; the
# system's apt configuration and packages are not touched; the mirror is the one the system's apt
# uses). Prints "<version>=<dir of fmt-config.cmake>".
fetch_debian_fmt() {
  local d=$1 mirror suite version lib
  mirror=$(apt-cache policy | grep -oE 'https?://[^ ]+' | grep -v -- '-security' | sed -n 1p)
  [ -n "$mirror" ] || { echo "no Debian mirror in apt's configuration" >&2; return 1; }
  mkdir -p "$d/cache/archives/partial" "$d/debs" "$d/root"
  local apt=(-o "Dir::Etc::SourceList=$d/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache" -o APT::Sandbox::User=root
    -o Debug::NoLocking=1)
  for suite in experimental unstable; do
    rm -rf "$d/lists" && mkdir -p "$d/lists/partial"
    echo "deb $mirror $suite main" >"$d/sources.list"
    apt-get "${apt[@]}" update -qq >>"$d/apt.log" 2>&1 || continue
    version=$(apt-cache "${apt[@]}" madison libfmt-dev 2>>"$d/apt.log" | awk -F'|' '{gsub(/ /, "", $2); print $2}' | sort -V | tail -1)
    [ -n "$version" ] && break
  done
  [ -n "$version" ] || { tail -5 "$d/apt.log" >&2; echo "no libfmt-dev in Debian experimental or unstable" >&2; return 1; }
  lib=$(apt-cache "${apt[@]}" show "libfmt-dev=$version" 2>>"$d/apt.log" | sed -n 's/^Depends:.*\(libfmt[0-9][0-9]*\) (.*/\1/p' | sed -n 1p)
  [ -n "$lib" ] || { echo "libfmt-dev $version names no libfmtN package" >&2; return 1; }
  (cd "$d/debs" && apt-get "${apt[@]}" download "libfmt-dev=$version" "$lib=$version" >>"$d/apt.log" 2>&1) \
    || { tail -5 "$d/apt.log" >&2; return 1; }
  for deb in "$d"/debs/*.deb; do dpkg-deb -x "$deb" "$d/root"; done
  local cfg
  cfg=$(find "$d/root" -name fmt-config-version.cmake | sed -n 1p)
  [ -n "$cfg" ] || { echo "no fmt-config-version.cmake in $(ls "$d/debs")" >&2; return 1; }
  version=$(sed -n 's/^set(PACKAGE_VERSION "\([0-9.]*\)").*/\1/p' "$cfg")
  echo "$version=$(dirname "$cfg")"
}

# A {fmt} of another major than the system's: NSIGHTKIT_CONAN_EXTRA_FMT=<version>=<dir of its
# fmt-config.cmake>, else Debian's newest, fetched above (12.2.0, in experimental, when written).
extra_fmt=${NSIGHTKIT_CONAN_EXTRA_FMT:-}
if [ -z "$extra_fmt" ]; then
  step "fetch Debian's newest {fmt} (libfmt-dev of experimental, else unstable; the system has 9.1.0)"
  extra_fmt=$(fetch_debian_fmt "$work/fmt-debian") || {
    untested+=("conan create with a {fmt} other than 9.1.0: Debian's libfmt-dev could not be fetched ($work/fmt-debian/apt.log)")
    extra_fmt=""
  }
fi
if [ -n "$extra_fmt" ]; then
  fmt_version=${extra_fmt%%=*} fmt_dir=${extra_fmt#*=}
  fmt_major=${fmt_version%%.*}
  [ -f "$fmt_dir/fmt-config.cmake" ] || fail "no fmt-config.cmake in $fmt_dir"
fi
if [ -n "$extra_fmt" ] && { [ "$fmt_major" -lt 9 ] || [ "$fmt_major" -ge 13 ]; }; then
  untested+=("{fmt} $fmt_version (from $fmt_dir) is outside the recipe's range fmt/[>=9 <13]: test it, then widen the range")
elif [ -n "$extra_fmt" ]; then
  step "create with {fmt} $fmt_version from $fmt_dir ([platform_requires])"
  extra="$work/fmt-$fmt_version.profile"
  printf 'include(default)\n\n[settings]\ncompiler.cppstd=17\n\n[platform_requires]\nfmt/%s\nnvtx/3.1.0\nnlohmann_json/3.11.2\n\n[conf]\ntools.cmake.cmaketoolchain:generator=Ninja\ntools.cmake.cmaketoolchain:extra_variables={"fmt_DIR": "%s"}\n' \
    "$fmt_version" "$fmt_dir" >"$extra"
  rm -rf "$work/test_package"
  create "fmt-$fmt_version" -pr:h "$extra" -pr:b "$extra"
  expect_in "$work/fmt-$fmt_version.log" "fmt/$fmt_version - Platform" "fmt $fmt_version from [platform_requires]"
  expect_in "$work/fmt-$fmt_version.log" "instrumentation enabled, 7 NVTX events recorded" "test_package (fmt $fmt_version)"
  needed=$(readelf -d "$(test_package_binary)" | grep NEEDED | grep -o 'libfmt[^]]*' || true)
  [ -z "$needed" ] || fail "fmt $fmt_version: test_package needs $needed"
  tested+=("conan create with {fmt} $fmt_version ([platform_requires], $fmt_dir): test_package links no libfmt")

  # The formatted ranges and module scopes in C++20, where {fmt} 11 and later check format strings
  # with consteval and deprecate the implicit conversion of a format string: warnings as errors.
  step "the C++20 range and module tests against {fmt} $fmt_version (header-only, -Werror)"
  fmt_inc=$(find "${fmt_dir%/lib/*}" -path '*/include/fmt/format.h' -print -quit)
  [ -n "$fmt_inc" ] || fail "no include/fmt/format.h near $fmt_dir"
  fmt_inc=$(dirname "$(dirname "$fmt_inc")")
  for t in range/test_range_cxx20 module/test_module_cxx20; do
    exe="$work/fmt-$fmt_version-$(basename "$t")"
    "$cxx" -std=c++20 -O1 -Wall -Wextra -Wpedantic -Werror -DFMT_HEADER_ONLY -isystem "$fmt_inc" -I"$root/include" \
      -I"$root/tests" -isystem "$cuda_root/include" "$root/tests/$t.cpp" "$root/tests/recorder_main.cpp" \
      -lCatch2WithMain -ldl -pthread -o "$exe" >"$exe.log" 2>&1 || { tail -30 "$exe.log" >&2; fail "$t with {fmt} $fmt_version: compile"; }
    "$exe" >>"$exe.log" 2>&1 || { tail -30 "$exe.log" >&2; fail "$t with {fmt} $fmt_version: run"; }
  done
  tested+=("tests/range/test_range_cxx20 and tests/module/test_module_cxx20 in C++20 with {fmt} $fmt_version header-only: no warning, all pass")
fi

echo "check-conan: conan $conan_version, $(cmake --version | sed -n 1p), $("$cxx" --version | sed -n 1p)"
for t in "${tested[@]}"; do echo "  passed: $t"; done
for t in "${untested[@]}"; do echo "  NOT TESTED: $t"; done
echo "${#tested[@]} passed, 0 failed"
