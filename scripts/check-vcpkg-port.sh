#!/usr/bin/env bash
# Tests, without vcpkg (it cannot be installed on nsightkit's machines or in CI), everything
# nsightkit's vcpkg port (ports/nsightkit: an overlay port in this repository, a registry port
# elsewhere) relies on:
#   1. the manifests: ports/nsightkit/vcpkg.json, examples/vcpkg_consumer's vcpkg.json and
#      vcpkg-configuration.json parse; name and version match config.hpp; fmt and nlohmann-json
#      are the only dependencies without the `cuda` feature; the overlay path resolves to the port
#   2. packaging/vcpkg/post_build_checks.py (vcpkg's post-build checks, re-implemented) finds the
#      problems vcpkg reports in packages made wrong on purpose (a .pc with Libs in
#      share/pkgconfig, an absolute path, CMake files in lib/cmake, no copyright, an empty folder,
#      a bin/ folder in a static build)
#   3. the portfile in this repository, run unchanged with vcpkg's helpers emulated in plain CMake
#      (packaging/vcpkg/emulate-port.cmake): it builds this checkout (libnsightkit, the nsightkit
#      command, its NVTX tool libraries): configure with its OPTIONS, build, install, config fixup,
#      pkg-config fixup (pkg-config must resolve each module), usage, copyright; then the
#      post-build checks must find 0 problems; then the package is copied into installed/<triplet>
#      as `vcpkg install` does. Without features and, where a CUDA toolkit exists, with `cuda`
#      (lib/pkgconfig/nsightkit-cupti.pc). The command (tools/nsightkit) runs `nsightkit profile`
#      on an unmodified NVTX program with the installed tool library
#   4. the same port outside this repository (as in a registry): a release archive made from this
#      tree, the port updated for it by packaging/vcpkg/update-registry-port.sh (SHA512),
#      vcpkg_from_github emulated (the archive in vcpkg's downloads folder, its SHA512 checked: a
#      changed archive must be refused), then as 3
#   5. examples/vcpkg_consumer built against installed/<triplet> through CMAKE_PREFIX_PATH (what
#      vcpkg's toolchain file sets), enabled and with -DAPP_DISABLE_INSTRUMENTATION=ON, and run; it
#      builds libnsightkit from the installed sources
#   6. the exact CMake lines printed by ports/nsightkit/usage, in a project of their own, and run
#   7. the pkg-config module named in usage, with the fixed-up .pc file and the nvtx3_finder line
#      usage gives: the program links the installed libnsightkit and no libfmt
# Not tested (needs vcpkg): the vcpkg tool and its toolchain file, manifest resolution and the
# registry baseline, vcpkg's fmt, nlohmann-json and cuda ports (the system's here), binary
# caching, the RPATH fixup, and the real vcpkg_* helpers and post-build checks (emulated from
# vcpkg's sources).
# Usage: scripts/check-vcpkg-port.sh [work dir (default build/vcpkg-check)]
# Env: CXX (default g++)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/build/vcpkg-check}
work=$(mkdir -p "$work" && cd "$work" && pwd)
cxx=${CXX:-g++}
port="$root/ports/nsightkit"
consumer="$root/examples/vcpkg_consumer"
checks="$root/packaging/vcpkg/post_build_checks.py"
tested=()
untested=()

step() { echo "::: [vcpkg] $*"; }
fail() { echo "check-vcpkg-port: FAILED: $*" >&2; exit 1; }
# shellcheck source=check-lib.sh
source "$root/scripts/check-lib.sh"

rm -rf "$work"
mkdir -p "$work"
case "$(uname -m)" in
  x86_64) triplet=x64-linux ;;
  aarch64) triplet=arm64-linux ;;
  *) fail "no vcpkg Linux triplet for $(uname -m)" ;;
esac
cuda_root=""
for d in "${CUDA_PATH:-}" "${CUDA_HOME:-}" /usr/local/cuda; do
  if [ -n "$d" ] && [ -x "$d/bin/nvcc" ]; then cuda_root=$d; break; fi
done
[ -f "$root/LICENSE" ] || fail "the repository has no LICENSE file: vcpkg_install_copyright would stop"

step "manifests"
python3 - "$root" <<'PY' || fail "manifest check"
import json, os, re, sys
root = sys.argv[1]
def load(p):
    with open(os.path.join(root, p)) as f:
        return json.load(f)
port = load("ports/nsightkit/vcpkg.json")
app = load("examples/vcpkg_consumer/vcpkg.json")
conf = load("examples/vcpkg_consumer/vcpkg-configuration.json")
cfg = open(os.path.join(root, "include/nsightkit/config.hpp")).read()
version = ".".join(re.search(rf"#define NSIGHTKIT_VERSION_{p} (\d+)", cfg).group(1) for p in ("MAJOR", "MINOR", "PATCH"))
errors = []
if port.get("name") != "nsightkit": errors.append("port name is not nsightkit")
if port.get("version-semver") != version: errors.append(f"port version {port.get('version-semver')} != config.hpp {version}")
if "homepage" in port and "example.invalid" in port["homepage"]: errors.append("a placeholder homepage")
names = {d if isinstance(d, str) else d["name"]: d for d in port.get("dependencies", [])}
for host in ("vcpkg-cmake", "vcpkg-cmake-config"):
    if not isinstance(names.get(host), dict) or not names[host].get("host"):
        errors.append(f"{host} must be a host dependency")
if set(names) != {"fmt", "nlohmann-json", "vcpkg-cmake", "vcpkg-cmake-config"}:
    errors.append(f"dependencies without features must be fmt, nlohmann-json and the host helpers, not {sorted(names)}")
cuda = port.get("features", {}).get("cuda", {})
if "cuda" not in [d if isinstance(d, str) else d["name"] for d in cuda.get("dependencies", [])]:
    errors.append("the cuda feature must depend on vcpkg's cuda port")
if "disable" in port.get("features", {}):
    errors.append("disabling must stay the consumer's macro, not a feature")
if "nsightkit" not in [d if isinstance(d, str) else d["name"] for d in app.get("dependencies", [])]:
    errors.append("the consumer manifest does not depend on nsightkit")
overlays = conf.get("overlay-ports", [])
base = os.path.join(root, "examples/vcpkg_consumer")
if not any(os.path.isfile(os.path.join(base, o, "nsightkit", "portfile.cmake")) for o in overlays):
    errors.append(f"no overlay in {overlays} holds nsightkit/portfile.cmake")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
print(f"manifests ok: nsightkit {version}, overlay-ports {overlays}")
PY
version=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version-semver"])' "$port/vcpkg.json")
tested+=("manifests: name/version (= config.hpp), fmt and nlohmann-json (+ cuda feature), host deps, overlay path")

step "the post-build checks find what vcpkg finds (packages made wrong on purpose)"
bad="$work/bad/packages/nsightkit_$triplet"
mkdir -p "$bad/include/nsightkit" "$bad/share/pkgconfig" "$bad/lib/cmake/nsightkit" "$bad/share/nsightkit/empty" "$bad/bin"
echo "not a program" >"$bad/bin/nsightkit"
echo "#pragma once" >"$bad/include/nsightkit/nsightkit.hpp"
printf 'prefix=%s\nincludedir=${prefix}/include\n\nName: nsightkit\nDescription: x\nVersion: 1\nCflags: -I${includedir}\nLibs: -ldl\n' \
  "$bad" >"$bad/share/pkgconfig/nsightkit.pc"
echo "set(x 1)" >"$bad/lib/cmake/nsightkit/nsightkit-config.cmake"
rc=0
python3 "$checks" --package "$bad" --port "$port" --forbid "$work/bad/packages" >"$work/bad.log" 2>&1 || rc=$?
for want in "Misplaced pkgconfig files" "absolute paths" "CMake files belong in share" "share/nsightkit/copyright" \
            "did not install it to share/nsightkit/usage" "no empty directories" "no bin/ directory in a static build"; do
  grep -qF "$want" "$work/bad.log" || { cat "$work/bad.log" >&2; fail "post_build_checks.py missed: $want"; }
done
[ "$rc" = 7 ] || { cat "$work/bad.log" >&2; fail "post_build_checks.py counted $rc problems, expected 7"; }
tested+=("post_build_checks.py reports vcpkg's 7 problems in a package made wrong on purpose")

installed="$work/installed/$triplet"
run_port() {  # name, port dir, features, extra -D...
  local name=$1 dir=$2 features=$3; shift 3
  cmake -DPORT_DIR="$dir" -DWORK="$work" -DTRIPLET="$triplet" "-DFEATURES=$features" -DCUDA_ROOT="$cuda_root" "$@" \
    -P "$root/packaging/vcpkg/emulate-port.cmake" >"$work/$name.log" 2>&1 \
    || { cat "$work/$name.log" >&2; fail "$name: portfile (log: $work/$name.log)"; }
  grep -q "post-build checks: 0 problems" "$work/$name.log" || fail "$name: no post-build check result in $work/$name.log"
  for f in include/nsightkit/nsightkit.hpp share/nsightkit/nsightkit-config.cmake \
           share/nsightkit/nsightkit-config-version.cmake share/nsightkit/nsightkit-targets.cmake \
           share/nsightkit/nsightkitDependencies.cmake share/nsightkit/nsightkit-find-nvtx3.py \
           share/nsightkit/nsightkitLibrary.cmake share/nsightkit/src/nsightkit.cpp \
           share/nsightkit/src/nsightkit_cuda.cpp share/nsightkit/src/nsightkit_startup.cpp \
           share/nsightkit/usage share/nsightkit/copyright lib/pkgconfig/nsightkit.pc lib/libnsightkit.a \
           lib/nsightkit/libnsightkit-nvtx.so tools/nsightkit/nsightkit; do
    [ -f "$installed/$f" ] || fail "$name: installed tree lacks $f"
  done
  if grep -q NSIGHTKIT_DISABLE "$installed/share/nsightkit/nsightkit-targets.cmake"; then
    fail "$name: the installed targets bake NSIGHTKIT_DISABLE in"
  fi
  # shellcheck disable=SC2016  # a literal ${pcfiledir}
  grep -qx 'prefix=${pcfiledir}/../..' "$installed/lib/pkgconfig/nsightkit.pc" || fail "$name: nsightkit.pc prefix not relocatable"
  # The command, run from the installed tree, injects the installed tool library.
  "$installed/tools/nsightkit/nsightkit" profile --report "table=$work/$name-profile.txt" -- "$nvtx_program" 0 \
    >"$work/$name-profile.log" 2>&1 || { cat "$work/$name-profile.log" >&2; fail "$name: tools/nsightkit/nsightkit profile"; }
  grep -q "train_step" "$work/$name-profile.txt" || fail "$name: nsightkit profile's table lacks the program's ranges"
}
# An unmodified NVTX program for the installed command to profile.
nvtx_program="$work/nvtx_program"
nvtx_inc=$(python3 "$root/cmake/nsightkit-find-nvtx3.py" 2>/dev/null) || nvtx_inc=/usr/local/cuda/include
"$cxx" -std=c++17 -O1 -I"$nvtx_inc" "$root/tests/nvtx_tool/nvtx_program.cpp" -o "$nvtx_program" -ldl -pthread \
  || fail "compile tests/nvtx_tool/nvtx_program.cpp"

if [ -n "$cuda_root" ]; then
  step "overlay port, feature cuda ($triplet, CUDA at $cuda_root)"
  run_port overlay-cuda "$port" "core;cuda"
  [ -f "$installed/lib/pkgconfig/nsightkit-cupti.pc" ] || fail "feature cuda: no lib/pkgconfig/nsightkit-cupti.pc"
  tested+=("port [cuda] in this repository: emulated helpers, 0 post-build problems, nsightkit-cupti.pc in lib/pkgconfig, nsightkit profile from tools/nsightkit")
else
  untested+=("port [cuda]: no CUDA toolkit (nvcc) in CUDA_PATH, CUDA_HOME or /usr/local/cuda")
fi

step "the port outside this repository (vcpkg_from_github): release archive, update-registry-port.sh, SHA512 checked"
reg="$work/registry/ports/nsightkit"
mkdir -p "$(dirname "$reg")" "$work/downloads"
cp -r "$port" "$reg"
repo=$(sed -n 's/^    REPO \(.*\)$/\1/p' "$port/portfile.cmake")
archive="$work/downloads/${repo//\//-}-v$version.tar.gz"
# What GitHub serves for the tag: the tree under one top directory (only what the port builds).
tar -C "$root" -czf "$archive" --transform "s,^,${repo#*/}-$version/," CMakeLists.txt cmake include src tools LICENSE
bash "$root/packaging/vcpkg/update-registry-port.sh" --repo "$repo" --version "$version" --archive "$archive" \
  --port-dir "$reg" >"$work/update-registry-port.log" 2>&1 || { cat "$work/update-registry-port.log" >&2; fail "update-registry-port.sh"; }
grep -q "SHA512 $(sha512sum "$archive" | cut -c1-128)" "$reg/portfile.cmake" || fail "the updated port does not carry the archive's SHA512"
cp "$archive" "$work/archive.orig"
echo " " >>"$archive"
if cmake -DPORT_DIR="$reg" -DWORK="$work" -DTRIPLET="$triplet" -P "$root/packaging/vcpkg/emulate-port.cmake" \
     >"$work/registry-badsha.log" 2>&1; then
  fail "the registry port accepted an archive whose SHA512 differs"
fi
log_has "SHA512 mismatch" "$work/registry-badsha.log" \
  || { cat "$work/registry-badsha.log" >&2; fail "refused for another reason than the SHA512"; }
cp "$work/archive.orig" "$archive"
run_port registry "$reg" core
grep -q "vcpkg_from_github: $repo@v$version (SHA512 ok)" "$work/registry.log" || fail "registry port: vcpkg_from_github was not used"
tested+=("the port as a registry port: update-registry-port.sh wrote the archive's SHA512, a changed archive is refused, the port builds from the archive with 0 post-build problems")

step "the port in this repository, no features ($triplet)"
run_port overlay "$port" core
tested+=("the port in this repository (no features): builds the checkout, emulated helpers, 0 post-build problems, libnsightkit, tools/nsightkit/nsightkit profile")

build_consumer() {  # name, cmake source, extra args...
  local name=$1 src=$2; shift 2
  cmake -S "$src" -B "$work/$name" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_PREFIX_PATH="$installed" "$@" >"$work/$name.log" 2>&1 \
    || { tail -30 "$work/$name.log" >&2; fail "configure $name"; }
  grep -q "nsightkit_DIR:PATH=$installed/share/nsightkit" "$work/$name/CMakeCache.txt" \
    || fail "$name did not find nsightkit in $installed/share/nsightkit"
  cmake --build "$work/$name" >>"$work/$name.log" 2>&1 || { tail -30 "$work/$name.log" >&2; fail "build $name"; }
}

step "examples/vcpkg_consumer against installed/$triplet"
build_consumer app "$consumer"
grep -m1 "nsightkit $version: NVTX3 from" "$work/app.log" | sed 's/^/  /'
"$work/app/vcpkg_consumer" | tee "$work/app.out" | tail -1
grep -q "instrumentation enabled, 10 NVTX events" "$work/app.out" || fail "vcpkg_consumer (enabled)"
build_consumer app-disabled "$consumer" -DAPP_DISABLE_INSTRUMENTATION=ON
"$work/app-disabled/vcpkg_consumer" | tee "$work/app-disabled.out" | tail -1
grep -q "instrumentation disabled, 0 NVTX events" "$work/app-disabled.out" || fail "vcpkg_consumer (disabled)"
tested+=("examples/vcpkg_consumer via CMAKE_PREFIX_PATH=installed/$triplet: enabled (10 NVTX events) and APP_DISABLE_INSTRUMENTATION=ON (0)")

step "the CMake lines of ports/nsightkit/usage"
usage_lines=$(grep -E '^    (find_package|target_[a-z_]+)\(' "$port/usage") || fail "no CMake lines in usage"
while IFS= read -r line; do echo "  $line"; done <<<"$usage_lines"
for variant in link disable; do
  dir="$work/usage-$variant"
  mkdir -p "$dir"
  cp "$consumer/main.cpp" "$consumer/recorder.cpp" "$dir/"
  {
    echo "cmake_minimum_required(VERSION 3.22)"
    echo "project(usage_$variant LANGUAGES CXX)"
    while IFS= read -r line; do
      line=${line#    }
      case "$line" in
        find_package*) echo "$line"; echo "add_executable(main main.cpp recorder.cpp)" ;;
        target_compile_definitions*) if [ "$variant" = disable ]; then echo "$line"; fi ;;
        *) echo "$line" ;;
      esac
    done <<<"$usage_lines"
  } >"$dir/CMakeLists.txt"
  build_consumer "usage-$variant-build" "$dir"
  "$work/usage-$variant-build/main" >"$work/usage-$variant.out" || { cat "$work/usage-$variant.out" >&2; fail "usage ($variant) program"; }
  want=enabled
  if [ "$variant" = disable ]; then want=disabled; fi
  grep -q "instrumentation $want" "$work/usage-$variant.out" || fail "usage ($variant): instrumentation not $want"
  tail -1 "$work/usage-$variant.out"
done
tested+=("usage: find_package + target_link_libraries (enabled), + target_compile_definitions NSIGHTKIT_DISABLE (disabled)")

step "pkg-config modules named in usage"
mapfile -t modules < <(awk '/provides pkg-config modules:/{f=1;next} /^[^ ]/{f=0} f && /^    [A-Za-z]/{print $1}' "$port/usage")
[ "${modules[*]}" = "nsightkit" ] || fail "usage names pkg-config modules '${modules[*]}'"
export PKG_CONFIG_PATH="$installed/lib/pkgconfig"
finder_line=$(grep -E '^    python3 .*nvtx3_finder' "$port/usage" | sed 's/^    //') || fail "usage gives no nvtx3_finder line"
define=$(eval "$finder_line") || fail "usage's line '$finder_line' failed"
echo "  $finder_line -> $define"
for module in "${modules[@]}"; do
  out=$(pkg-config --validate "$module" 2>&1) || fail "pkg-config --validate $module: $out"
  # shellcheck disable=SC2046
  "$cxx" -std=c++17 -o "$work/pkgconfig_$module" "$consumer/main.cpp" "$consumer/recorder.cpp" \
    $(pkg-config "$define" --cflags --libs "$module") -pthread || fail "compile with pkg-config --cflags --libs $module"
  "$work/pkgconfig_$module" | tail -1
done
if readelf -d "$work/pkgconfig_nsightkit" | grep NEEDED | grep -c libfmt >/dev/null; then
  fail "the pkg-config program links libfmt"
fi
tested+=("pkg-config: ${modules[*]} from installed/$triplet (prefix=\${pcfiledir}/../.., --validate clean, NVTX3 by usage's nvtx3_finder line, libnsightkit linked, no libfmt)")

echo "check-vcpkg-port: $(cmake --version | sed -n 1p), $("$cxx" --version | sed -n 1p), triplet $triplet"
for t in "${tested[@]}"; do echo "  passed: $t"; done
for t in "${untested[@]}"; do echo "  NOT TESTED: $t"; done
echo "  NOT TESTED (needs vcpkg): the vcpkg tool, its toolchain file and manifest resolution, vcpkg's fmt and cuda ports, the real vcpkg_* helpers and post-build checks (emulated)"
echo "${#tested[@]} passed, 0 failed"
