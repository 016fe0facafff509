#!/usr/bin/env python3
"""A trace in Kineto's schema (trace-schema=kineto), read by Holistic Trace Analysis (HTA).

  run_hta.py --demo report_kineto_demo --checker tests/check_trace.py --dir DIR

Runs report_kineto_demo twice — the trace streamed to its file under a launcher's rank (RANK=1,
WORLD_SIZE=2) and the trace from memory without one — checks each with check_trace.py and checks
the Kineto conventions HTA relies on, then loads each with HTA's TraceAnalysis and checks its
temporal and idle-time breakdowns against the demo's timeline. Exit status 77 (skipped) when this
Python has no HTA (`pip install HolisticTraceAnalysis`); scripts/run-tests.sh makes one that has.

The demo's timeline, in microseconds: step i (ProfilerStep#i, i = 0..3) runs [1000 i, 1000 i + 900);
its "forward" range launches, at 1000 i + 20, 30, 40, 50, on stream 7:
  gemm [+100, +300)  Memcpy HtoD [+300, +340)  relu [+350, +400)  Memset [+450, +460)
HTA leaves out the last step (and the work its launches made), so it sees steps 0 to 2:
  compute 3 x (200 + 50) = 750, non-compute (copies, memsets) 3 x (40 + 10) = 150,
  kernel time from the first start to the last end 2100 + 360 - 100 = 2360, idle 2360 - 900 = 1460;
  on stream 7: host wait 2 x (1100 - 460) = 1280 (the next step's launch comes after the GPU went
  idle), kernel wait 3 x 10 (gaps under HTA's 30 us after a launch made in time), other 3 x 50.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

SKIP = 77
STEPS = 4
STREAM = 7


class Failure(Exception):
    pass


def expect(what, got, want):
    if got != want:
        raise Failure(f"{what}: {got!r}, expected {want!r}")


def run_demo(demo, mode, path, env):
    p = subprocess.run([demo, mode, path], env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise Failure(f"{demo} {mode} exited with {p.returncode}: {p.stderr}")


def check_schema(path, rank):
    """The conventions HTA reads, checked on the file itself."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if rank is None:
        expect("distributedInfo without a rank", "distributedInfo" in doc, False)
    else:
        expect("distributedInfo", doc.get("distributedInfo"), {"rank": rank, "world_size": 2})
        # HTA finds a file's rank with the pattern "rank":\s+(\d+) on the file's first lines.
        with open(path, encoding="utf-8") as f:
            expect("the rank as HTA's pattern finds it", f'"rank": {rank}' in f.readline(), True)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    steps = sorted(e["name"] for e in events if e.get("cat") == "nsightkit step")
    expect("steps", steps, [f"ProfilerStep#{i}" for i in range(STEPS)])
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    by_cat = {}
    for e in gpu:
        by_cat.setdefault(e["cat"], set()).add(e["name"])
        args = e.get("args", {})
        expect(f"{e['name']}: stream", args.get("stream"), STREAM)
        expect(f"{e['name']}: device", args.get("device"), 0)
        expect(f"{e['name']}: path", args.get("path"), "forward")
    expect("GPU work by category", by_cat, {"kernel": {"gemm(float const*, float*)", "relu"},
                                           "gpu_memcpy": {"Memcpy HtoD"},
                                           "gpu_memset": {"Memset"}})
    expect("GPU slices", len(gpu), 4 * STEPS)
    runtime = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime"}
    expect("launch events", len(runtime), len(gpu))
    for e in gpu:
        launch = runtime.get(e["args"]["correlation"])
        if launch is None:
            raise Failure(f"{e['name']} at {e['ts']}: no cuda_runtime event with its correlation")
        if not launch["ts"] < e["ts"] or launch["dur"] != 0:
            raise Failure(f"{e['name']} at {e['ts']}: its launch {launch} is not before it")


def check_hta(trace_dir, rank):
    import logging
    logging.disable(logging.WARNING)  # HTA logs every file it parses as a warning
    from hta.trace_analysis import TraceAnalysis

    analysis = TraceAnalysis(trace_dir=trace_dir)
    expect("ranks HTA found", analysis.t.get_ranks(), [rank])
    t = analysis.get_temporal_breakdown(visualize=False)
    row = t[t["rank"] == rank].iloc[0]
    for column, want in (("kernel_time(us)", 2360), ("idle_time(us)", 1460),
                         ("compute_time(us)", 750), ("non_compute_time(us)", 150)):
        expect(f"temporal breakdown {column}", round(float(row[column]), 3), want)
    idle, _ = analysis.get_idle_time_breakdown(ranks=[rank], visualize=False)
    got = {(int(r["stream"]), r["idle_category"]): round(float(r["idle_time"]), 3)
           for _, r in idle.iterrows()}
    expect("idle time breakdown", got, {(STREAM, "host_wait"): 1280, (STREAM, "kernel_wait"): 30,
                                        (STREAM, "other"): 150})
    print(f"  HTA, rank {rank}: kernel time 2360 us = compute 750 + non-compute 150 + idle 1460; "
          f"idle on stream {STREAM}: host wait 1280, kernel wait 30, other 150")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--demo", required=True)
    ap.add_argument("--checker", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.dir, ignore_errors=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith("NSIGHTKIT_")}
    for k in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK", "LOCAL_RANK"):
        base.pop(k, None)
    cases = []  # (directory HTA reads, file, rank)
    try:
        streamed = os.path.join(a.dir, "streamed")
        os.makedirs(streamed)
        run_demo(a.demo, "stream", os.path.join(streamed, "trace.json"),
                 dict(base, RANK="1", WORLD_SIZE="2"))
        cases.append((streamed, os.path.join(streamed, "trace.rank1.json"), 1))
        memory = os.path.join(a.dir, "memory")
        os.makedirs(memory)
        run_demo(a.demo, "memory", os.path.join(memory, "trace.json"), base)
        cases.append((memory, os.path.join(memory, "trace.json"), 0))
        for _, path, rank in cases:
            p = subprocess.run([sys.executable, a.checker, path], capture_output=True, text=True)
            if p.returncode != 0:
                raise Failure(f"check_trace.py {path}: {p.stderr}")
            check_schema(path, rank if path.endswith(".rank1.json") else None)
            print(f"ok schema {path}")
        try:
            import hta  # noqa: F401
        except ModuleNotFoundError as e:
            if e.name != "hta":
                raise  # HTA without a package it needs: a failure, not a skip
            print(f"skipped: {sys.executable} has no HTA (pip install HolisticTraceAnalysis)")
            return SKIP
        for trace_dir, _, rank in cases:
            check_hta(trace_dir, rank)
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    print("ok hta")
    return 0


if __name__ == "__main__":
    sys.exit(main())
