#!/usr/bin/env python3
"""CI check of resnet_training's data-parallel mode on the CPU: 2 ranks started by mpiexec, the
gradients averaged with MPI, the ranks' reports merged on rank 0 by nsightkit::mpi:

  * 2 ranks with batch B each train exactly as 1 process with batch 2B and --bn-groups 2 (the
    same global batch, batch norm per rank's slice): per-step losses agree within 1e-4;
  * every rank writes its own report and metrics file, rank 0 the merged report (summary.merged
    .json holding both ranks); the collectives are ranges with the bytes as payload ("allreduce
    bucketN", "allreduce metrics"); rank 0 prints the merged table; the rank slowed with
    --slow-rank is the straggler in the merged report and in `nsightkit merge`'s of the ranks'
    files (with --command);
  * faults end the whole job, in seconds, with a line naming them: a rank that exits abruptly
    (--die-rank), a rank that stalls (--slow-rank with a long --slow-ms, past --dist-timeout);
  * bad settings: launcher variables MPI does not confirm (torchrun's), a rank beyond the run,
    a batch that does not split into --bn-groups.

With --disabled (an NSIGHTKIT_DISABLE build) the training and the faults are checked the same
way, and no report is written.

usage: check_parallel.py --exe PATH --mpiexec MPIEXEC [--np-flag=-n] [--oversubscribe]
                         --python DIR [--command nsightkit] --workdir DIR [--disabled]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

FAILURES = []


def check(condition, message):
    print(("ok    " if condition else "FAIL  ") + message, flush=True)
    if not condition:
        FAILURES.append(message)
    return condition


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NSIGHTKIT_", "OMPI_COMM_", "PMI_", "SLURM_"))
           and k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "NVTX_INJECTION64_PATH")}
    env.update(extra or {})
    return env


def run(cmd, env_extra=None, expect_rc=0, timeout=300, cwd=None):
    print("$ " + " ".join(f"{k}={v}" for k, v in (env_extra or {}).items()) + " " + " ".join(cmd), flush=True)
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=clean_env(env_extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout, cwd=cwd)
    p.seconds = time.monotonic() - t0
    failed = (p.returncode == 0) != (expect_rc == 0) or (expect_rc not in (0, None) and p.returncode != expect_rc)
    if failed:
        print(p.stdout[-3000:])
        print(p.stderr[-3000:], file=sys.stderr)
    if expect_rc is not None:
        check(p.returncode == expect_rc, f"exit code {p.returncode} (expected {expect_rc})")
    return p


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--np-flag", default="-n")
    ap.add_argument("--oversubscribe", action="store_true")
    ap.add_argument("--python", required=True, help="the directory of the nsightkit Python package (its report reader)")
    ap.add_argument("--command", help="the nsightkit command: the offline merge is checked with it")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--disabled", action="store_true")
    args = ap.parse_args()
    work = args.workdir
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sys.path.insert(0, os.path.abspath(args.python))
    from nsightkit import report_file as nkr

    ranks2 = [args.mpiexec, args.np_flag, "2"] + (["--oversubscribe"] if args.oversubscribe else [])
    merge = [args.command, "merge"] if args.command else None
    base = [args.exe, "--device", "cpu", "--steps", "12", "--warmup", "2", "--workers", "1"]

    # ---- the same training, 1 process vs 2 ranks
    single = os.path.join(work, "single.json")
    run(base + ["--batch", "16", "--bn-groups", "2", "--report", "off", "--metrics", single])
    rep = os.path.join(work, "report")
    p = run(ranks2 + base + ["--batch", "8", "--metrics", os.path.join(work, "dp.json"),
                             "--report", f"json={rep}/summary.json,trace={rep}/trace.json"])
    check("parallel: 2 ranks" in p.stdout and "global batch 16" in p.stdout and "MPI " in p.stdout,
          "rank 0 announces 2 ranks, the global batch and MPI")
    check(p.stdout.count("step    12/12") == 1, "only rank 0 prints the training progress")
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
        check(sorted(os.listdir(rep)) == sorted(f"{k}.{t}.json" for k in ("summary", "trace")
                                                for t in ("rank0", "rank1", "merged")),
              f"each rank's summary and trace, and the merged ones: {sorted(os.listdir(rep))}")
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
        merged = load(os.path.join(rep, "summary.merged.json"))
        fwd = next((m for m in merged["paths"] if m["path"] == "forward"), None)
        check(merged["format"] == "nsightkit-merged-report" and [x["rank"] for x in merged["ranks"]] == [0, 1]
              and fwd is not None and fwd["ranks_present"] == [0, 1],
              "rank 0 wrote the merged summary of both ranks")
        trace = nkr.read_trace(os.path.join(rep, "trace.rank1.json"))
        check(trace.rank == 1, f"trace.rank1.json is rank 1's (otherData.rank {trace.rank})")
        names = list(trace.names("thread_name").values())
        check(any(n.startswith("rank 1 train") for n in names) and
              any(n.startswith("rank 1 loader worker") for n in names),
              f"rank 1's threads are named with its rank: {sorted(set(names))}")
        ar = [e for e in trace.events
              if e.get("ph") == "X" and e.get("name", "").startswith("allreduce") and e["name"] != "allreduce wait"]
        check(ar and all("payload" in e.get("args", {}) for e in ar),
              "every all-reduce range in the trace carries a payload")
        metrics_ar = [e for e in ar if e["name"] == "allreduce metrics"]
        check(metrics_ar and all(e["args"]["payload"] == 8 for e in metrics_ar),
              "the metrics all-reduce's payload is its size: 8 bytes")
        mt = nkr.read_trace(os.path.join(rep, "trace.merged.json"))
        check(mt.merged and sorted(mt.names("process_name")) == [0, 1],
              "the merged trace has a process per rank")

    # ---- a straggler: the merged table on rank 0's stdout, the merged summary, the offline merge
    strag = os.path.join(work, "straggler")
    p = run(ranks2 + base + ["--batch", "8", "--slow-rank", "1", "--slow-ms", "100",
                             "--report", f"table=stdout,json={strag}/summary.json"])
    if not args.disabled:
        check(p.stdout.count("nsightkit merged report: 2 ranks (0, 1)") == 1,
              "rank 0 prints the merged table, once")
        merged = load(os.path.join(strag, "summary.merged.json"))
        findings = merged["stragglers"]["cpu"]["findings"]
        biggest = max(findings, key=lambda f: f["excess_ns"]) if findings else {}
        check((biggest.get("rank"), biggest.get("path")) == (1, "forward"),
              f"in the merged report, the largest excess is rank 1's forward ({biggest.get('excess_ns')} ns)")
        out = os.path.join(work, "offline.json")
        # A 50 % threshold: the sleep (1 s over the 10 recorded steps) makes rank 1's forward
        # several times slower, even in a sanitized debug build, while CPU times of two processes
        # on a busy 2-core CI machine can differ by 10-20 % by noise.
        if merge is None:
            print("skip  the offline merge (no --command: the nsightkit command was not built)")
        else:
            m = run(merge + [os.path.join(strag, f"summary.rank{r}.json") for r in (0, 1)]
                    + ["--json", out, "--min-excess", "50"])
            flagged = {(f["rank"], f["path"]) for f in load(out)["stragglers"]["cpu"]["findings"]}
            check((1, "forward") in flagged, f"the offline merge flags rank 1 on forward: {sorted(flagged)}")
            check((0, "backward") not in flagged and (0, "forward") not in flagged,
                  "the rank that waited is not flagged on forward or backward")
            check("rank 1" in m.stdout, "the offline table names rank 1")

    # ---- faults: the whole job ends, in seconds, with a line naming the fault
    p = run(ranks2 + base + ["--batch", "8", "--report", "off", "--die-rank", "1", "--die-step", "4",
                             "--dist-timeout", "30"], expect_rc=None, timeout=120)
    check(p.returncode != 0, f"a rank that exits abruptly ends the job with a non-zero status ({p.returncode})")
    check("resnet_training: rank 1: --die-rank: exiting abruptly at step 4" in p.stderr, "its line is there")
    check(p.seconds < 40, f"the job ends before --dist-timeout would ({p.seconds:.1f} s)")

    p = run(ranks2 + base + ["--batch", "8", "--report", "off", "--slow-rank", "1", "--slow-ms", "100000",
                             "--dist-timeout", "3"], expect_rc=None, timeout=120)
    check(p.returncode != 0, f"a rank that stalls ends the job with a non-zero status ({p.returncode})")
    check("resnet_training: rank 0: no progress from the other ranks for 3 s (--dist-timeout) in allreduce"
          in p.stderr, "rank 0 names the collective it waited in")
    check(p.seconds < 40, f"after --dist-timeout, not after the stalled rank's sleep ({p.seconds:.1f} s)")

    # ---- bad settings
    p = run(base + ["--batch", "8"], {"WORLD_SIZE": "2", "RANK": "0"}, expect_rc=1)
    check("torchrun" in p.stderr and "MPI sees 1" in p.stderr and "mpirun" in p.stderr,
          "torchrun's variables without an MPI launcher: an error saying MPI sees one process")
    p = run(ranks2 + base + ["--batch", "8", "--slow-rank", "5", "--slow-ms", "1"], expect_rc=None)
    check(p.returncode != 0 and "--slow-rank 5 is not a rank of this run (2 ranks)" in p.stderr,
          "--slow-rank beyond the ranks is named")
    p = run(base + ["--batch", "9", "--bn-groups", "2"], expect_rc=2)
    check("--bn-groups" in p.stderr, "a batch that does not split into --bn-groups is named")

    print(f"\n{len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ValueError as e:  # nsightkit.report_file.ReportError names the file and the problem
        print(f"FAIL  {e}")
        sys.exit(1)
