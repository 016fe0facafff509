#!/usr/bin/env python3
"""Independent checks of nsightkit's report files, with nothing but Python's standard library.

  check_trace.py TRACE [--summary JSON] [--csv CSV] [--expect-pid N] [--expect-path P ...]
                 [--expect-thread-name NAME ...]
  check_trace.py --absent FILE ...     (a disabled build must write nothing)

TRACE must be Chrome trace-event JSON (the format Perfetto UI and chrome://tracing load) written by
nsightkit or merged by `nsightkit merge` (otherData.producer); files are read by
python/nsightkit/report_file.py:
  * an object with a "traceEvents" list; every event has ph, ts, pid, tid and name;
  * "X" events have a numeric dur >= 0; on each (pid, tid) track they nest properly;
  * every process and every track with events has its process_name / thread_name metadata;
  * "b"/"e" async events pair up by (cat, id, name), the end not before the begin.
The summary JSON must be an nsightkit-report v1 document whose rows are self-consistent
(self = max(0, total - children), min <= p50 <= p95 <= max, parents listed before children),
and the CSV must carry exactly the summary's rows with the same counts and totals.
"""
import argparse
import csv
import os
import sys

# The one reader of the report files (python/nsightkit/report_file.py) loads and checks the
# formats; this script adds the checks of what the writer must guarantee.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from nsightkit import report_file as nkr  # noqa: E402

KNOWN_PHASES = {"X", "B", "E", "i", "I", "M", "b", "e", "n", "C", "s", "t", "f"}
EPS_US = 0.002  # ts and dur are written in microseconds with three decimals


class Failure(Exception):
    pass


def fail(msg):
    raise Failure(msg)


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_trace(path, expect_pid, expect_threads):
    # The reader rejects invalid UTF-8, bad escapes, NaN, a file that is no nsightkit trace, and
    # events without 'ph' or a numeric 'ts'.
    events = nkr.read_trace(path).events
    process_names, thread_names = {}, {}
    tracks = {}
    asyncs = {}
    counts = {}
    for n, e in enumerate(events):
        where = f"{path}: event {n} {e!r:.200}"
        if not isinstance(e, dict):
            fail(f"{where}: not an object")
        for key in ("ph", "ts", "pid", "tid", "name"):
            if key not in e:
                fail(f"{where}: missing '{key}'")
        ph = e["ph"]
        if ph not in KNOWN_PHASES:
            fail(f"{where}: unknown phase {ph!r}")
        if not number(e["ts"]) or not isinstance(e["pid"], int) or not isinstance(e["tid"], int):
            fail(f"{where}: ts must be a number, pid and tid integers")
        if not isinstance(e["name"], str) or not e["name"]:
            fail(f"{where}: name must be a non-empty string")
        if expect_pid is not None and e["pid"] != expect_pid:
            fail(f"{where}: pid {e['pid']} but the rank says {expect_pid}")
        counts[ph] = counts.get(ph, 0) + 1
        if ph == "M":
            args = e.get("args")
            if not isinstance(args, dict):
                fail(f"{where}: metadata without args")
            if e["name"] == "process_name":
                process_names[e["pid"]] = args.get("name")
            elif e["name"] == "thread_name":
                thread_names[(e["pid"], e["tid"])] = args.get("name")
            continue
        if ph == "X":
            if not number(e.get("dur")) or e["dur"] < 0:
                fail(f"{where}: X event needs a duration >= 0")
            tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["dur"], e["name"]))
        elif ph in ("b", "e"):
            if "id" not in e or "cat" not in e:
                fail(f"{where}: async event needs id and cat")
            asyncs.setdefault((e["cat"], str(e["id"]), e["name"]), []).append((ph, e["ts"]))
    # Second pass, with all metadata known: every process and track with events is named.
    for e in events:
        if e["ph"] == "M":
            continue
        if e["pid"] not in process_names:
            fail(f"{path}: process {e['pid']} has no process_name metadata")
        if e["ph"] not in ("b", "e") and (e["pid"], e["tid"]) not in thread_names:
            fail(f"{path}: track {(e['pid'], e['tid'])} of {e['name']!r} has no thread_name metadata")
    for name in expect_threads:
        if name not in thread_names.values():
            fail(f"{path}: no thread named {name!r} (have {sorted(map(str, thread_names.values()))})")
    for key, spans in tracks.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for ts, dur, name in spans:
            while stack and ts >= stack[-1][1] - EPS_US:
                stack.pop()
            if stack and ts + dur > stack[-1][1] + EPS_US:
                fail(f"{path}: on track {key}, {name!r} [{ts}, {ts + dur}] overlaps its enclosing "
                     f"{stack[-1][2]!r} ending at {stack[-1][1]} without nesting in it")
            stack.append((ts, ts + dur, name))
    for key, edges in asyncs.items():
        begins = sorted(t for p, t in edges if p == "b")
        ends = sorted(t for p, t in edges if p == "e")
        if len(begins) != len(ends) or any(e + EPS_US < b for b, e in zip(begins, ends)):
            fail(f"{path}: async range {key} does not pair up: begins {begins}, ends {ends}")
    if counts.get("X", 0) == 0:
        fail(f"{path}: no X (complete) events at all")
    return counts, len(tracks)


def check_rows(path, rows, where):
    """rows: the reader's PathRows of one list; returns them by key."""
    seen = {}
    for i, r in enumerate(rows):
        for k in r.missing:
            fail(f"{path}: {where} row {i} lacks '{k}'")
        # The reader builds keys from the depths in tree order, so this holds for any file it
        # accepts; kept as the statement of the rule the writer must keep.
        if r.depth > 0 and r.key[:-1] not in seen:
            fail(f"{path}: {where} row {r.path!r} listed before its parent")
        if not (0 <= r.min_ns <= r.p50_ns <= r.p95_ns <= r.max_ns):
            fail(f"{path}: {where} row {r.path!r}: percentiles out of order")
        if r.count and r.total_ns < r.max_ns:
            fail(f"{path}: {where} row {r.path!r}: total below max")
        seen[r.key] = r
    for key, r in seen.items():
        children = sum(c.total_ns for q, c in seen.items() if q[:-1] == key)
        if r.self_ns != max(0, r.total_ns - children):
            fail(f"{path}: {where} row {r.path!r}: self {r.self_ns} != total {r.total_ns} - children {children}")
    return seen


def check_summary(path, expect_paths):
    doc = nkr.read_summary(path)  # format, version 1, types and tree order
    for k in doc.missing:
        fail(f"{path}: missing '{k}'")
    merged = check_rows(path, doc.paths, "merged")
    for t in doc.threads:
        check_rows(path, t.paths, f"thread {t.tid}")
    by_path = doc.by_path()
    for p in expect_paths:
        if p not in by_path:
            fail(f"{path}: expected path {p!r} not in {sorted(by_path)}")
    # Merged counts are the sums over threads.
    for key, r in merged.items():
        total = sum(row.count for t in doc.threads for row in t.paths if row.key == key)
        if total != r.count:
            fail(f"{path}: merged count of {r.path!r} is {r.count}, threads add up to {total}")
    return doc


def check_csv(path, summary):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    want = [("all", "", r) for r in summary.paths]
    for t in summary.threads:
        want += [("thread", str(t.tid), r) for r in t.paths]
    if len(rows) != len(want):
        fail(f"{path}: {len(rows)} rows, the summary has {len(want)}")
    for got, (scope, tid, r) in zip(rows, want):
        if (got["scope"], got["tid"], got["path"]) != (scope, tid, r.path):
            fail(f"{path}: row {got} does not match summary row {scope} {tid} {r.path!r}")
        if int(got["count"]) != r.count or int(got["total_ns"]) != r.total_ns:
            fail(f"{path}: counts/totals of {r.path!r} differ from the summary")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", nargs="?")
    ap.add_argument("--summary")
    ap.add_argument("--csv")
    ap.add_argument("--expect-pid", type=int)
    ap.add_argument("--expect-path", action="append", default=[])
    ap.add_argument("--expect-thread-name", action="append", default=[])
    ap.add_argument("--absent", nargs="+", default=[])
    a = ap.parse_args()
    try:
        for p in a.absent:
            if os.path.exists(p):
                fail(f"{p} exists, but nothing may be written")
        if a.trace:
            counts, tracks = check_trace(a.trace, a.expect_pid, a.expect_thread_name)
            print(f"{a.trace}: valid trace, {sum(counts.values())} events {dict(sorted(counts.items()))}, "
                  f"{tracks} tracks")
        if a.summary:
            doc = check_summary(a.summary, a.expect_path)
            print(f"{a.summary}: valid summary, {len(doc.paths)} paths, {len(doc.threads)} threads")
            if a.csv:
                check_csv(a.csv, doc)
                print(f"{a.csv}: valid CSV, matches the summary")
        if a.absent:
            print(f"nothing written: {' '.join(a.absent)}")
    except (Failure, nkr.ReportError) as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
