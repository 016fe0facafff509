#!/usr/bin/env bash
# Compile cost of the public headers at a commit and in the working tree, in one run (see
# bench/compile_cost.py; its options follow the commit).
# usage: bench/compile_cost.sh COMMIT [compile_cost.py options...]
#   e.g. bench/compile_cost.sh 9e5fd13 --repeat 3 --json cc.json --markdown cc.md
# The commit's tree is checked out with `git worktree add` into a temporary directory (removed
# afterwards); the working tree's include/ is copied first, so edits made meanwhile do not mix in.
# Both are measured in every configuration compile_cost.py is given (default: default, disabled,
# header-only).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ $# -lt 1 ]; then
  echo "usage: bench/compile_cost.sh COMMIT [compile_cost.py options...]" >&2
  exit 2
fi
commit=$1
shift
short=$(git -C "$root" rev-parse --short "$commit^{commit}")
tmp=$(mktemp -d)
cleanup() {
  git -C "$root" worktree remove --force "$tmp/before" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/now"
cp -r "$root/include" "$tmp/now/"
git -C "$root" worktree add --detach --quiet "$tmp/before" "$short"
python3 "$root/bench/compile_cost.py" --tree "$short=$tmp/before/include" \
  --tree "working tree=$tmp/now/include" "$@"
