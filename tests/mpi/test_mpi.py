#!/usr/bin/env python3
"""Tests of nsightkit on MPI (include/nsightkit/mpi.hpp): mpi_report_demo started as 2 ranks.

--case merge: the merged table, summary, CSV and trace rank 0 writes
  * equal what the per-rank files say: per path the ranks present, each rank's total and count,
    min / median / max over ranks, calls, mean per call (sums over the ranks' files);
  * equal what `nsightkit merge` makes of the same per-rank files, read back from them: the table
    text byte for byte, the JSON and CSV value for value, the trace event for event (shifts equal
    to the nanosecond for ranks of one host; within the measured uncertainty when offsets are
    measured) -- which also checks that the files hold everything the merge uses;
  * the straggler (rank 1 sleeps in forward/layer2) is flagged, the rank that waits is not, each
    rank's time in collectives equals its own all-reduce total;
  * written in MPI_Finalize (report at exit) or in Report::write(), once; rank 0 alone prints;
  * with GPU work attributed by CUPTI (a fake CUPTI source, --fake-gpu cupti: no GPU needed), the
    merged GPU numbers are each rank's busy time per path, the all-reduce's from NCCL's stream,
    named "cupti"; with CUPTI on rank 0 and event spans on rank 1 (--fake-gpu mixed) rows timed
    by both are "mixed", a warning says which rank has which, and no mixed row is judged; in both
    the table, JSON and CSV equal `nsightkit merge`'s.
  In a NSIGHTKIT_DISABLE build (--mode disabled): the job runs and nothing is written.
--case faults: a rank that throws, stalls before the report's gather, stalls before a collective,
  or exits abruptly ends the whole job with a line naming it and a non-zero status, in seconds;
  a bad option is refused by enable() with a line naming it.

usage: test_mpi.py --case merge|faults --demo EXE --mpiexec MPIEXEC [--np-flag -n]
                   [--oversubscribe] --python DIR [--command nsightkit] --checker check_trace.py
                   --workdir DIR [--mode enabled|disabled]
(--command: the nsightkit command, for --case merge)
"""
import argparse
import csv
import json
import math
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


class Runner:
    def __init__(self, args):
        self.args = args

    def mpirun(self, demo_args, report=None, timeout=200):
        cmd = [self.args.mpiexec, self.args.np_flag, "2"]
        if self.args.oversubscribe:
            cmd.append("--oversubscribe")
        cmd += [self.args.demo] + demo_args
        extra = {"NSIGHTKIT_REPORT": report} if report else {}
        print("$ " + (f"NSIGHTKIT_REPORT={report} " if report else "") + " ".join(cmd), flush=True)
        t0 = time.monotonic()
        p = subprocess.run(cmd, env=clean_env(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout)
        p.seconds = time.monotonic() - t0
        print(f"  exit {p.returncode} after {p.seconds:.1f} s")
        return p


def show(p):
    print("---- stdout\n" + p.stdout[-4000:] + "---- stderr\n" + p.stderr[-4000:], flush=True)


def close(a, b, rel=1e-9):
    """JSON values equal: numbers within `rel` (one side may print 1000 where the other prints
    1000.0), everything else exactly."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], rel) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, rel) for x, y in zip(a, b))
    return a == b


def first_difference(a, b, where="$"):
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where}: keys {sorted(a.keys() ^ b.keys())} differ"
        for k in a:
            d = first_difference(a[k], b[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    return None if close(a, b) else f"{where}: {a!r} vs {b!r}"


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def merge_tool(args, inputs, extra):
    cmd = [args.command, "merge"] + inputs + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    check(p.returncode == 0, f"nsightkit merge exits 0 ({p.returncode}; {p.stderr.strip()[-300:]})")
    return p


def same_csv(mine_path, their_path):
    """The two CSV files hold the same cells (numbers within 1e-9, as the JSON); their row count."""
    with open(mine_path, newline="", encoding="utf-8") as f:
        mine = list(csv.reader(f))
    with open(their_path, newline="", encoding="utf-8") as f:
        theirs = list(csv.reader(f))

    def cell_equal(x, y):
        if x == y:
            return True
        try:
            return math.isclose(float(x), float(y), rel_tol=1e-9)
        except ValueError:
            return False

    same = len(mine) == len(theirs) and all(
        len(a) == len(b) and all(cell_equal(x, y) for x, y in zip(a, b)) for a, b in zip(mine, theirs))
    return same, len(mine)


def same_table(theirs, mine):
    """Checks the two tables are equal byte for byte, printing the difference where not."""
    check(theirs == mine, "the merged table equals nsightkit merge's, byte for byte")
    if theirs != mine:
        import difflib
        print("".join(difflib.unified_diff(theirs.splitlines(True), mine.splitlines(True),
                                           "nsightkit merge", "in-process")))


def check_against_files(nkr, merged, ranks_dir):
    """Every merged row equals what the per-rank summaries say."""
    per_rank = {}
    for r in (0, 1):
        s = nkr.read_summary(os.path.join(ranks_dir, f"summary.rank{r}.json"))
        check(s.rank == r, f"summary.rank{r}.json is rank {r}'s")
        per_rank[r] = s.by_path()
    union = []
    for r in (0, 1):
        for path in per_rank[r]:
            if path not in union:
                union.append(path)
    rows = {row["path"]: row for row in merged["paths"]}
    check(sorted(rows) == sorted(union), f"the merged summary has exactly the ranks' paths ({len(union)})")
    bad = []
    for path in union:
        row = rows.get(path)
        if row is None:
            continue
        have = {r: per_rank[r][path] for r in (0, 1) if path in per_rank[r]}
        totals = [have[r].total_ns for r in sorted(have)]
        counts = [have[r].count for r in sorted(have)]
        cpu = row["cpu"]
        expect = {
            "ranks_present": sorted(have),
            "per_rank": [{"rank": r, "count": have[r].count, "total_ns": have[r].total_ns} for r in sorted(have)],
            "min_ns": min(totals),
            "max_ns": max(totals),
            "median_ns": sum(totals) / len(totals),  # two ranks (or one): the mean
            "mean_per_call_ns": sum(totals) / sum(counts),
        }
        got = {
            "ranks_present": row["ranks_present"],
            "per_rank": cpu["per_rank"],
            "min_ns": cpu["min_ns"],
            "max_ns": cpu["max_ns"],
            "median_ns": cpu["median_ns"],
            "mean_per_call_ns": cpu["mean_per_call_ns"],
        }
        if not close(expect, got):
            bad.append(f"{path}: {first_difference(expect, got)}")
    check(not bad, "each merged row: ranks, per-rank totals and counts, min/median/max, mean per call "
          f"equal the per-rank files {bad[:3]}")
    return per_rank


def case_merge(args, run, nkr):
    work = args.workdir
    disabled = args.mode == "disabled"
    # ---- A: the report written at exit, merged in MPI_Finalize; offsets of one host: exact.
    a_dir = os.path.join(work, "finalize")
    report = f"table=stdout,json={a_dir}/summary.json,csv={a_dir}/summary.csv,trace={a_dir}/trace.json"
    # Rank 1 sleeps 20 ms a step: 200 ms over the run, which rank 0 waits out in its all-reduce.
    # The straggler rule's absolute threshold is 50 ms here, not 1 ms: rank 0's backward outside
    # the all-reduce is 5 ms of spinning, which a loaded 2-core machine can stretch by more than
    # 1 ms (it did, under ASan, in CI); the wait, if it were not taken out, would still pass 50 ms.
    straggler = ["--slow-ms", "20", "--min-excess-ms", "50"]
    p = run.mpirun(straggler, report)
    if not check(p.returncode == 0, "2 ranks run and exit 0"):
        show(p)
        return
    if disabled:
        check(not os.path.exists(a_dir) or not os.listdir(a_dir), "a disabled build writes nothing")
        check("nsightkit merged report" not in p.stdout, "and prints no table")
        p = run.mpirun(["--explicit"], report)
        check(p.returncode == 0 and not os.path.exists(a_dir), "Report::write() is a no-op too")
        return
    names = sorted(os.listdir(a_dir))
    expect = ["summary.csv".replace(".csv", f".{t}.csv") for t in ("merged", "rank0", "rank1")]
    expect += [f"summary.{t}.json" for t in ("merged", "rank0", "rank1")]
    expect += [f"trace.{t}.json" for t in ("merged", "rank0", "rank1")]
    check(names == sorted(expect), f"each rank's files and the merged ones: {names}")
    check(p.stdout.count("nsightkit merged report: 2 ranks (0, 1)") == 1,
          "rank 0 prints the merged table once")
    check(" p95 " not in p.stdout, "no rank prints its own table")
    check(p.stderr.count("nsightkit mpi: wrote") == 1, "rank 0 says once what it wrote")

    merged = load(os.path.join(a_dir, "summary.merged.json"))
    check(merged.get("format") == "nsightkit-merged-report", "the merged summary is a merged report")
    check_against_files(nkr, merged, a_dir)
    by_path = {row["path"]: row for row in merged["paths"]}
    check(by_path["save checkpoint"]["ranks_missing"] == [1], "a path only rank 0 has is missing on rank 1")
    findings = {(f["rank"], f["path"]) for f in merged["stragglers"]["cpu"]["findings"]}
    check((1, "forward") in findings and (1, "forward/layer2") in findings,
          f"rank 1, which sleeps in forward/layer2, is the straggler: {sorted(findings)}")
    check(not any(r == 0 and p_.startswith(("forward", "backward")) for r, p_ in findings),
          "rank 0, which waits in the all-reduce, is not flagged on forward or backward")
    ct = {c["rank"]: c["total_ns"] for c in merged["collective_time"]["cpu"]}
    own = {r: by_path["backward/allreduce grads"]["cpu"]["per_rank"][r]["total_ns"] for r in (0, 1)}
    check(ct == own, f"each rank's time in collectives is its all-reduce total: {ct}")
    check("time in collectives (CPU time)" in p.stdout, "the table has each rank's time in collectives")

    # The offline merge of the per-rank files gives the same table, JSON, CSV and trace.
    off = os.path.join(work, "offline")
    os.makedirs(off, exist_ok=True)
    inputs = [os.path.join(a_dir, f"{k}.rank{r}.json") for k in ("summary", "trace") for r in (0, 1)]
    tool = merge_tool(args, inputs, ["--json", f"{off}/summary.json", "--csv", f"{off}/summary.csv",
                                     "--trace", f"{off}/trace.json", "--min-excess-ms", "50"])
    same_table(tool.stdout, p.stdout)
    theirs = load(f"{off}/summary.json")
    for doc in (merged, theirs):
        doc.pop("producer")
        doc.pop("messages")
    check(close(merged, theirs), "the merged summary equals nsightkit merge --json "
          f"({first_difference(theirs, merged)})")
    same, rows = same_csv(f"{a_dir}/summary.merged.csv", f"{off}/summary.csv")
    check(same, f"the merged CSV equals nsightkit merge --csv ({rows} rows)")
    check(all(r["gpu"] is None for r in merged["paths"]) and
          [r.get("gpu_source", "absent") for r in merged["ranks"]] == [None, None],
          "no GPU source on the CPU: no GPU numbers, no rank's gpu_source")

    mine_t = load(os.path.join(a_dir, "trace.merged.json"))
    their_t = load(f"{off}/trace.json")
    check(nkr.kind_of(mine_t) == "merged-trace", "the merged trace is recognised as a merged trace")
    check(mine_t["traceEvents"] == their_t["traceEvents"],
          f"the merged trace's events equal nsightkit merge's ({len(mine_t['traceEvents'])} events)")
    mo, to = mine_t["otherData"], their_t["otherData"]
    check(mo["aligned"] and to["aligned"] and mo["time_origin_ns"] == to["time_origin_ns"],
          "both are aligned on the same time origin")
    check([s["shift_ns"] for s in mo["sources"]] == [s["shift_ns"] for s in to["sources"]],
          f"ranks of one host: the shifts equal the origin differences exactly {[s['shift_ns'] for s in mo['sources']]}")
    r1 = mo["sources"][1]
    check(r1["same_host_as_rank0"] and abs(r1["measured_offset_ns"]) <= r1["offset_uncertainty_ns"],
          f"the offset measured over MPI is 0 within its uncertainty ({r1['measured_offset_ns']} ns, "
          f"+-{r1['offset_uncertainty_ns']} ns)")
    c = subprocess.run([sys.executable, args.checker, os.path.join(a_dir, "trace.merged.json"),
                        "--expect-thread-name", "rank 1 loader"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    check(c.returncode == 0, f"the merged trace passes check_trace.py {c.stdout.strip()[-300:]}")

    # ---- B: Report::write() called by every rank; every rank's offset measured over MPI.
    b_dir = os.path.join(work, "explicit")
    p = run.mpirun(["--explicit", "--no-same-host"], f"json={b_dir}/s.json,trace={b_dir}/t.json")
    if not check(p.returncode == 0, "Report::write() on every rank: exit 0"):
        show(p)
        return
    check(p.stderr.count("nsightkit mpi: wrote") == 1, "written once (not again in MPI_Finalize)")
    check(sorted(os.listdir(b_dir)) == sorted(f"{k}.{t}.json" for k in ("s", "t") for t in ("merged", "rank0", "rank1")),
          f"the per-rank and merged files: {sorted(os.listdir(b_dir))}")
    off = os.path.join(work, "offline_b")
    os.makedirs(off, exist_ok=True)
    merge_tool(args, [os.path.join(b_dir, f"{k}.rank{r}.json") for k in ("s", "t") for r in (0, 1)],
               ["--json", f"{off}/s.json", "--trace", f"{off}/t.json"])
    mine, theirs = load(f"{b_dir}/s.merged.json"), load(f"{off}/s.json")
    for doc in (mine, theirs):
        doc.pop("producer")
        doc.pop("messages")
    check(close(mine, theirs), f"the merged summary equals the offline one ({first_difference(theirs, mine)})")
    mine_t, their_t = load(f"{b_dir}/t.merged.json"), load(f"{off}/t.json")
    src = mine_t["otherData"]["sources"]
    tol_ns = 2 * max(s["offset_uncertainty_ns"] for s in src) + 2
    shifts_ok = all(abs(m["shift_ns"] - t["shift_ns"]) <= tol_ns
                    for m, t in zip(src, their_t["otherData"]["sources"]))
    check(src[1]["clock_offset_ns"] == src[1]["measured_offset_ns"] and shifts_ok,
          f"measured offsets: shifts within {tol_ns} ns (2 x the uncertainty) of the exact ones: "
          f"{[s['shift_ns'] for s in src]} vs {[s['shift_ns'] for s in their_t['otherData']['sources']]}")

    def strip_ts(events):
        return [{k: v for k, v in e.items() if k != "ts"} for e in events]

    ev_m, ev_t = mine_t["traceEvents"], their_t["traceEvents"]
    ts_ok = len(ev_m) == len(ev_t) and all(abs(a.get("ts", 0) - b.get("ts", 0)) * 1000 <= tol_ns + 1
                                           for a, b in zip(ev_m, ev_t))
    check(strip_ts(ev_m) == strip_ts(ev_t) and ts_ok,
          f"the same events; each time within {tol_ns} ns of the offline merge's")

    case_gpu_sources(args, run, work, "cupti")
    case_gpu_sources(args, run, work, "mixed")


def case_gpu_sources(args, run, work, fake):
    """C: GPU work attributed by CUPTI (fake "cupti"). The fake source gives each call of
    forward/layer1 a 200 us kernel, and each all-reduce a kernel on NCCL's stream: 2 ms on rank 0
    (it waits there for the straggler), 200 us on rank 1. The merged GPU numbers must be those
    kernels' busy time per path, named "cupti". D (fake "mixed"): rank 1 has event spans instead.
    Both: the same table, JSON and CSV as the offline merge of the ranks' files."""
    c_dir = os.path.join(work, fake)
    p = run.mpirun(["--fake-gpu", fake], f"table=stdout,json={c_dir}/summary.json,csv={c_dir}/summary.csv")
    if not check(p.returncode == 0, f"with (fake) GPU sources, {fake}: 2 ranks run and exit 0"):
        show(p)
        return
    merged = load(os.path.join(c_dir, "summary.merged.json"))
    by_path = {row["path"]: row for row in merged["paths"]}
    if fake == "cupti":
        check_cupti(p, merged, by_path)
    else:
        check_mixed(p, merged, by_path)

    off = os.path.join(work, f"offline_{fake}")
    os.makedirs(off, exist_ok=True)
    tool = merge_tool(args, [os.path.join(c_dir, f"summary.rank{r}.json") for r in (0, 1)],
                      ["--json", f"{off}/summary.json", "--csv", f"{off}/summary.csv"])
    same_table(tool.stdout, p.stdout)
    theirs = load(f"{off}/summary.json")
    check([m["text"] for m in merged["messages"] if m["level"] == "warning"] ==
          [m["text"] for m in theirs["messages"] if m["level"] == "warning"],
          f"{fake}: the same warnings as nsightkit merge")
    for doc in (merged, theirs):
        doc.pop("producer")
        doc.pop("messages")
    check(close(merged, theirs), f"{fake}: the merged summary equals nsightkit merge --json "
          f"({first_difference(theirs, merged)})")
    same, rows = same_csv(f"{c_dir}/summary.merged.csv", f"{off}/summary.csv")
    check(same, f"{fake}: the merged CSV equals nsightkit merge --csv ({rows} rows)")


def check_cupti(p, merged, by_path):

    def gpu_of(path):
        g = by_path[path]["gpu"] or {}
        return g.get("source"), {x["rank"]: (x["count"], x["total_ns"]) for x in g.get("per_rank", [])}

    want = ("cupti", {0: (10, 10 * 2_000_000), 1: (10, 10 * 200_000)})
    got = gpu_of("backward/allreduce grads")
    check(got == want, f"the all-reduce's GPU time is its kernels' busy time on NCCL's stream, per rank: {got}")
    check(gpu_of("forward/layer1") == ("cupti", {0: (10, 2_000_000), 1: (10, 2_000_000)}),
          f"forward/layer1's is its kernels' busy time: {gpu_of('forward/layer1')}")
    check(by_path["forward/layer2"]["gpu"] is None and by_path["data"]["gpu"] is None,
          "paths that launched nothing have no GPU numbers")
    check([r.get("gpu_source") for r in merged["ranks"]] == ["cupti", "cupti"], "both ranks' GPU source is cupti")
    check([r["total_ns"] for r in merged["collective_time"]["gpu"] or []] == [20_000_000, 2_000_000],
          "each rank's GPU time in collectives is its NCCL kernels' busy time")
    check("(GPU times present, from cupti on rank(s) 0, 1: nsightkit merge --gpu shows and judges them)\n"
          in p.stdout, "the table names the GPU source")
    check(not any(m["level"] == "warning" for m in merged["messages"]), "no warning: the ranks agree")


def check_mixed(p, merged, by_path):
    check([r.get("gpu_source") for r in merged["ranks"]] == ["cupti", "events"],
          "rank 0's GPU source is cupti, rank 1's events")
    warning = ("nsightkit mpi: warning: the ranks' GPU times come from different sources (cupti on rank(s) 0; "
               "events on rank(s) 1): CUPTI busy time and CUDA-event spans do not compare")
    check(warning in p.stderr, "rank 0 warns that the ranks' GPU sources differ")
    sources = {path: (row["gpu"] or {}).get("source") for path, row in by_path.items()}
    check(sources["backward/allreduce grads"] == "mixed" and sources["forward/layer1"] == "mixed"
          and sources["forward/layer2"] == "events",
          f"rows timed by both sources are mixed, rows timed by one are that one's: {sources}")
    gpu = merged["stragglers"]["gpu"]
    judged = {f["path"] for f in gpu["findings"]} | set(gpu["collectives"])
    check(not any(sources[x] == "mixed" for x in judged), f"no mixed row is judged on GPU time: {sorted(judged)}")
    check("(GPU times present, from cupti on rank(s) 0; events on rank(s) 1: " in p.stdout
          and "(the ranks' GPU sources differ: " in p.stdout, "the table names both sources and says they differ")


def case_faults(args, run):
    disabled = args.mode == "disabled"
    p = run.mpirun(["--fail", "throw"], "table")
    check(p.returncode != 0, f"a rank that throws: non-zero exit ({p.returncode})")
    line = "nsightkit mpi: rank 1"
    check(line in p.stderr and "uncaught exception: simulated failure in step 3; ending the job" in p.stderr,
          "one line names the rank and its exception")
    check(p.seconds < 60, f"and the job ends at once ({p.seconds:.1f} s)")
    if line not in p.stderr:
        show(p)

    if not disabled:
        # Rank 1 sleeps 120 s before Report::write/MPI_Finalize: rank 0's gather gives up.
        p = run.mpirun(["--fail", "stall-gather", "--timeout", "3"], "table")
        check(p.returncode != 0, f"a rank that never reaches the gather: non-zero exit ({p.returncode})")
        check("nsightkit mpi: rank 0" in p.stderr and "no answer from the other ranks for 3 s while "
              "agreeing on the report's gather in MPI_Finalize" in p.stderr,
              "rank 0 names the gather it waited in")
        check(p.seconds < 60, f"after the timeout, not after the stalled rank's 120 s ({p.seconds:.1f} s)")
        if p.returncode == 0 or p.seconds >= 60:
            show(p)

    p = run.mpirun(["--fail", "stall-collective", "--timeout", "3"], "table")
    check(p.returncode != 0, f"a rank that stalls before a collective: non-zero exit ({p.returncode})")
    check("mpi_report_demo: rank 0: no all-reduce from the other ranks within 3 s" in p.stderr,
          "nsightkit::mpi::wait times out and abort_job names the wait")
    check(p.seconds < 60, f"the job ends after the timeout ({p.seconds:.1f} s)")

    p = run.mpirun(["--timeout", "-1"], "table")
    check(p.returncode != 0 and "nsightkit mpi: enable(): Options::timeout_s must be a non-negative "
          "number of seconds; the MPI integration stays off" in p.stderr,
          "a bad option: enable() refuses it with a line naming it")

    p = run.mpirun(["--fail", "die", "--timeout", "30"], "table")
    check(p.returncode != 0, f"a rank that exits abruptly: non-zero exit ({p.returncode})")
    check("mpi_report_demo: rank 1: exiting abruptly at step 3" in p.stderr, "its line is there")
    check(p.seconds < 45, f"and the job ends ({p.seconds:.1f} s)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", choices=("merge", "faults"), required=True)
    ap.add_argument("--demo", required=True)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--np-flag", default="-n")
    ap.add_argument("--oversubscribe", action="store_true")
    ap.add_argument("--python", required=True, help="the directory of the nsightkit Python package (its report reader)")
    ap.add_argument("--command")
    ap.add_argument("--checker", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--mode", choices=("enabled", "disabled"), default="enabled")
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    sys.path.insert(0, os.path.abspath(args.python))
    from nsightkit import report_file as nkr

    run = Runner(args)
    if args.case == "merge" and not args.command:
        print("test_mpi.py: --case merge needs --command (the nsightkit command)", file=sys.stderr)
        return 2
    if args.case == "merge":
        case_merge(args, run, nkr)
    else:
        case_faults(args, run)
    print(f"\n{len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
