#!/usr/bin/env python3
"""A days-long run's memory, in a minute (docs/long-jobs.md, "Memory over days").

  run_memory.py --demo report_memory_demo --dir DIR aggregate|stream

aggregate: 10^8 ranges, a start/end range with a new name and a counter sample every 100 (the
  report's table and summary, no trace): resident memory grows by less than 4 MiB from the end of
  the first eighth to the end, and the summary counts every range and start/end range (names past
  the paths limit under "(other start/end ranges)").
stream: 2*10^6 ranges, each with a start/end range and a counter sample, the trace streamed to a
  gzip file with trace-events=65536, 10 us an iteration: resident memory grows by less than 8 MiB
  from the end of the first quarter to the end, and every range, start/end pair and counter sample is in the trace or
  counted as dropped in its otherData (a loop this tight records faster than gzip compresses),
  most of them in the trace: nothing waits in memory for the end.
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys


def run(args, n, every, spec, pace_ns=0):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NSIGHTKIT_")}
    env["NSIGHTKIT_REPORT"] = spec
    p = subprocess.run([args.demo, str(n), str(every), str(pace_ns)], env=env, capture_output=True,
                       text=True, timeout=1500)
    if p.returncode != 0:
        raise SystemExit(f"FAIL the demo exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    rss = [tuple(int(x) for x in line.split()[1:]) for line in p.stdout.splitlines()
           if line.startswith("rss_kib")]
    print("\n".join(f"  after {i:>11} ranges: {kib / 1024:8.1f} MiB resident" for i, kib in rss))
    return rss, p


def flat(rss, limit_mib, warm=1):
    """Resident memory from the end of the `warm`-th eighth of the run to its end."""
    growth = (rss[-1][1] - rss[warm - 1][1]) / 1024
    print(f"  growth from the end of eighth {warm} to the end: {growth:.2f} MiB (bound {limit_mib} MiB)")
    return growth < limit_mib


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--demo", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("case", choices=("aggregate", "stream"))
    ap.add_argument("--ranges", type=int)
    args = ap.parse_args()
    d = os.path.join(args.dir, args.case)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    failures = []
    if args.case == "aggregate":
        n, every = args.ranges or 10**8, 100
        rss, _ = run(args, n, every, f"json={d}/s.json")
        if not flat(rss, 4):
            failures.append("resident memory grew")
        s = json.load(open(f"{d}/s.json"))
        it = sum(r["count"] for r in s["paths"] if r["path"] == "iteration")
        se = sum(r["time"]["count"] for r in s["start_end_ranges"])
        other = [r for r in s["start_end_ranges"] if r["name"] == "(other start/end ranges)"]
        if it != n:
            failures.append(f"{it} iterations counted, {n} ran")
        if se != n // every:
            failures.append(f"{se} start/end ranges counted, {n // every} ran")
        if n // every > 65536 and not other:
            failures.append("names past the paths limit are not counted together")
    else:
        # Paced at 10 us an iteration (a range, a start/end range, a counter sample), about what
        # the streaming worker compresses; a tighter loop outruns gzip and drops (counted).
        n, every = args.ranges or 2 * 10**6, 1
        rss, _ = run(args, n, every, f"json={d}/s.json,trace={d}/t.json.gz,trace-events=65536,"
                                     "trace-size=0", pace_ns=10_000)
        if not flat(rss, 8, warm=2):
            failures.append("resident memory grew")
        counts = {"X": 0, "b": 0, "e": 0, "C": 0}
        with gzip.open(f"{d}/t.json.gz", "rt", encoding="utf-8") as f:
            for line in f:  # one event per line
                for ph in counts:
                    if f'"ph":"{ph}"' in line:
                        counts[ph] += 1
                if '"otherData"' in line:
                    # '],"otherData":{...}}': the last brace closes the trace
                    other = json.loads("{" + line[line.index('"otherData"'):].rstrip()[:-1] + "}")
        dropped = other["otherData"]["events_dropped"]
        samples_dropped = other["otherData"]["counter_samples_dropped"]
        print(f"  trace: {counts}; dropped: {dropped} events, {samples_dropped} counter samples "
              "(a loop that records faster than the trace is compressed)")
        # Every range and start/end range is in the trace or counted as dropped; so is every
        # counter sample: nothing is lost without a word, nothing waits in memory for the end.
        if counts["X"] + counts["b"] + dropped != 2 * n or counts["b"] != counts["e"]:
            failures.append(f"ranges unaccounted for: {counts}, {dropped} dropped, {n} of each ran")
        if counts["C"] + samples_dropped != n:
            failures.append(f"counter samples unaccounted for: {counts['C']} + {samples_dropped} != {n}")
        if counts["X"] < n // 2 or counts["b"] < n // 2:
            failures.append(f"most events should reach the trace: {counts}")
    for f in failures:
        print("FAIL " + f)
    if not failures:
        print(f"ok memory {args.case}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
