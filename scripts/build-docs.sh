#!/usr/bin/env bash
# Builds nsightkit's API reference with Doxygen (docs/Doxyfile) and fails on any warning
# (an undocumented public symbol, a bad @param, an unresolved reference, ...).
# Installs nothing: needs `doxygen` (Debian: apt-get install doxygen).
# Usage: scripts/build-docs.sh [output dir (default build/docs)]
#   The HTML lands in <output dir>/html/index.html, the warnings in <output dir>/doxygen.log.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/docs}
mkdir -p "$out"
out=$(cd "$out" && pwd)
command -v doxygen >/dev/null || { echo "build-docs: doxygen not found (Debian: apt-get install doxygen)" >&2; exit 1; }
cfg="$root/include/nsightkit/config.hpp"
version=$(for p in MAJOR MINOR PATCH; do sed -n "s/^#define NSIGHTKIT_VERSION_$p \([0-9]*\)$/\1/p" "$cfg"; done | paste -sd.)
rm -rf "$out/html"
cd "$root"   # the Doxyfile's paths are relative to the repository root
status=0
{ cat docs/Doxyfile; echo "OUTPUT_DIRECTORY = \"$out\""; echo "PROJECT_NUMBER = $version"; } \
  | doxygen - >"$out/doxygen.log" 2>&1 || status=$?
# Doxygen's FAIL_ON_WARNINGS exit code is the verdict; the log is shown either way.
warnings=$(grep -c ': warning: \|: error: ' "$out/doxygen.log" || true)
if [ "$status" -ne 0 ] || [ "$warnings" -ne 0 ]; then
  cat "$out/doxygen.log" >&2
  echo "build-docs: FAILED: doxygen exit $status, $warnings warning(s) (log: $out/doxygen.log)" >&2
  exit 1
fi
[ -f "$out/html/index.html" ] || { echo "build-docs: no $out/html/index.html" >&2; exit 1; }
pages=("$out"/html/*.html)
echo "build-docs: $(doxygen --version), nsightkit $version: 0 warnings, ${#pages[@]} HTML pages in $out/html"
