#!/usr/bin/env bash
# Builds and RUNS consumers of nsightkit, compiled by a plain C++ compiler, through each documented
# route, against a fresh install:
#   1. find_package(nsightkit CONFIG) on the installed package (enabled and disabled builds)
#   2. add_subdirectory(<source>) (tests, examples and benchmarks of nsightkit stay off; also
#      common/main.cpp linked with nsightkit::compiled)
#   3. pkg-config --cflags --libs nsightkit
#   4. find_package(nsightkit CONFIG REQUIRED COMPONENTS compiled), from the moved copy of the
#      install: nsightkit::compiled built in the consumer's project from the installed sources
#      (compiled/), common/main.cpp linked with it and run as the others; its own objects must
#      hold none of the report engine's code (tests/compiled/check_compiled_objects.py), which
#      the header-only consumer's main.cpp object of route 1 does
# Routes 1-3 build two programs:
#   - common/main.cpp: every instrumentation feature (ranges, module hooks, CaptureWindow, Report,
#     Recorder). It must link no CUDA library; where no CUDA driver is installed its capture
#     window must say so in exactly one line and go on. Its report files must parse.
#   - common/cuda_utilities.cpp: the CUDA utilities, linked with the CUDA runtime the route's way
#     (CMake: CUDA::cudart; pkg-config: the toolkit's -lcudart). Without a device each utility
#     must fail soft with a CudaError naming the call (the program checks that).
# Also: the installed tree is relocatable (installed with cmake --install --prefix into another
# prefix than configured, then moved: pkg-config's paths follow), its .pc files pass
# pkg-config --validate and name no directory of this machine; {fmt} header-only through the CMake
# package (NSIGHTKIT_FMT_HEADER_ONLY) and pkg-config (nsightkit-fmt-header-only): the programs
# need no libfmt (they run with a broken libfmt.so first on LD_LIBRARY_PATH, which stops the
# library-linked program); find_package(nsightkit QUIET) on a machine without any NVTX3 (the
# toolkit hidden, see hide_cuda.sh) configures, sets nsightkit_FOUND false and gives the reason,
# and REQUIRED fails with it; components (cupti and compiled in two sibling directories, an
# unknown one; compiled where the package has no sources: reported, REQUIRED fails naming them).
# usage: run_consumers.sh <nsightkit source dir> <work dir> <c++ compiler>
set -euo pipefail
src=$1 work=$2 cxx=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
fail() { echo "run_consumers: $*" >&2; exit 1; }
# shellcheck source=../../scripts/check-lib.sh
source "$src/scripts/check-lib.sh"

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
  readelf -d "$prog" | grep NEEDED | grep -c libcudart >/dev/null || fail "$name does not link the CUDA runtime"
  "$prog" || fail "$name failed"
}

echo "== install nsightkit into $work/prefix (configured for another prefix: cmake --install --prefix)"
cmake -S "$src" -B "$work/lib" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
  -DNSIGHTKIT_BUILD_TESTS=OFF -DNSIGHTKIT_BUILD_EXAMPLES=OFF -DNSIGHTKIT_BUILD_BENCHMARKS=OFF \
  -DNSIGHTKIT_INSTALL=ON -DCMAKE_INSTALL_PREFIX="$work/configured-prefix" >"$work/lib.log"
cmake --install "$work/lib" --prefix "$work/prefix" >>"$work/lib.log"
test -f "$work/prefix/include/nsightkit/nsightkit.hpp"
test -f "$work/prefix/share/cmake/nsightkit/nsightkit-config.cmake"
test -f "$work/prefix/share/cmake/nsightkit/nsightkit-config-version.cmake"
test -x "$work/prefix/share/cmake/nsightkit/nsightkit-find-nvtx3.py"
test -f "$work/prefix/share/pkgconfig/nsightkit.pc"
test -f "$work/prefix/share/pkgconfig/nsightkit-fmt-header-only.pc"
if grep -q NSIGHTKIT_DISABLE "$work/prefix/share/cmake/nsightkit/nsightkit-targets.cmake"; then
  echo "the installed targets bake NSIGHTKIT_DISABLE in" >&2; exit 1
fi
mkdir -p "$work/out"

echo "== the installed pkg-config files: valid, relocatable, no directory of this machine"
mapfile -t pcs < <(find "$work/prefix" -name '*.pc' | sort)
cuda_real=$( [ -d "$cuda_root" ] && cd "$cuda_root" && pwd -P || echo "$cuda_root")
for pc in "${pcs[@]}"; do
  # (--validate also reads, and may warn about, other .pc files of the system: only ours count.)
  out=$(PKG_CONFIG_PATH="$work/prefix/share/pkgconfig:$work/prefix/lib/pkgconfig" pkg-config --validate "$pc" 2>&1) \
    || fail "pkg-config --validate $pc:"$'\n'"$(grep -v '^/usr/' <<<"$out")"
  if grep -F "$pc" <<<"$out"; then fail "pkg-config --validate warns about $pc"; fi
  # shellcheck disable=SC2016  # a literal ${pcfiledir}
  grep -qx 'prefix=${pcfiledir}/../..' "$pc" || [ "$(basename "$pc")" = nsightkit-cupti.pc ] \
    || fail "$pc: prefix is not \${pcfiledir}/../.."
  for p in "$work" "$src" "$cuda_real"; do
    if grep -v '^#' "$pc" | grep -cF "$p" >/dev/null; then fail "$pc names $p"; fi
  done
  case "$pc" in
    */share/pkgconfig/*)
      if grep -E '^Libs(\.private)?:[[:space:]]*[^[:space:]]' "$pc"; then
        fail "$pc has Libs but is in share/pkgconfig (a .pc with Libs belongs in lib/pkgconfig)"
      fi ;;
  esac
done
for f in $(grep -rlF "$work/configured-prefix" "$work/prefix" || true); do fail "$f names the configured prefix"; done
for f in $(grep -rlF "$work/lib" "$work/prefix" || true); do fail "$f names the build tree"; done
# Moved elsewhere, the tree still points into itself.
rm -rf "$work/moved" && cp -a "$work/prefix" "$work/moved"
for p in prefix moved; do
  cflags=$(PKG_CONFIG_PATH="$work/$p/share/pkgconfig" pkg-config --cflags nsightkit)
  first=$(sed -E 's/^-I([^ ]+).*/\1/' <<<"$cflags")
  [ "$(cd "$first" && pwd -P)" = "$(cd "$work/$p/include" && pwd -P)" ] \
    || fail "pkg-config --cflags nsightkit from $work/$p: $cflags does not point into $work/$p/include"
  echo "  $p: pkg-config --cflags nsightkit = $cflags"
done

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
run_instrumentation "$work/subdir/consumer_compiled" enabled subdir_compiled
if [ $have_toolkit = 1 ]; then
  [ -x "$work/subdir/consumer_cuda" ] || fail "find_package(CUDAToolkit) found no CUDA::cudart"
  run_cuda "$work/subdir/consumer_cuda" subdir_cuda
fi
if [ -d "$work/subdir/nsightkit/tests" ]; then
  echo "add_subdirectory built nsightkit's tests; they must be off for subprojects" >&2; exit 1
fi

echo "== compiled mode: find_package(nsightkit CONFIG REQUIRED COMPONENTS compiled) (from the moved copy)"
cmake -S "$here/compiled" -B "$work/compiled" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/moved" >"$work/compiled.log" 2>&1 \
  || { cat "$work/compiled.log" >&2; fail "find_package(nsightkit COMPONENTS compiled) failed"; }
# The library is compiled from the sources of the tree where it now is.
expect_in "$work/compiled.log" "nsightkit::compiled from $work/moved/share/cmake/nsightkit/src/nsightkit.cpp" \
  "the component compiled's sources"
cmake --build "$work/compiled" >>"$work/compiled.log" 2>&1 \
  || { cat "$work/compiled.log" >&2; fail "building the compiled-mode consumer failed"; }
run_instrumentation "$work/compiled/consumer" enabled compiled
# NSIGHTKIT_COMPILED took effect: the program's own objects call the compiled report engine and
# define none of it, while the same main.cpp header-only (route 1) does (the check can fail).
mapfile -t compiled_objects <"$work/compiled/consumer_objects.txt"
python3 "$src/tests/compiled/check_compiled_objects.py" nm --compiled-recorder "${compiled_objects[@]}" \
  >"$work/compiled-objects.log" || { cat "$work/compiled-objects.log" >&2; fail "compiled consumer's objects"; }
header_only_object=$(find "$work/installed/CMakeFiles/consumer.dir" -name 'main.cpp.o' | sed -n 1p)
[ -n "$header_only_object" ] || fail "no main.cpp.o under $work/installed/CMakeFiles/consumer.dir"
python3 "$src/tests/compiled/check_compiled_objects.py" nm --header-only "$header_only_object" \
  >>"$work/compiled-objects.log" || { cat "$work/compiled-objects.log" >&2; fail "header-only consumer's object"; }
echo "  main.cpp's object: no report engine code with nsightkit::compiled, the engine header-only"

echo "== pkg-config consumer (from the moved copy of the install)"
if command -v pkg-config >/dev/null; then
  export PKG_CONFIG_PATH="$work/moved/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  pkg-config --exists nsightkit
  # pkg-config cannot search: the package's finder names NVTX3's directory (toolkit, then PyPI).
  nvtx_define=$(python3 "$(pkg-config --variable=nvtx3_finder nsightkit)" --define-variable) \
    || fail "nvtx3_finder found no NVTX3"
  echo "  $nvtx_define"
  # shellcheck disable=SC2046
  "$cxx" -std=c++17 -o "$work/pkgconfig_consumer" "$here/common/main.cpp" "$here/common/recorder.cpp" \
    $(pkg-config "$nvtx_define" --cflags --libs nsightkit) -pthread
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
      $(pkg-config "$nvtx_define" --cflags --libs nsightkit) $cudart -pthread
    run_cuda "$work/pkgconfig_consumer_cuda" pkgconfig_cuda
  fi
else
  echo "pkg-config not installed" >&2; exit 1
fi

echo "== {fmt} header-only: CMake package (NSIGHTKIT_FMT_HEADER_ONLY=ON) and pkg-config"
# A libfmt.so.N that cannot be loaded, first on LD_LIBRARY_PATH: a program that needs libfmt
# fails to start with it; one built with {fmt} header-only does not notice.
fmt_soname=$(readelf -d "$work/installed/consumer" | sed -n 's/.*NEEDED.*\[\(libfmt\.so[^]]*\)\].*/\1/p')
[ -n "$fmt_soname" ] || fail "the fmt::fmt consumer does not link libfmt (cannot test its absence)"
mkdir -p "$work/no-libfmt"
echo "not a library" >"$work/no-libfmt/$fmt_soname"
if LD_LIBRARY_PATH="$work/no-libfmt" "$work/installed/consumer" "$work/out/nofmt" >/dev/null 2>&1; then
  fail "the fmt::fmt consumer ran with a broken $fmt_soname first on LD_LIBRARY_PATH: the check proves nothing"
fi
cmake -S "$here/probe" -B "$work/fmt-header-only" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DNSIGHTKIT_FMT_HEADER_ONLY=ON >"$work/fmt-header-only.log"
grep -q "fmt from fmt::fmt-header-only" "$work/fmt-header-only.log" || fail "NSIGHTKIT_FMT_HEADER_ONLY=ON did not select fmt::fmt-header-only"
cmake --build "$work/fmt-header-only" >>"$work/fmt-header-only.log"
# shellcheck disable=SC2046
"$cxx" -std=c++17 -o "$work/fmt-header-only/probe_pc" "$here/common/probe.cpp" "$here/common/recorder.cpp" \
  $(pkg-config "$nvtx_define" --cflags --libs nsightkit-fmt-header-only) -pthread
for prog in "$work/fmt-header-only/probe" "$work/fmt-header-only/probe_pc"; do
  if readelf -d "$prog" | grep NEEDED | grep -c libfmt >/dev/null; then fail "$prog links libfmt"; fi
  LD_LIBRARY_PATH="$work/no-libfmt" "$prog" fmt-header-only || fail "$prog failed without libfmt"
done

echo "== components: cupti and compiled in two sibling directories, an unknown one (optional: reported; required: fails)"
comp="$work/components"
mkdir -p "$comp/a" "$comp/b"
want_cupti=0
[ -f "$work/prefix/lib/pkgconfig/nsightkit-cupti.pc" ] && want_cupti=1
for sub in a b; do
  cat >"$comp/$sub/CMakeLists.txt" <<CMK
find_package(nsightkit CONFIG REQUIRED OPTIONAL_COMPONENTS cupti compiled nosuch)
if(nsightkit_cupti_FOUND AND NOT TARGET nsightkit::cupti)
  message(FATAL_ERROR "nsightkit_cupti_FOUND but no nsightkit::cupti in $sub")
endif()
if(NOT nsightkit_compiled_FOUND OR NOT TARGET nsightkit::compiled)
  message(FATAL_ERROR "component compiled in $sub: nsightkit_compiled_FOUND=\${nsightkit_compiled_FOUND}")
endif()
if(nsightkit_nosuch_FOUND OR NOT nsightkit_FOUND)
  message(FATAL_ERROR "optional component nosuch: nsightkit_nosuch_FOUND=\${nsightkit_nosuch_FOUND}, nsightkit_FOUND=\${nsightkit_FOUND}")
endif()
# (Generating the build checks that the target and what it links resolve in this directory.)
add_executable(compiled_$sub "$here/common/probe.cpp")
target_link_libraries(compiled_$sub PRIVATE nsightkit::compiled)
message(STATUS "components $sub: cupti found=\${nsightkit_cupti_FOUND}, compiled found=\${nsightkit_compiled_FOUND}")
CMK
done
cat >"$comp/CMakeLists.txt" <<'CMK'
cmake_minimum_required(VERSION 3.22)
project(components LANGUAGES CXX)
add_subdirectory(a)
add_subdirectory(b)
CMK
cmake -S "$comp" -B "$comp/build" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix" \
  >"$comp.log" 2>&1 || { cat "$comp.log" >&2; fail "find_package with OPTIONAL_COMPONENTS stopped the configure"; }
grep -qE "nsightkit: optional component nosuch not found: nsightkit has no component 'nosuch' \(its components: ([a-z]+, )*cupti(, [a-z]+)*\)" "$comp.log" \
  || { cat "$comp.log" >&2; fail "an unknown optional component was not reported with the list of components"; }
for sub in a b; do
  if [ $want_cupti = 1 ]; then
    grep -q "components $sub: cupti found=TRUE, compiled found=TRUE" "$comp.log" || { cat "$comp.log" >&2; fail "directory $sub: component cupti not found, or compiled not found"; }
  else
    grep -q "components $sub: cupti found=FALSE, compiled found=TRUE" "$comp.log" || { cat "$comp.log" >&2; fail "directory $sub: component cupti found without CUPTI, or compiled not found"; }
  fi
done
cat >"$comp/CMakeLists.txt" <<'CMK'
cmake_minimum_required(VERSION 3.22)
project(components LANGUAGES CXX)
find_package(nsightkit CONFIG REQUIRED COMPONENTS nosuch)
CMK
if cmake -S "$comp" -B "$comp/build-required" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix" \
     >"$comp-required.log" 2>&1; then
  fail "find_package(nsightkit REQUIRED COMPONENTS nosuch) succeeded"
fi
log_has "component nosuch: nsightkit has no component 'nosuch'" "$comp-required.log" \
  || { cat "$comp-required.log" >&2; fail "a required unknown component failed without naming the components"; }
echo "  cupti in two sibling directories: $([ $want_cupti = 1 ] && echo found in both || echo not found in either, no CUPTI); compiled: found in both; unknown component: reported / refused"

echo "== component compiled where the package has no sources (headers only): optional reported, required fails"
rm -rf "$work/no-sources" && cp -a "$work/prefix" "$work/no-sources"
rm -r "$work/no-sources/share/cmake/nsightkit/src"
missing_source="$work/no-sources/share/cmake/nsightkit/src/nsightkit.cpp"
for kind in OPTIONAL_COMPONENTS COMPONENTS; do
  dir="$work/no-sources-$kind"
  mkdir -p "$dir"
  cat >"$dir/CMakeLists.txt" <<CMK
cmake_minimum_required(VERSION 3.22)
project(no_sources LANGUAGES CXX)
find_package(nsightkit CONFIG REQUIRED $kind compiled)
if(TARGET nsightkit::compiled OR nsightkit_compiled_FOUND)
  message(FATAL_ERROR "component compiled found without its sources")
endif()
CMK
  rc=0
  cmake -S "$dir" -B "$dir/build" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_PREFIX_PATH="$work/no-sources" >"$dir.log" 2>&1 || rc=$?
  if [ $kind = OPTIONAL_COMPONENTS ]; then
    [ $rc = 0 ] || { cat "$dir.log" >&2; fail "a missing optional component compiled stopped the configure"; }
    expect_in "$dir.log" "nsightkit: optional component compiled not found: the compiled mode's sources" \
      "optional component compiled without sources"
  else
    [ $rc != 0 ] || { cat "$dir.log" >&2; fail "find_package(nsightkit REQUIRED COMPONENTS compiled) succeeded without sources"; }
    expect_in "$dir.log" "component compiled: the compiled mode's sources" "required component compiled without sources"
  fi
  expect_in "$dir.log" "$missing_source" "the reason names the missing file"
done
echo "  optional: reported; required: refused; both name $missing_source"

echo "== find_package(nsightkit) on a machine without NVTX3: QUIET configures, REQUIRED fails, both say why"
# shellcheck source=hide_cuda.sh
source "$here/hide_cuda.sh" "$cxx"
nocuda_check || fail "could not hide the CUDA toolkit"
# A Python that sees no installed package (-S: no site-packages), so no PyPI nvidia-nvtx either.
printf '#!/bin/sh\nexec python3 -S "$@"\n' >"$work/python-no-site" && chmod +x "$work/python-no-site"
for mode in QUIET REQUIRED; do
  dir="$work/no-nvtx-$mode"
  mkdir -p "$dir"
  cat >"$dir/CMakeLists.txt" <<CMK
cmake_minimum_required(VERSION 3.22)
project(no_nvtx LANGUAGES CXX)
find_package(nsightkit CONFIG $mode)
message(STATUS "after find_package: nsightkit_FOUND=\${nsightkit_FOUND}")
if(NOT nsightkit_FOUND)
  message(STATUS "nsightkit not found: \${nsightkit_NOT_FOUND_MESSAGE}")
endif()
if(TARGET nsightkit::nsightkit)
  message(FATAL_ERROR "nsightkit::nsightkit exists although the package was not found")
endif()
CMK
  rc=0
  env -u NSIGHTKIT_NVTX3_INCLUDE_DIR -u NSIGHTKIT_NVTX3_PYPI_DIR -u CUDA_PATH -u CUDA_HOME PATH="$NOCUDA_PATH" \
    cmake -S "$dir" -B "$dir/build" "${NOCUDA_CMAKE_ARGS[@]}" -DCMAKE_PREFIX_PATH="$work/prefix" \
    -DNSIGHTKIT_PYTHON_EXECUTABLE="$work/python-no-site" >"$dir.log" 2>&1 || rc=$?
  for text in "nvtx3/nvtx3.hpp was not found" "NSIGHTKIT_NVTX3_INCLUDE_DIR" "CUDA toolkit 12.9 or newer" \
              "pip install nvidia-nvtx"; do
    log_has "$text" "$dir.log" || { cat "$dir.log" >&2; fail "find_package(nsightkit $mode): the reason lacks '$text'"; }
  done
  if [ "$mode" = QUIET ]; then
    [ $rc = 0 ] || { cat "$dir.log" >&2; fail "find_package(nsightkit QUIET) stopped the configure"; }
    grep -q "after find_package: nsightkit_FOUND=0" "$dir.log" || { cat "$dir.log" >&2; fail "nsightkit_FOUND is not false"; }
  else
    [ $rc != 0 ] || { cat "$dir.log" >&2; fail "find_package(nsightkit REQUIRED) did not fail"; }
    log_has 'but it set nsightkit_FOUND to FALSE' "$dir.log" || { cat "$dir.log" >&2; fail "REQUIRED failed for another reason"; }
  fi
  echo "  $mode: exit $rc; $(grep -m1 -F 'nvtx3/nvtx3.hpp was not found' "$dir.log" | sed 's/^ *//')"
done
echo "all consumers passed"
