#!/usr/bin/env bash
# Checks that nsightkit's C++/CUDA sources follow .clang-format (clang-format-14, Debian's
# clang-format package). Prints, per file, how many lines clang-format would change.
# Usage: scripts/check-format.sh [--fix]   (--fix rewrites the files in place)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cf=""
for c in clang-format-14 clang-format; do
  if command -v "$c" >/dev/null; then cf=$c; break; fi
done
[ -n "$cf" ] || { echo "check-format: clang-format not found (Debian: apt-get install clang-format)" >&2; exit 1; }
# Tracked and new (not ignored) sources; build trees are ignored by .gitignore.
mapfile -t files < <(git ls-files -co --exclude-standard -- \
  '*.hpp' '*.cpp' '*.cu' '*.cuh' '*.h' | grep -v '^build' || true)
[ ${#files[@]} -gt 0 ] || { echo "check-format: no sources found" >&2; exit 1; }
if [ "${1:-}" = "--fix" ]; then
  "$cf" -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files with $("$cf" --version)"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  n=$("$cf" "$f" | diff "$f" - | grep -c '^<' || true)
  if [ "$n" -ne 0 ]; then
    echo "  $f: $n line(s) to reformat"
    bad=$((bad + 1))
  fi
done
if [ "$bad" -ne 0 ]; then
  echo "check-format: FAILED: $bad of ${#files[@]} files differ from .clang-format ($cf --dry-run --Werror <file> shows where; scripts/check-format.sh --fix rewrites them)" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files follow .clang-format ($("$cf" --version))"
