#!/usr/bin/env python3
"""Runs a command and checks its exit status and what it writes on stderr (ctest's
PASS_REGULAR_EXPRESSION cannot check a status, WILL_FAIL accepts any failure).

  check_exit.py --status N --stderr REGEX [--empty-stdout] -- COMMAND [ARGS...]

Exit status 0 when COMMAND exits with N and REGEX matches its stderr (re.search, multi-line),
and, with --empty-stdout, it wrote nothing on stdout; 1 otherwise, saying what differed.
"""
import argparse
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--status", type=int, required=True)
    ap.add_argument("--stderr", required=True)
    ap.add_argument("--empty-stdout", action="store_true")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        ap.error("no command after --")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    problems = []
    if r.returncode != a.status:
        problems.append(f"exit status {r.returncode}, expected {a.status}")
    if not re.search(a.stderr, r.stderr, re.MULTILINE):
        problems.append(f"stderr does not match {a.stderr!r}")
    if a.empty_stdout and r.stdout:
        problems.append("it wrote on stdout")
    if problems:
        print(f"check_exit.py: FAIL: {' '.join(cmd)}: {'; '.join(problems)}\n"
              f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}", file=sys.stderr)
        return 1
    print(f"check_exit.py: ok: status {r.returncode}, stderr: {r.stderr.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
