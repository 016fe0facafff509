#!/usr/bin/env bash
# Makes nsightkit's vcpkg port (ports/nsightkit) point at a release of nsightkit for a registry:
# "version-semver" in its vcpkg.json, REPO and SHA512 in its portfile.cmake (REF is "v${VERSION}",
# the release tag), which the port uses wherever it is not inside nsightkit's repository. Run it
# for each release, after the tag is pushed, and commit the change:
#
#   packaging/vcpkg/update-registry-port.sh --repo <owner>/<name> --version 0.2.0
#       downloads https://github.com/<owner>/<name>/archive/v0.2.0.tar.gz (what vcpkg_from_github
#       downloads) and writes its SHA512
#   packaging/vcpkg/update-registry-port.sh --repo <owner>/<name> --version 0.2.0 --archive <file>
#       the same with an archive already at hand (no network)
#
# It also checks that the version is config.hpp's. Then publish the port directory: to a
# registry of your own (copy it to <registry>/ports/nsightkit, commit, then
# `vcpkg x-add-version nsightkit --x-builtin-ports-root=ports --x-builtin-registry-versions-dir=versions`
# and commit again), or as a pull request to microsoft/vcpkg (copy it to ports/nsightkit, then
# `vcpkg x-add-version nsightkit`).
# Options: --port-dir <dir> updates another copy of the port (the check script uses it).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
port="$root/ports/nsightkit"
repo="" version="" archive=""
while [ $# -gt 0 ]; do
  case "$1" in
    --repo) repo=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    --archive) archive=$2; shift 2 ;;
    --port-dir) port=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "update-registry-port: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
fail() { echo "update-registry-port: $*" >&2; exit 1; }
[[ "$repo" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]] || fail "--repo <owner>/<name> is required (got '$repo')"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "--version X.Y.Z is required (got '$version')"
[ -f "$port/portfile.cmake" ] && [ -f "$port/vcpkg.json" ] || fail "no port in $port"

cfg="$root/include/nsightkit/config.hpp"
cfg_version=$(for p in MAJOR MINOR PATCH; do sed -n "s/^#define NSIGHTKIT_VERSION_$p \([0-9]*\).*/\1/p" "$cfg"; done | paste -sd.)
[ "$cfg_version" = "$version" ] || fail "config.hpp says $cfg_version, not $version: release from the tagged commit"

if [ -z "$archive" ]; then
  url="https://github.com/$repo/archive/v$version.tar.gz"
  archive=$(mktemp)
  trap 'rm -f "$archive"' EXIT
  curl -fsSL "$url" -o "$archive" || fail "cannot download $url"
fi
[ -s "$archive" ] || fail "$archive is empty or missing"
sha=$(sha512sum "$archive" | cut -d' ' -f1)

python3 - "$port" "$repo" "$version" "$sha" <<'PY'
import json, re, sys
port, repo, version, sha = sys.argv[1:]
pf = f"{port}/portfile.cmake"
text = open(pf).read()
text, n1 = re.subn(r"(\n[ \t]+REPO )\S+", rf"\g<1>{repo}", text, count=1)
text, n2 = re.subn(r"(\n[ \t]+SHA512 )\S+", rf"\g<1>{sha}", text, count=1)
if n1 != 1 or n2 != 1 or not re.search(r'\n[ \t]+REF "v\$\{VERSION\}"', text):
    sys.exit(f"update-registry-port: {pf}: expected one REPO, one SHA512 and REF \"v${{VERSION}}\" in vcpkg_from_github")
open(pf, "w").write(text)
vj = f"{port}/vcpkg.json"
manifest = json.load(open(vj))
if manifest.get("version-semver") != version:
    manifest.pop("port-version", None)  # a new version starts again at port-version 0
manifest["version-semver"] = version
with open(vj, "w") as f:
    json.dump(manifest, f, indent=2)
    f.write("\n")
PY
echo "update-registry-port: $port -> $repo v$version, SHA512 ${sha:0:16}..."
