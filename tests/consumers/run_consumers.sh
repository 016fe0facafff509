#!/usr/bin/env bash
# Builds and runs three consumers of nsightkit against a fresh install:
#   1. find_package(nsightkit CONFIG) on the installed package (enabled and disabled builds)
#   2. add_subdirectory(<source>) (tests, examples and benchmarks of nsightkit stay off)
#   3. pkg-config --cflags --libs nsightkit
# usage: run_consumers.sh <nsightkit source dir> <work dir> <c++ compiler>
set -euo pipefail
src=$1 work=$2 cxx=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)

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

echo "== find_package consumer"
cmake -S "$here/installed" -B "$work/installed" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/installed.log"
cmake --build "$work/installed" >>"$work/installed.log"
"$work/installed/consumer"
"$work/installed/consumer_disabled"

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
"$work/subdir/consumer"
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
  "$work/pkgconfig_consumer"
else
  echo "pkg-config not installed" >&2; exit 1
fi
echo "all consumers passed"
