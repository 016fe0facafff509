#!/usr/bin/env python3
"""`nsightkit profile` and the report as an NVTX tool, on real processes.

usage: run_profile.py CASE --command NSIGHTKIT --dir SCRATCH [--program EXE] [--mixed EXE]
                       [--other-tool LIB] [--python PYTHON] [--script PY]

CASE:
  raw      an unmodified C++ program with NVTX ranges only: its paths and counts, its exit status
  mixed    a program with its own report and raw NVTX ranges: every range counted once
  python   a Python script using the `nvtx` package (PyPI); exit 77 (skipped) without it
  usage    bad options, a missing program: exit status and message
  other    another NVTX tool attached: it gets the ranges, the report says so in one line and keeps
           nsightkit's own ranges
Standard library only.
"""

import argparse
import json
import os
import subprocess
import sys

SKIP = 77


def run(cmd, env_extra=None, env_drop=()):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("NSIGHTKIT_") or k in env_drop:
            del env[k]
    env.update(env_extra or {})
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    sys.stderr.write(f"$ {' '.join(cmd)}\nexit {p.returncode}\nstderr:\n{p.stderr}\n")
    return p


def counts(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("format") != "nsightkit-report":
        raise SystemExit(f"{path}: not a report")
    return doc, {row["path"]: row["count"] for row in doc["paths"]}


def expect(cond, what):
    if not cond:
        raise SystemExit(f"FAILED: {what}")
    print(f"ok: {what}")


def case_raw(a):
    out = os.path.join(a.dir, "raw.json")
    p = run([a.command, "profile", "--report", f"json={out},table", "--", a.program, "3"])
    expect(p.returncode == 3, "the exit status is the program's (3)")
    doc, c = counts(out)
    expect(c.get("train_step") == 6, "train_step: 6 calls")
    expect(c.get("train_step/forward") == 6, "train_step/forward: 6 calls")
    expect(c.get("train_step/forward/Solver@factor") == 6,
           "a registered string of a named domain: Solver@factor under forward")
    expect(c.get("train_step/backward") == 6, "the C API's push/pop: backward")
    expect(len(c) == 4, f"no other paths ({sorted(c)})")
    se = {r["name"]: r["time"]["count"] for r in doc["start_end_ranges"]}
    expect(se == {"whole run": 1}, "a start/end range ended on another thread")
    marks = {m["name"]: m["count"] for m in doc["marks"]}
    expect(marks == {"step done": 6}, "marks")
    expect(any(t["name"] == "main loop" for t in doc["threads"]), "the thread's NVTX name")
    expect("train_step" in p.stderr and "Solver@factor" in p.stderr, "the table on stderr")


def case_mixed(a):
    out = os.path.join(a.dir, "mixed.json")
    p = run([a.command, "profile", "--report", f"json={out}", "--", a.mixed])
    expect(p.returncode == 0, "exit status 0")
    _, c = counts(out)
    expect(c == {"model": 4, "model/library call": 4, "model/library call/layer": 4},
           f"nsightkit's and raw ranges nested, each counted once ({c})")
    expect("second copy" not in p.stderr and "stays off" not in p.stderr,
           "the program's report takes the modules: no second report")


def case_python(a):
    if not a.python:
        print("no Python with the nvtx package given: skipped")
        return SKIP
    probe = subprocess.run([a.python, "-c", "import nvtx"], capture_output=True)
    if probe.returncode != 0:
        print(f"{a.python} has no nvtx package: skipped")
        return SKIP
    out = os.path.join(a.dir, "python.json")
    p = run([a.command, "profile", "--report", f"json={out}", "--", a.python, a.script])
    expect(p.returncode == 0, "exit status 0")
    doc, c = counts(out)
    expect(c.get("trainer@epoch") == 5, "a named domain's ranges: trainer@epoch")
    expect(c.get("trainer@epoch/load") == 5, "a decorated function inside it")
    expect(c.get("trainer@epoch/compute") == 5, "a context manager inside it")
    expect({r["name"]: r["time"]["count"] for r in doc["start_end_ranges"]} == {"shutdown": 1},
           "start_range/end_range")
    expect({m["name"]: m["count"] for m in doc["marks"]} == {"epoch done": 5}, "marks")
    return 0


def case_usage(a):
    p = run([a.command, "profile", "--report", "json", "--", a.program])
    expect(p.returncode == 2 and "--report 'json': 'json' needs a file path" in p.stderr,
           "a bad --report: exit 2, naming the item")
    p = run([a.command, "profile", "--capture", "wait=x", "--", a.program])
    expect(p.returncode == 2 and "--capture 'wait=x'" in p.stderr, "a bad --capture: exit 2")
    p = run([a.command, "profile", "--report", "table"])
    expect(p.returncode == 2 and "no program to run" in p.stderr, "no program: exit 2")
    p = run([a.command, "profile", "--frobnicate", "--", a.program])
    expect(p.returncode == 2 and "unknown option '--frobnicate'" in p.stderr,
           "an unknown option: exit 2")
    missing = os.path.join(a.dir, "no-such-program")
    p = run([a.command, "profile", "--", missing])
    expect(p.returncode == 127 and f"cannot run '{missing}'" in p.stderr,
           "a missing program: exit 127, naming it")
    p = run([a.command, "frobnicate"])
    expect(p.returncode == 2 and "unknown command 'frobnicate'" in p.stderr,
           "an unknown command: exit 2")


def case_other(a):
    out = os.path.join(a.dir, "other.json")
    p = run([a.mixed], {"NVTX_INJECTION64_PATH": a.other_tool, "NSIGHTKIT_REPORT": f"json={out}"})
    expect(p.returncode == 0, "exit status 0")
    expect("other tool: 12 pushes" in p.stderr, "the other tool received all 12 pushes")
    expect(p.stderr.count("another NVTX tool is attached") == 1,
           "the report says once that another tool is attached")
    _, c = counts(out)
    expect(c == {"model": 4, "model/layer": 4}, f"the report keeps nsightkit's own ranges ({c})")
    p = run([a.command, "profile", "--report", f"json={out}", "--", a.mixed],
            {"NVTX_INJECTION64_PATH": a.other_tool})
    expect(p.returncode == 0 and "other tool: 12 pushes" in p.stderr,
           "under nsightkit profile the other tool stays attached")
    expect("another NVTX tool is attached" in p.stderr, "and the command says so")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["raw", "mixed", "python", "usage", "other"])
    ap.add_argument("--command", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--program")
    ap.add_argument("--mixed")
    ap.add_argument("--other-tool")
    ap.add_argument("--python")
    ap.add_argument("--script")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    rc = {"raw": case_raw, "mixed": case_mixed, "python": case_python, "usage": case_usage,
          "other": case_other}[a.case](a)
    return rc or 0


if __name__ == "__main__":
    sys.exit(main())
