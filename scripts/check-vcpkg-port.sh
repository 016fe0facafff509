#!/usr/bin/env bash
# Tests, without vcpkg (which cannot be installed here), everything nsightkit's overlay port
# ports/nsightkit relies on:
#   1. the manifests: ports/nsightkit/vcpkg.json, examples/vcpkg_consumer/vcpkg.json and
#      vcpkg-configuration.json parse; port name and version match config.hpp; the overlay path
#      resolves to the port; vcpkg-cmake(-config) are host dependencies
#   2. the portfile, run unchanged with vcpkg's helpers emulated in plain CMake
#      (packaging/vcpkg/emulate-port.cmake): configure with its OPTIONS, install, the config in
#      share/nsightkit, pkg-config fixup, usage, copyright, no absolute paths; then the package is
#      copied into installed/<triplet> as `vcpkg install` does and the packages dir removed
#   3. examples/vcpkg_consumer built against installed/<triplet> through CMAKE_PREFIX_PATH (what
#      vcpkg's toolchain file sets), enabled and with -DAPP_DISABLE_INSTRUMENTATION=ON, and run
#   4. the exact CMake lines printed by ports/nsightkit/usage, in a project of their own, and run
#   5. the pkg-config module named in usage, with the fixed-up nsightkit.pc
# Not tested (needs vcpkg): the vcpkg tool and its toolchain file, manifest resolution and the
# registry baseline, vcpkg's fmt and cuda ports (fmt is Debian's 9.1.0 here; vcpkg ships newer
# majors), the real vcpkg_* helpers and post-build checks, binary caching.
# Usage: scripts/check-vcpkg-port.sh [work dir (default build/vcpkg-check)]
# Env: CXX (default g++); NSIGHTKIT_VCPKG_STRICT=1 makes a missing LICENSE a failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/build/vcpkg-check}
work=$(mkdir -p "$work" && cd "$work" && pwd)
cxx=${CXX:-g++}
port="$root/ports/nsightkit"
consumer="$root/examples/vcpkg_consumer"
tested=()
untested=()

step() { echo "::: [vcpkg] $*"; }
fail() { echo "check-vcpkg-port: FAILED: $*" >&2; exit 1; }

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
[ -n "$cuda_root" ] || fail "no CUDA toolkit (nvcc) in CUDA_PATH, CUDA_HOME or /usr/local/cuda: the port depends on vcpkg's cuda port"

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
names = {d if isinstance(d, str) else d["name"]: d for d in port.get("dependencies", [])}
for host in ("vcpkg-cmake", "vcpkg-cmake-config"):
    if not isinstance(names.get(host), dict) or not names[host].get("host"):
        errors.append(f"{host} must be a host dependency")
for dep in ("fmt", "cuda"):
    if dep not in names: errors.append(f"port lacks dependency {dep}")
if "features" in port and "disable" in port["features"]:
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
tested+=("manifests: port name/version (= config.hpp), host deps, overlay path of vcpkg-configuration.json")

step "portfile with emulated vcpkg helpers ($triplet, CUDA at $cuda_root)"
allow_missing=ON
if [ "${NSIGHTKIT_VCPKG_STRICT:-0}" = 1 ]; then allow_missing=OFF; fi
cmake -DPORT_DIR="$port" -DWORK="$work" -DTRIPLET="$triplet" -DCUDA_ROOT="$cuda_root" \
  -DALLOW_MISSING_COPYRIGHT=$allow_missing -P "$root/packaging/vcpkg/emulate-port.cmake" >"$work/portfile.log" 2>&1 \
  || { cat "$work/portfile.log" >&2; fail "portfile (log: $work/portfile.log)"; }
installed="$work/installed/$triplet"
for f in include/nsightkit/nsightkit.hpp share/nsightkit/nsightkit-config.cmake \
         share/nsightkit/nsightkit-config-version.cmake share/nsightkit/nsightkit-targets.cmake \
         share/nsightkit/nsightkitDependencies.cmake share/nsightkit/usage share/pkgconfig/nsightkit.pc; do
  [ -f "$installed/$f" ] || fail "installed tree lacks $f"
done
if grep -q NSIGHTKIT_DISABLE "$installed/share/nsightkit/nsightkit-targets.cmake"; then
  fail "the installed targets bake NSIGHTKIT_DISABLE in"
fi
tested+=("portfile.cmake run unchanged (emulated helpers): configure/install, config in share/nsightkit, no absolute paths, usage")
if [ -f "$work/copyright-missing" ]; then
  echo "check-vcpkg-port: WARNING: $(cat "$work/copyright-missing") does not exist: vcpkg_install_copyright would fail"
  untested+=("copyright: the repository has no LICENSE file (vcpkg_install_copyright would stop)")
else
  [ -s "$installed/share/nsightkit/copyright" ] || fail "installed tree lacks share/nsightkit/copyright"
  tested+=("copyright installed from LICENSE")
fi

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

step "pkg-config module named in usage"
module=$(awk '/provides pkg-config modules:/{f=1;next} f && /^    [A-Za-z]/{print $1}' "$port/usage")
[ "$module" = nsightkit ] || fail "usage names pkg-config module '$module', expected nsightkit"
export PKG_CONFIG_PATH="$installed/share/pkgconfig"
# shellcheck disable=SC2016  # a literal ${pcfiledir}
grep -qx 'prefix=${pcfiledir}/../..' "$installed/share/pkgconfig/nsightkit.pc" || fail "nsightkit.pc prefix not relocatable"
# shellcheck disable=SC2046
"$cxx" -std=c++17 -o "$work/pkgconfig_app" "$consumer/main.cpp" "$consumer/recorder.cpp" \
  $(pkg-config --cflags --libs "$module") -pthread || fail "compile with pkg-config --cflags --libs $module"
"$work/pkgconfig_app" | tail -1
tested+=("pkg-config --cflags --libs nsightkit from installed/$triplet/share/pkgconfig (prefix=\${pcfiledir}/../..)")

echo "check-vcpkg-port: $(cmake --version | head -1), $("$cxx" --version | head -1), triplet $triplet"
for t in "${tested[@]}"; do echo "  passed: $t"; done
for t in "${untested[@]}"; do echo "  NOT TESTED: $t"; done
echo "  NOT TESTED (needs vcpkg): the vcpkg tool, its toolchain file and manifest resolution, vcpkg's fmt and cuda ports, the real vcpkg_* helpers and post-build checks"
echo "${#tested[@]} passed, 0 failed"
