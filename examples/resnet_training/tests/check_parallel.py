#!/usr/bin/env python3
"""CI check of resnet_training's data-parallel mode on the CPU (ranks exchange gradients through
the loopback TCP communicator), started by tools/nsightkit_launch.py:

  * 2 ranks with batch B each train exactly as 1 process with batch 2B and --bn-groups 2 (the
    same global batch, batch norm per rank's slice): per-step losses agree within 1e-4;
  * every rank writes its own report and metrics file, the collectives are ranges with the
    bytes as payload ("allreduce bucketN", "allreduce metrics"), and tools/nsightkit_merge.py
    merges the reports and names the rank slowed with --slow-rank as the straggler;
  * faults: a rank dying under the launcher ends the run with its exit code; without the
    launcher the surviving rank ends itself with a message naming the lost rank; a rank whose
    peer never starts gives up after --dist-timeout;
  * bad data-parallel settings are errors naming the variable or flag.

With --disabled (an NSIGHTKIT_DISABLE build) the training and the faults are checked the same
way, and no report is written.

usage: check_parallel.py --exe PATH --tools DIR --workdir DIR [--disabled]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

FAILURES = []


def check(condition, message):
    print(("ok    " if condition else "FAIL  ") + message)
    if not condition:
        FAILURES.append(message)
    return condition


def clean_env(extra=None):
    env = dict(os.environ)
    for var in ("NSIGHTKIT_CAPTURE", "NSIGHTKIT_REPORT", "NVTX_INJECTION64_PATH", "RANK", "WORLD_SIZE",
                "LOCAL_RANK", "NSIGHTKIT_RENDEZVOUS", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        env.pop(var, None)
    env.update(extra or {})
    return env


def run(cmd, env_extra=None, expect_rc=0, timeout=300):
    print("$ " + " ".join(f"{k}={v}" for k, v in (env_extra or {}).items()) + " " + " ".join(cmd))
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=clean_env(env_extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    p.seconds = time.monotonic() - t0
    if (p.returncode == 0) != (expect_rc == 0) or (expect_rc not in (0, None) and p.returncode != expect_rc):
        print(p.stdout[-3000:])
        print(p.stderr[-3000:], file=sys.stderr)
    if expect_rc is not None:
        check(p.returncode == expect_rc, f"exit code {p.returncode} (expected {expect_rc})")
    return p


def load(path):
    """The program's metrics JSON, or nsightkit_merge.py's merged JSON."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def import_reader(tools):
    """tools/nsightkit_report.py, nsightkit's one reader of the report files."""
    sys.path.insert(0, os.path.abspath(tools))
    import nsightkit_report

    return nsightkit_report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--tools", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--disabled", action="store_true")
    args = ap.parse_args()
    work = args.workdir
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    nkr = import_reader(args.tools)
    launch = [sys.executable, os.path.join(args.tools, "nsightkit_launch.py")]
    merge = [sys.executable, os.path.join(args.tools, "nsightkit_merge.py")]
    base = [args.exe, "--device", "cpu", "--steps", "12", "--warmup", "2", "--workers", "1"]

    # ---- the same training, 1 process vs 2 ranks
    single = os.path.join(work, "single.json")
    run(base + ["--batch", "16", "--bn-groups", "2", "--report", "off", "--metrics", single])
    rep = os.path.join(work, "report")
    os.makedirs(rep)
    p = run(launch + ["--nproc", "2", "--"] + base + [
        "--batch", "8", "--metrics", os.path.join(work, "dp.json"),
        "--report", f"json={rep}/summary.json,trace={rep}/trace.json"])
    check("[rank 0] parallel: 2 ranks" in p.stdout and "global batch 16" in p.stdout,
          "rank 0 announces 2 ranks and the global batch")
    check("[rank 1] step" not in p.stdout, "only rank 0 prints the training progress")
    a = load(single)
    r0, r1 = (load(os.path.join(work, f"dp.rank{r}.json")) for r in (0, 1))
    diff = max(abs(x - y) for x, y in zip(a["loss"], r0["loss"]))
    check(len(a["loss"]) == len(r0["loss"]) == 12, "12 losses from each run")
    check(diff < 1e-4, f"2 ranks train as 1 process with the global batch: max loss difference {diff:.3g}")
    check(r0["loss"] == r1["loss"], "both ranks report the same (averaged) loss")
    check(r0["world_size"] == 2 and r0["global_batch"] == 16, "the metrics say world size 2, global batch 16")
    check(sum(a["loss"][-3:]) < sum(a["loss"][:3]), "the loss falls")

    if args.disabled:
        check(not os.path.exists(rep) or not os.listdir(rep), "no report is written when disabled")
    else:
        for r in (0, 1):
            s = nkr.read_summary(os.path.join(rep, f"summary.rank{r}.json"))
            paths = s.by_path()
            check(s.rank == r, f"summary.rank{r}.json is rank {r}'s")
            buckets = [row.path for row in s.paths if row.name.startswith("allreduce bucket")]
            check(len(buckets) >= 1 and all(paths[b].count == 10 for b in buckets),
                  f"rank {r}: every gradient bucket is an all-reduce range once per recorded step {buckets}")
            metrics_row = paths.get("allreduce metrics")
            check(metrics_row is not None and metrics_row.count == 10, f"rank {r}: 'allreduce metrics' per step")
            check("backward/allreduce wait" in paths, f"rank {r}: 'backward/allreduce wait'")
        trace = nkr.read_trace(os.path.join(rep, "trace.rank1.json"))
        check(trace.rank == 1, f"trace.rank1.json is rank 1's (otherData.rank {trace.rank})")
        names = list(trace.names("thread_name").values())
        check(any(n.startswith("rank 1 train") for n in names) and
              any(n.startswith("rank 1 loader worker") for n in names),
              f"rank 1's threads are named with its rank: {sorted(set(names))}")
        # payload: the allreduce ranges carry their byte count (the trace keeps it in args)
        ar = [e for e in trace.events
              if e.get("ph") == "X" and e.get("name", "").startswith("allreduce") and e["name"] != "allreduce wait"]
        check(ar and all("payload" in e.get("args", {}) for e in ar),
              "every all-reduce range in the trace carries a payload")
        metrics_ar = [e for e in ar if e["name"] == "allreduce metrics"]
        check(metrics_ar and all(e["args"]["payload"] == 8 for e in metrics_ar),
              "the metrics all-reduce's payload is its size: 8 bytes")

    # ---- a straggler, found by the merge
    strag = os.path.join(work, "straggler")
    os.makedirs(strag)
    run(launch + ["--nproc", "2", "--"] + base + [
        "--batch", "8", "--slow-rank", "1", "--slow-ms", "30", "--report", f"json={strag}/summary.json"])
    if not args.disabled:
        out = os.path.join(work, "merged.json")
        # A 50 % threshold: the sleep makes rank 1's forward several times slower, while CPU
        # times of two processes on a busy 2-core CI machine can differ by 10-20 % by noise.
        m = run(merge + [strag, "--json-out", out, "--min-excess", "50"])
        merged = load(out)
        findings = merged["stragglers"]["cpu"]["findings"]
        flagged = {(f["rank"], f["path"]) for f in findings}
        check((1, "forward") in flagged, f"the merge flags rank 1 on forward: {sorted(flagged)}")
        # The waiting rank 0 is not blamed where the wait sits (backward's all-reduces); small
        # paths may differ by CPU noise between two processes on a busy machine, so the test
        # asks only that rank 1's sleep is the largest finding.
        check((0, "backward") not in flagged and (0, "forward") not in flagged,
              "the rank that waited is not flagged on forward or backward")
        biggest = max(findings, key=lambda f: f["excess_ns"]) if findings else {}
        check((biggest.get("rank"), biggest.get("path")) == (1, "forward"),
              f"the largest excess is rank 1's forward ({biggest.get('excess_ns')} ns)")
        check("rank 1" in m.stdout, "the merged table names rank 1")

    # ---- faults
    # Who the launcher sees fail first is a race on the CPU: rank 1's exit (code 3), or rank 0
    # ending itself at once on the closed connection (code 1). Either way the run ends, and the
    # summary names rank 1's exit.
    p = run(launch + ["--nproc", "2", "--grace", "5", "--"] + base + [
        "--batch", "8", "--report", "off", "--die-rank", "1", "--die-step", "4"], expect_rc=None)
    check(p.returncode in (1, 3), f"the run fails with rank 1's or rank 0's code ({p.returncode})")
    check("rank 1 (pid" in p.stderr and "exited with code 3" in p.stderr,
          "the launcher names the rank that died and its exit code")
    check(p.seconds < 60, f"and stops the run promptly ({p.seconds:.1f} s)")

    rdv = tempfile.mkdtemp(prefix="nsk-rdv-")
    env = {"WORLD_SIZE": "2", "NSIGHTKIT_RENDEZVOUS": rdv}
    cmd = base + ["--batch", "8", "--report", "off", "--die-rank", "1", "--die-step", "4", "--dist-timeout", "30"]
    dying = subprocess.Popen(cmd, env=clean_env({**env, "RANK": "1"}), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    p = run(cmd, {**env, "RANK": "0"}, expect_rc=1, timeout=120)
    dying.wait(timeout=60)
    check("rank 0: rank 1 closed its connection" in p.stderr or "rank 0: lost rank 1" in p.stderr,
          f"without the launcher, rank 0 names the lost rank: {p.stderr.strip()[-200:]}")
    shutil.rmtree(rdv, ignore_errors=True)

    rdv = tempfile.mkdtemp(prefix="nsk-rdv-")
    p = run(base + ["--batch", "8", "--report", "off", "--dist-timeout", "2"],
            {"WORLD_SIZE": "2", "RANK": "1", "NSIGHTKIT_RENDEZVOUS": rdv}, expect_rc=1, timeout=60)
    check("rank 0 did not publish its port" in p.stderr and p.seconds < 30,
          f"a rank whose peer never starts gives up after --dist-timeout ({p.seconds:.1f} s)")
    shutil.rmtree(rdv, ignore_errors=True)

    # ---- bad settings
    p = run(base + ["--batch", "8"], {"WORLD_SIZE": "2"}, expect_rc=1)
    check("RANK is not set" in p.stderr, "WORLD_SIZE without RANK is an error naming RANK")
    p = run(launch + ["--nproc", "2", "--"] + base + ["--batch", "8", "--slow-rank", "5", "--slow-ms", "1"],
            expect_rc=1)
    check("--slow-rank 5 is not a rank of this run" in p.stderr, "--slow-rank beyond the ranks is named")
    p = run(base + ["--batch", "9", "--bn-groups", "2"], expect_rc=2)
    check("--bn-groups" in p.stderr, "a batch that does not split into --bn-groups is named")

    print(f"\n{len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ValueError as e:  # nsightkit_report.ReportError names the file and the problem
        print(f"FAIL  {e}")
        sys.exit(1)
