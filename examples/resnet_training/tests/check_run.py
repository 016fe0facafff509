#!/usr/bin/env python3
"""CI check of resnet_training on the CPU: runs the program for a few steps and checks, through
the report's JSON summary and the program's metrics JSON, that

  * every module path of the network appears under "forward/" and "backward/" (and the loader's
    "data" and the step's "h2d", "optimizer", "sync" ranges), once per recorded step;
  * the capture window captured the expected steps: the default window (skip the warm-up, then
    three steps) and a window given through NSIGHTKIT_CAPTURE, and with the report's "window-only"
    mode the report holds exactly the captured steps;
  * the loss is finite and falls, and the accuracy rises;
  * bad command lines fail with exit code 2 and a message naming the flag.

With --disabled (a build with NSIGHTKIT_DISABLE) the program must train the same way and write
no report at all.

usage: check_run.py --exe PATH --workdir DIR [--disabled]
"""
import argparse
import json
import math
import os
import subprocess
import sys

# Report summaries are read by nsightkit's one reader, the Python package's report_file module.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from nsightkit import report_file as nkr  # noqa: E402

FAILURES = []


def check(condition, message):
    print(("ok    " if condition else "FAIL  ") + message)
    if not condition:
        FAILURES.append(message)
    return condition


def run(exe, args, env_extra=None, expect_rc=0):
    env = dict(os.environ)
    for var in ("NSIGHTKIT_CAPTURE", "NSIGHTKIT_REPORT", "NVTX_INJECTION64_PATH"):
        env.pop(var, None)
    env.update(env_extra or {})
    cmd = [exe] + args
    print("$ " + " ".join(f"{k}={v}" for k, v in (env_extra or {}).items()) + " " + " ".join(cmd))
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=600)
    if p.returncode != expect_rc:
        print(p.stdout[-4000:])
        print(p.stderr[-4000:], file=sys.stderr)
    check(p.returncode == expect_rc, f"exit code {p.returncode} (expected {expect_rc})")
    return p


def module_paths(stages, blocks):
    """Every module path of the network, as the training loop nests it (forward, backward)."""
    fwd = ["stem", "stem/conv", "stem/bn", "stem/relu", "pool", "fc", "loss"]
    bwd = ["stem", "stem/conv", "stem/bn", "stem/relu", "pool", "fc"]
    for s in range(1, stages + 1):
        fwd.append(f"stage{s}")
        bwd.append(f"stage{s}")
        for b in range(blocks):
            block = f"stage{s}/block{b}"
            layers = ["conv1", "bn1", "relu1", "conv2", "bn2", "relu2"]
            if s > 1 and b == 0:
                layers += ["downsample", "downsample/conv", "downsample/bn"]
            fwd += [block] + [f"{block}/{l}" for l in layers + ["add"]]
            bwd += [block] + [f"{block}/{l}" for l in layers]
    return ["forward/" + p for p in fwd] + ["backward/" + p for p in bwd]


def load(path):
    """The program's metrics JSON."""
    with open(path) as f:
        return json.load(f)


def load_report(path):
    """The report's summary (nsightkit.report_file.Summary), or None after a failed check naming the
    problem."""
    try:
        return nkr.read_summary(path)
    except nkr.ReportError as e:
        check(False, str(e))
        return None


def check_training(metrics, label):
    loss = metrics["loss"]
    acc = metrics["accuracy"]
    n = len(loss)
    check(n == metrics["steps"], f"{label}: one loss per step ({n})")
    check(all(math.isfinite(x) for x in loss), f"{label}: every loss is finite")
    q = max(1, n // 4)
    first, last = sum(loss[:q]) / q, sum(loss[-q:]) / q
    check(last < 0.85 * first,
          f"{label}: loss falls: mean of the first {q} steps {first:.4f} -> last {q} steps {last:.4f}")
    a0, a1 = sum(acc[:q]) / q, sum(acc[-q:]) / q
    check(a1 > a0 + 0.1, f"{label}: accuracy rises: {a0:.3f} -> {a1:.3f}")
    check(metrics["images_per_second"] > 0, f"{label}: images/s reported ({metrics['images_per_second']:.1f})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--disabled", action="store_true", help="the build has NSIGHTKIT_DISABLE")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    steps, warmup, stages, blocks = 30, 3, 3, 1

    # ---- 1. the default run: capture window after the warm-up, report reset after it ----
    report = os.path.join(a.workdir, "report.json")
    metrics = os.path.join(a.workdir, "metrics.json")
    for f in (report, metrics):
        if os.path.exists(f):
            os.remove(f)
    p = run(a.exe, ["--device", "cpu", "--steps", str(steps), "--warmup", str(warmup),
                    "--report", f"table=stdout,json={report}", "--metrics", metrics])
    if p.returncode == 0:
        m = load(metrics)
        check_training(m, "default run")
        expected = list(range(warmup + 2, warmup + 5))
        check(m["captured_steps"] == expected,
              f"default capture window: steps {m['captured_steps']} (expected {expected})")
        check(m["phase"][warmup + 2] == "active" and m["phase"][0] == "wait",
              "per-step phases recorded (wait ... active ...)")
        if a.disabled:
            check(m["instrumentation"] is False, "metrics say instrumentation is compiled out")
            check(not os.path.exists(report), "no report written (NSIGHTKIT_DISABLE)")
            check("unavailable" in p.stdout, "the program says the report is unavailable")
        elif (r := load_report(report)) is not None:
            paths = r.by_path()
            measured = steps - warmup
            missing = [q for q in module_paths(stages, blocks) if q not in paths]
            check(not missing, f"all {len(module_paths(stages, blocks))} module paths present"
                  + (f"; missing {missing[:8]}" if missing else ""))
            wrong = [q for q in module_paths(stages, blocks)
                     if q in paths and paths[q].count != measured]
            check(not wrong, f"each module path recorded once per measured step ({measured})"
                  + (f"; wrong counts {wrong[:5]}" if wrong else ""))
            for top in ("data", "h2d", "forward", "backward", "optimizer", "sync"):
                row = paths.get(top)
                check(row is not None and row.depth == 0 and row.count == measured,
                      f"top-level range '{top}' once per measured step")
            check("load" in paths, "the loader workers' 'load' ranges are in the report")
            counted = r.steps.count if r.steps is not None else None
            check(counted == measured, f"report: {counted} step ranges (expected {measured} after the reset)")
            names = {t.name for t in r.threads}
            check({"train", "loader worker 0", "loader worker 1"} <= names,
                  f"threads named: {sorted(names)}")
            check("breakdown_ms data=" in p.stdout, "the per-step breakdown is printed")
            check("forward" in p.stdout and "stage2" in p.stdout, "the report table is printed")
            bad = [k for k in paths if k.split("/")[0].startswith("step ")]
            check(not bad, "step ranges never become path components")

    # ---- 2. the window from NSIGHTKIT_CAPTURE, the report restricted to captured steps ----
    report2 = os.path.join(a.workdir, "captured.json")
    metrics2 = os.path.join(a.workdir, "metrics-captured.json")
    for f in (report2, metrics2):
        if os.path.exists(f):
            os.remove(f)
    p = run(a.exe, ["--device", "cpu", "--steps", "12", "--warmup", "2", "--workers", "0",
                    "--layout", "nhwc", "--keep-warmup", "--report", f"window-only,json={report2}",
                    "--metrics", metrics2],
            env_extra={"NSIGHTKIT_CAPTURE": "wait=3,warmup=1,active=2"})
    if p.returncode == 0:
        m = load(metrics2)
        if a.disabled:
            # Disabled windows ignore the environment and keep the code's schedule.
            check(m["captured_steps"] == [4, 5, 6],
                  f"disabled: the code's window {m['captured_steps']} (NSIGHTKIT_CAPTURE not read)")
        else:
            check(m["captured_steps"] == [4, 5], f"NSIGHTKIT_CAPTURE window: steps {m['captured_steps']}")
            r = load_report(report2)
            if r is not None:
                paths = r.by_path()
                check(r.captured_only is True, "report in captured-only mode")
                counted = r.steps.count if r.steps is not None else None
                check(counted == 2, f"captured report: {counted} steps (expected 2)")
                fwd = paths.get("forward/stage2/block0/conv1")
                check(fwd is not None and fwd.count == 2,
                      "captured report: forward/stage2/block0/conv1 twice")
                check(paths.get("data/load") is not None,
                      "0 workers: the batch is made inside 'data' (path data/load)")

    # ---- 3. bad command lines ----
    for args, needle in ((["--batch", "x"], "--batch: 'x' is not an integer"),
                         (["--device", "cpu", "--pinned"], "--pinned needs the CUDA backend"),
                         (["--layout", "chw"], "--layout: 'chw' is not one of nchw|nhwc")):
        p = run(a.exe, args, expect_rc=2)
        check(needle in p.stderr, f"error names the problem: {needle!r}")
    p = run(a.exe, ["--help"])
    check("--decode-us" in p.stdout and "--prefetch" in p.stdout, "--help lists the flags")

    print(f"\n{len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
