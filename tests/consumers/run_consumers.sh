#!/usr/bin/env bash
# Builds and RUNS consumers of nsightkit, compiled by a plain C++ compiler, through each documented
# route, against a fresh install (docs/packaging.md, docs/compile-cost.md):
#   1. find_package(nsightkit CONFIG) on the moved copy of the installed package: libnsightkit built
#      in the consumer's project from the installed sources (find_package twice: reused), the
#      program's own objects hold none of the report engine's code
#      (tests/compiled/check_compiled_objects.py); a disabled build links nothing of the engine
#   2. a plain -I user: the headers alone, header-only (the object check must find the engine)
#   3. a plain compiler user with the one documented line that builds libnsightkit from the
#      installed sources, then -DNSIGHTKIT_COMPILED: objects as in 1
#   4. add_subdirectory(<source>) (tests, examples and benchmarks of nsightkit stay off)
#   5. pkg-config --cflags --libs nsightkit (the compiled mode, the installed libnsightkit), and a
#      program of raw NVTX calls only: NSIGHTKIT_REPORT works with the .pc's start-up line
# Routes 1, 4 and 5 build two programs, the others the first:
#   - common/main.cpp: every instrumentation feature (ranges, module hooks, CaptureWindow, Report,
#     Recorder). It must link no CUDA library; where no CUDA driver is installed its capture
#     window must say so in exactly one line and go on. Its report files must parse.
#   - common/cuda_utilities.cpp: the CUDA utilities, linked with the CUDA runtime the route's way
#     (CMake: CUDA::cudart; pkg-config: the toolkit's -lcudart). Without a device each utility
#     must fail soft with a CudaError naming the call (the program checks that).
# Also: the installed tree is relocatable (installed with cmake --install --prefix into another
# prefix than configured, then moved: pkg-config's paths follow), its .pc files pass
# pkg-config --validate, sit in lib/pkgconfig and name no directory of this machine; the compiled
# programs need no libfmt (they run with a broken libfmt.so first on LD_LIBRARY_PATH, which stops
# the header-only program, proving the check); find_package(nsightkit QUIET) on a machine without
# any NVTX3 (the toolkit hidden, see hide_cuda.sh) configures, sets nsightkit_FOUND false and
# gives the reason, and REQUIRED fails with it; a package without libnsightkit's sources is not
# found, the reason naming the file; components (cupti in two sibling directories, an unknown one).
# The nsightkit command and its tool libraries are not built here (scripts/check-conan.sh and
# scripts/check-vcpkg-port.sh install and run them).
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
  -DNSIGHTKIT_BUILD_TOOLS=OFF -DNSIGHTKIT_INSTALL=ON -DCMAKE_INSTALL_PREFIX="$work/configured-prefix" >"$work/lib.log"
cmake --build "$work/lib" >>"$work/lib.log"
cmake --install "$work/lib" --prefix "$work/prefix" >>"$work/lib.log"
for f in include/nsightkit/nsightkit.hpp share/cmake/nsightkit/nsightkit-config.cmake \
         share/cmake/nsightkit/nsightkit-config-version.cmake share/cmake/nsightkit/nsightkitLibrary.cmake \
         share/cmake/nsightkit/src/nsightkit.cpp share/cmake/nsightkit/src/nsightkit_cuda.cpp \
         share/cmake/nsightkit/src/nsightkit_startup.cpp lib/libnsightkit.a lib/pkgconfig/nsightkit.pc; do
  [ -f "$work/prefix/$f" ] || fail "the install lacks $f"
done
test -x "$work/prefix/share/cmake/nsightkit/nsightkit-find-nvtx3.py"
if grep -q NSIGHTKIT_DISABLE "$work/prefix/share/cmake/nsightkit/nsightkit-targets.cmake"; then
  echo "the installed targets bake NSIGHTKIT_DISABLE in" >&2; exit 1
fi
mkdir -p "$work/out"

echo "== the installed pkg-config files: valid, relocatable, no directory of this machine"
mapfile -t pcs < <(find "$work/prefix" -name '*.pc' | sort)
cuda_real=$( [ -d "$cuda_root" ] && cd "$cuda_root" && pwd -P || echo "$cuda_root")
for pc in "${pcs[@]}"; do
  # (--validate also reads, and may warn about, other .pc files of the system: only ours count.)
  out=$(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --validate "$pc" 2>&1) \
    || fail "pkg-config --validate $pc:"$'\n'"$(grep -v '^/usr/' <<<"$out")"
  if grep -F "$pc" <<<"$out"; then fail "pkg-config --validate warns about $pc"; fi
  # shellcheck disable=SC2016  # a literal ${pcfiledir}
  grep -qx 'prefix=${pcfiledir}/../..' "$pc" || [ "$(basename "$pc")" = nsightkit-cupti.pc ] \
    || fail "$pc: prefix is not \${pcfiledir}/../.."
  for p in "$work" "$src" "$cuda_real"; do
    if grep -v '^#' "$pc" | grep -cF "$p" >/dev/null; then fail "$pc names $p"; fi
  done
  case "$pc" in
    */lib/pkgconfig/*) ;;
    *) fail "$pc has Libs but is not in lib/pkgconfig" ;;
  esac
done
for f in $(grep -rlF "$work/configured-prefix" "$work/prefix" || true); do fail "$f names the configured prefix"; done
for f in $(grep -rlIF "$work/lib" "$work/prefix" || true); do fail "$f names the build tree"; done
# Moved elsewhere, the tree still points into itself.
rm -rf "$work/moved" && cp -a "$work/prefix" "$work/moved"
for p in prefix moved; do
  cflags=$(PKG_CONFIG_PATH="$work/$p/lib/pkgconfig" pkg-config --cflags nsightkit)
  first=$(sed -E 's/^-I([^ ]+).*/\1/' <<<"$cflags")
  [ "$(cd "$first" && pwd -P)" = "$(cd "$work/$p/include" && pwd -P)" ] \
    || fail "pkg-config --cflags nsightkit from $work/$p: $cflags does not point into $work/$p/include"
  libs=$(PKG_CONFIG_PATH="$work/$p/lib/pkgconfig" pkg-config --libs nsightkit)
  libdir=$(sed -nE 's/^-L([^ ]+) .*/\1/p' <<<"$libs")
  [ -n "$libdir" ] && [ "$(cd "$libdir" && pwd -P)" = "$(cd "$work/$p/lib" && pwd -P)" ] && grep -q -- "-lnsightkit" <<<"$libs" \
    || fail "pkg-config --libs nsightkit from $work/$p: $libs does not link $work/$p/lib/libnsightkit.a"
  echo "  $p: pkg-config --cflags --libs nsightkit = $cflags $libs"
done

# The NVTX3 directory the package's finder names (toolkit, then PyPI), for the plain compilers.
nvtx_inc=$(python3 "$work/prefix/share/cmake/nsightkit/nsightkit-find-nvtx3.py") || fail "nsightkit-find-nvtx3.py found no NVTX3"
# check_objects <mode> <objects...>: check_compiled_objects.py on a program's own objects.
check_objects() {
  python3 "$src/tests/compiled/check_compiled_objects.py" nm "$@" >>"$work/objects.log" \
    || { cat "$work/objects.log" >&2; fail "check_compiled_objects.py $*"; }
}
# A libfmt.so.N that cannot be loaded, first on LD_LIBRARY_PATH: a program that needs libfmt fails
# to start with it (the header-only program below proves it); the compiled ones must not notice.
fmt_soname=$(readelf -d /usr/lib/*/libfmt.so 2>/dev/null | sed -n 's/.*SONAME.*\[\(libfmt\.so[^]]*\)\].*/\1/p' | sed -n 1p)
fmt_soname=${fmt_soname:-libfmt.so.9}
mkdir -p "$work/no-libfmt"
echo "not a library" >"$work/no-libfmt/$fmt_soname"
check_no_libfmt() {  # program, args...
  if readelf -d "$1" | grep NEEDED | grep -q libfmt; then fail "$1 links libfmt"; fi
  LD_LIBRARY_PATH="$work/no-libfmt" "$@" >/dev/null 2>&1 || fail "$1 failed with a broken $fmt_soname first on LD_LIBRARY_PATH"
}

echo "== 1. find_package consumer (the moved copy of the install)"
cmake -S "$here/installed" -B "$work/installed" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/moved" >"$work/installed.log" 2>&1 \
  || { cat "$work/installed.log" >&2; fail "configure the find_package consumer"; }
# The library is compiled from the sources of the tree where it now is.
expect_in "$work/installed.log" "libnsightkit from $work/moved/share/cmake/nsightkit/src/nsightkit.cpp" "libnsightkit's sources"
cmake --build "$work/installed" >>"$work/installed.log" 2>&1 \
  || { cat "$work/installed.log" >&2; fail "build the find_package consumer"; }
run_instrumentation "$work/installed/consumer" enabled installed
run_instrumentation "$work/installed/consumer_disabled" disabled installed_disabled
mapfile -t installed_objects <"$work/installed/consumer_objects.txt"
check_objects --compiled-recorder "${installed_objects[@]}"
check_no_libfmt "$work/installed/consumer" "$work/out/nofmt-installed"
if nm -C "$work/installed/consumer_disabled" | grep -q "nsightkit::v0::"; then
  fail "the disabled consumer links the enabled engine"
fi
echo "  the program's objects: no report engine code; needs no libfmt; disabled: nothing of the engine linked"
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

echo "== 2. plain -I: the installed headers alone, header-only"
mkdir -p "$work/plain"
"$cxx" -std=c++17 -O1 -I"$work/moved/include" -I"$nvtx_inc" -c "$here/common/main.cpp" -o "$work/plain/main.o"
"$cxx" -std=c++17 -O1 -I"$work/moved/include" -I"$nvtx_inc" -c "$here/common/recorder.cpp" -o "$work/plain/recorder.o"
"$cxx" -o "$work/plain/consumer" "$work/plain/main.o" "$work/plain/recorder.o" -lfmt -ldl -pthread
run_instrumentation "$work/plain/consumer" enabled plain_header_only
check_objects --header-only "$work/plain/main.o"
if LD_LIBRARY_PATH="$work/no-libfmt" "$work/plain/consumer" "$work/out/nofmt-plain" >/dev/null 2>&1; then
  fail "the header-only consumer ran with a broken $fmt_soname first on LD_LIBRARY_PATH: the libfmt check proves nothing"
fi
echo "  header-only with nothing else: runs; its object holds the engine; it needs libfmt (the libfmt check can fail)"

echo "== 3. plain compiler, the compiled mode: libnsightkit from the installed sources in one line"
lib_src="$work/moved/share/cmake/nsightkit/src"
(cd "$work/plain" && "$cxx" -std=c++17 -O2 -DNSIGHTKIT_COMPILED -DFMT_HEADER_ONLY -I"$work/moved/include" -I"$nvtx_inc" \
  -c "$lib_src"/nsightkit*.cpp && ar rcs libnsightkit.a nsightkit*.o)
for f in main recorder; do
  "$cxx" -std=c++17 -O1 -DNSIGHTKIT_COMPILED -I"$work/moved/include" -I"$nvtx_inc" -c "$here/common/$f.cpp" \
    -o "$work/plain/$f.compiled.o"
done
"$cxx" -o "$work/plain/consumer_compiled" "$work/plain/main.compiled.o" "$work/plain/recorder.compiled.o" \
  "$work/plain/libnsightkit.a" -ldl -pthread
run_instrumentation "$work/plain/consumer_compiled" enabled plain_compiled
check_objects --compiled-recorder "$work/plain/main.compiled.o" "$work/plain/recorder.compiled.o"
check_no_libfmt "$work/plain/consumer_compiled" "$work/out/nofmt-plain-compiled"
echo "  the program's objects: no report engine code; needs no libfmt"

echo "== 4. add_subdirectory consumer"
cmake -S "$here/subdir" -B "$work/subdir" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
  -DNSIGHTKIT_SOURCE_DIR="$src" >"$work/subdir.log"
cmake --build "$work/subdir" >>"$work/subdir.log"
run_instrumentation "$work/subdir/consumer" enabled subdir
[ -f "$work/subdir/nsightkit/libnsightkit.a" ] || fail "add_subdirectory: no libnsightkit.a built in $work/subdir/nsightkit"
check_no_libfmt "$work/subdir/consumer" "$work/out/nofmt-subdir"
if [ $have_toolkit = 1 ]; then
  [ -x "$work/subdir/consumer_cuda" ] || fail "find_package(CUDAToolkit) found no CUDA::cudart"
  run_cuda "$work/subdir/consumer_cuda" subdir_cuda
fi
if [ -d "$work/subdir/nsightkit/tests" ]; then
  echo "add_subdirectory built nsightkit's tests; they must be off for subprojects" >&2; exit 1
fi

echo "== 5. pkg-config consumer (from the moved copy of the install)"
if command -v pkg-config >/dev/null; then
  export PKG_CONFIG_PATH="$work/moved/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  pkg-config --exists nsightkit
  # pkg-config cannot search: the package's finder names NVTX3's directory (toolkit, then PyPI).
  nvtx_define=$(python3 "$(pkg-config --variable=nvtx3_finder nsightkit)" --define-variable) \
    || fail "nvtx3_finder found no NVTX3"
  echo "  $nvtx_define"
  # shellcheck disable=SC2046
  "$cxx" -std=c++17 -o "$work/pkgconfig_consumer" "$here/common/main.cpp" "$here/common/recorder.cpp" \
    $(pkg-config "$nvtx_define" --cflags --libs nsightkit) -pthread
  run_instrumentation "$work/pkgconfig_consumer" enabled pkgconfig
  check_no_libfmt "$work/pkgconfig_consumer" "$work/out/nofmt-pkgconfig"
  # Raw NVTX calls only: the report starts from NSIGHTKIT_REPORT with the .pc's start-up line.
  # shellcheck disable=SC2046
  "$cxx" -std=c++17 -o "$work/pkgconfig_raw_nvtx" "$src/tests/compiled/raw_nvtx_main.cpp" \
    $(pkg-config "$nvtx_define" --cflags --libs nsightkit) $(pkg-config --variable=startup nsightkit) -ldl -pthread
  NSIGHTKIT_REPORT=table "$work/pkgconfig_raw_nvtx" 2>"$work/pkgconfig_raw_nvtx.err"
  grep -q "^raw step " "$work/pkgconfig_raw_nvtx.err" \
    || { cat "$work/pkgconfig_raw_nvtx.err" >&2; fail "pkg-config: a raw NVTX program with the start-up line printed no table"; }
  echo "  raw NVTX program + \$(pkg-config --variable=startup nsightkit): NSIGHTKIT_REPORT=table prints its ranges"
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

echo "== components: cupti in two sibling directories, an unknown one (optional: reported; required: fails)"
comp="$work/components"
mkdir -p "$comp/a" "$comp/b"
want_cupti=0
[ -f "$work/prefix/lib/pkgconfig/nsightkit-cupti.pc" ] && want_cupti=1
for sub in a b; do
  cat >"$comp/$sub/CMakeLists.txt" <<CMK
find_package(nsightkit CONFIG REQUIRED OPTIONAL_COMPONENTS cupti nosuch)
if(nsightkit_cupti_FOUND AND NOT TARGET nsightkit::cupti)
  message(FATAL_ERROR "nsightkit_cupti_FOUND but no nsightkit::cupti in $sub")
endif()
if(nsightkit_nosuch_FOUND OR NOT nsightkit_FOUND)
  message(FATAL_ERROR "optional component nosuch: nsightkit_nosuch_FOUND=\${nsightkit_nosuch_FOUND}, nsightkit_FOUND=\${nsightkit_FOUND}")
endif()
# (Generating the build checks that the target and what it links resolve in this directory.)
add_executable(probe_$sub "$here/common/probe.cpp")
target_link_libraries(probe_$sub PRIVATE nsightkit::nsightkit)
message(STATUS "components $sub: cupti found=\${nsightkit_cupti_FOUND}")
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
    grep -q "components $sub: cupti found=TRUE" "$comp.log" || { cat "$comp.log" >&2; fail "directory $sub: component cupti not found"; }
  else
    grep -q "components $sub: cupti found=FALSE" "$comp.log" || { cat "$comp.log" >&2; fail "directory $sub: component cupti found without CUPTI"; }
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
echo "  cupti in two sibling directories: $([ $want_cupti = 1 ] && echo found in both || echo not found in either, no CUPTI); nsightkit::nsightkit in both; unknown component: reported / refused"

echo "== a package without libnsightkit's sources (headers only): QUIET not found, REQUIRED fails, both name the file"
rm -rf "$work/no-sources" && cp -a "$work/prefix" "$work/no-sources"
rm -r "$work/no-sources/share/cmake/nsightkit/src"
missing_source="$work/no-sources/share/cmake/nsightkit/src/nsightkit.cpp"
for mode in QUIET REQUIRED; do
  dir="$work/no-sources-$mode"
  mkdir -p "$dir"
  cat >"$dir/CMakeLists.txt" <<CMK
cmake_minimum_required(VERSION 3.22)
project(no_sources LANGUAGES CXX)
find_package(nsightkit CONFIG $mode)
message(STATUS "after find_package: nsightkit_FOUND=\${nsightkit_FOUND}: \${nsightkit_NOT_FOUND_MESSAGE}")
CMK
  rc=0
  cmake -S "$dir" -B "$dir/build" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_PREFIX_PATH="$work/no-sources" >"$dir.log" 2>&1 || rc=$?
  if [ $mode = QUIET ]; then
    [ $rc = 0 ] || { cat "$dir.log" >&2; fail "a package without sources stopped a QUIET configure"; }
    grep -q "after find_package: nsightkit_FOUND=0" "$dir.log" || { cat "$dir.log" >&2; fail "nsightkit_FOUND is not false without sources"; }
  else
    [ $rc != 0 ] || { cat "$dir.log" >&2; fail "find_package(nsightkit REQUIRED) succeeded without sources"; }
  fi
  expect_in "$dir.log" "$missing_source" "the reason names the missing file"
done
echo "  QUIET: not found; REQUIRED: refused; both name $missing_source"

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
