#!/usr/bin/env python3
"""Merge the per-rank files of nsightkit's report (one process per GPU) into one view.

Each rank of a multi-process run writes its own summary (NSIGHTKIT_REPORT=json=s.json gives
s.rank0.json, s.rank1.json, ...) and trace (trace=t.json gives t.rank0.json, ...). This command
reads them and writes:

  * a table (stdout by default): per range path, the per-rank total time as min / median / max
    across ranks, the slowest rank and how far it exceeds the other ranks, then a straggler
    summary; with --gpu on GPU time: CUPTI's busy time of the work a path launched where a rank
    has it (a collective's kernels on NCCL's stream too), else the rank's CUDA-event spans;
  * the same statistics with every rank's numbers as JSON (--json-out) and CSV (--csv-out);
  * one Chrome trace with a process per rank, put on one time line (--trace-out).

Inputs are recognised by their content, not their names: a summary has "format":
"nsightkit-report", a trace has "traceEvents" and otherData.producer "nsightkit ...". A
directory stands for the *.json files directly in it (other JSON files there are skipped with a
note); a quoted wildcard pattern is expanded here.

Only Python's standard library is used. Exit status: 0 on success (warnings allowed), 2 for a
usage or input error (one message naming the file and the problem), 1 for an internal error.
"""

import argparse
import csv
import fnmatch
import glob
import json
import os
import statistics
import sys

# The reader of the report files, installed next to this command.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import nsightkit_report as nkr  # noqa: E402
except ImportError as _e:  # a copy of this file without its neighbour
    sys.exit(f"nsightkit_merge: error: nsightkit_report.py is missing next to {__file__} ({_e})")

PROG = "nsightkit_merge"
SUMMARY_FORMAT = nkr.SUMMARY_FORMAT
MERGED_FORMAT = nkr.MERGED_FORMAT
MERGED_VERSION = 1
TRACE_PRODUCER = nkr.TRACE_PRODUCER  # otherData.producer of a trace written by report.hpp
MERGED_PRODUCER = nkr.MERGED_PRODUCER
# Steady-clock origins further apart than this are unlikely to come from one host's run.
ALIGN_SUSPICIOUS_NS = 300 * 10**9
# Component names that mark a collective: its time on a rank is mostly waiting for the others,
# so the rank that arrives last shows the *shortest* time there (see --collective).
DEFAULT_COLLECTIVES = (
    "*allreduce*",
    "*all_reduce*",
    "*all-reduce*",
    "*allgather*",
    "*all_gather*",
    "*reduce_scatter*",
    "*reducescatter*",
    "*alltoall*",
    "*broadcast*",
    "*barrier*",
    "nccl*",
)


class InputError(Exception):
    """A usage or input problem: reported as one line, exit status 2."""


class Messages:
    """Warnings and notes, printed on stderr as they come and kept for the JSON output."""

    def __init__(self, stream):
        self.stream = stream
        self.items = []

    def warn(self, text):
        self.items.append({"level": "warning", "text": text})
        print(f"{PROG}: warning: {text}", file=self.stream)

    def note(self, text):
        self.items.append({"level": "note", "text": text})
        print(f"{PROG}: note: {text}", file=self.stream)


# ---------------------------------------------------------------------------------------------
# Reading the inputs


def expand_inputs(args):
    """Returns [(path, explicit)]: explicit files must be nsightkit files, directory members may be
    other JSON (skipped). The same file named twice is read once."""
    out, seen = [], set()

    def add(path, explicit):
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            out.append((path, explicit))

    for arg in args:
        if os.path.isdir(arg):
            members = sorted(n for n in os.listdir(arg) if n.endswith(".json"))
            for name in members:
                if os.path.isfile(os.path.join(arg, name)):
                    add(os.path.join(arg, name), False)
        elif os.path.exists(arg):
            add(arg, True)
        elif any(c in arg for c in "*?["):  # a pattern the shell left alone (quoted)
            matches = sorted(glob.glob(arg))
            if not matches:
                raise InputError(f"{arg}: the pattern matches no file")
            for m in matches:
                if os.path.isdir(m):
                    raise InputError(f"{m}: a directory matched by {arg!r}; name directories on their own")
                add(m, True)
        else:
            raise InputError(f"{arg}: no such file or directory")
    return out


def load_json(path):
    try:
        return nkr.load_json(path)
    except nkr.ReportError as e:
        raise InputError(str(e)) from None


def classify(doc):
    """'summary', 'trace', 'merged' (our own output) or None (something else)."""
    kind = nkr.kind_of(doc)
    return "merged" if kind in ("merged-summary", "merged-trace") else kind


# Where a rank's GPU numbers come from: CUPTI's busy time of the work each path launched (on any
# stream: a collective's kernels on NCCL's stream too), else the span between CUDA events on the
# thread's current stream. The two measure different things, so they are never silently mixed.
GPU_SOURCES = ("cupti", "events")
MIXED = "mixed"  # a row whose ranks' GPU numbers come from different sources
GPU_SOURCE_MEANING = {
    "cupti": "busy time of the kernels, copies and memsets a path launched, on any stream (NCCL's too)",
    "events": "span between CUDA events on the thread's current stream (other streams unseen)",
}


class Row:
    """One summary row of one rank, keyed by its exact components (a name may contain '/').
    gpu_count/gpu_total_ns: None when the row has no GPU time on this rank; gpu_source says which
    source measured it ("cupti": calls with work and busy time; "events": timed calls and span)."""

    __slots__ = ("key", "path", "label", "depth", "count", "total_ns", "gpu_count", "gpu_total_ns",
                 "gpu_source")

    def __init__(self, key, path, label, depth, count, total_ns, gpu_count, gpu_total_ns, gpu_source=None):
        self.key, self.path, self.label, self.depth = key, path, label, depth
        self.count, self.total_ns = count, total_ns
        self.gpu_count, self.gpu_total_ns = gpu_count, gpu_total_ns
        self.gpu_source = gpu_source if gpu_total_ns is not None else None


class Summary:
    """The parts of one rank's summary JSON that the merge uses."""

    def __init__(self, path):
        self.file = path
        self.rank = None
        self.rank_assigned = False
        self.pid = None
        self.version = ""
        self.run_ns = 0
        self.captured_only = False
        self.rows = []  # paths, in the rank's tree order
        self.steps = None  # Row or None when no capture-window step was counted
        self.start_end = []  # Rows keyed by ("start/end", domain, name)
        self.marks = {}  # (domain, name) -> count
        self.gpu_error = ""
        self.gpu_source = None  # "cupti", "events" or None (no GPU time on any path)


def read_summary(path, doc):
    """The merge's view of one summary, read and checked by nsightkit_report.py."""
    try:
        r = nkr.summary_from(path, doc)
    except nkr.ReportError as e:
        raise InputError(str(e)) from None
    s = Summary(path)
    s.rank, s.pid, s.version = r.rank, r.pid, r.nsightkit_version
    s.run_ns, s.captured_only = r.run_ns, r.captured_only
    # CUPTI's attributed work wherever the rank has any; its event spans only where it has none.
    cupti = any(row.gpu_work is not None for row in r.paths)
    for i, row in enumerate(r.paths):
        if cupti:
            work = row.gpu_work
            if work is not None and "busy_ns" not in work:
                raise InputError(f"{path}: paths[{i}] ({row.path!r}): gpu_work has no 'busy_ns'")
            gpu_count, gpu_total = (None, None) if work is None else (work.get("calls_with_work", 0), work["busy_ns"])
        else:
            gpu_count, gpu_total = (None, None) if row.gpu is None else (row.gpu.count, row.gpu.total_ns)
        source = "cupti" if cupti else "events"
        s.rows.append(
            Row(row.key, row.path, row.label, row.depth, row.count, row.total_ns, gpu_count, gpu_total, source)
        )
    s.gpu_source = next((x.gpu_source for x in s.rows if x.gpu_source is not None), None)
    if r.steps is not None and r.steps.count:
        s.steps = Row(("steps",), "capture-window steps", "steps", 0, r.steps.count, r.steps.total_ns, None, None)
    for se in r.start_end_ranges:
        key = ("start/end", se.domain, se.name)
        s.start_end.append(Row(key, se.label, se.label, 0, se.time.count, se.time.total_ns, None, None))
    for m in r.marks:
        s.marks[(m.domain, m.name)] = m.count
    if r.gpu is not None and r.gpu.error:
        s.gpu_error = r.gpu.error
    return s


class Trace:
    """One rank's Chrome trace."""

    def __init__(self, path):
        self.file = path
        self.rank = None
        self.rank_assigned = False
        self.pid = None
        self.version = ""
        self.clock = None
        self.origin_ns = None
        self.dropped = 0
        self.events = []


def read_trace(path, doc):
    """The merge's view of one trace, read and checked by nsightkit_report.py."""
    try:
        r = nkr.trace_from(path, doc)
    except nkr.ReportError as e:
        raise InputError(str(e)) from None
    t = Trace(path)
    t.version, t.rank, t.pid = r.nsightkit_version, r.rank, r.pid
    t.clock, t.origin_ns, t.dropped = r.clock, r.origin_ns, r.events_dropped
    t.events = r.events
    return t


def read_inputs(paths, msgs):
    """Reads and classifies every input; returns (summaries, traces)."""
    summaries, traces = [], []
    for path, explicit in expand_inputs(paths):
        doc = load_json(path)
        kind = classify(doc)
        if kind == "summary":
            summaries.append(read_summary(path, doc))
        elif kind == "trace":
            traces.append(read_trace(path, doc))
        elif kind == "merged":
            if explicit:
                raise InputError(
                    f"{path}: this is a merged file (written by {PROG}); merge the per-rank files instead"
                )
            msgs.note(f"{path}: a merged file (written by {PROG}), skipped")
        elif explicit:
            raise InputError(
                f"{path}: not an nsightkit report file: expected a summary "
                f'("format": "{SUMMARY_FORMAT}", from NSIGHTKIT_REPORT=json=...) or '
                'a trace ("traceEvents" with otherData.producer "nsightkit ...", '
                "from trace=...)"
            )
        else:
            msgs.note(f"{path}: not an nsightkit summary or trace, skipped")
    return summaries, traces


def assign_ranks(summaries, traces, assign, msgs):
    """Checks that every file has a rank and no rank is claimed twice. With `assign`, files without
    a rank get the smallest free ranks, one per process (a summary and a trace with the same OS pid
    are one process), in the order the files were given."""
    unranked = [f for f in summaries + traces if f.rank is None]
    if unranked and not assign:
        raise InputError(
            f"{unranked[0].file}: no rank in the file (the process had none of "
            "OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, RANK, LOCAL_RANK set); set one per "
            "process, or pass --assign-ranks to number such files in the order given"
        )
    used = {f.rank for f in summaries + traces if f.rank is not None}
    by_pid, next_rank = {}, 0
    for f in unranked:
        key = f.pid if f.pid is not None else ("file", f.file)
        if key not in by_pid:
            while next_rank in used:
                next_rank += 1
            by_pid[key] = next_rank
            used.add(next_rank)
        f.rank, f.rank_assigned = by_pid[key], True
        msgs.warn(f"{f.file}: no rank in the file; assigned rank {f.rank} (--assign-ranks, pid {f.pid})")
    for kind, files in (("summaries", summaries), ("traces", traces)):
        claimed = {}
        for f in files:
            if f.rank in claimed:
                raise InputError(
                    f"rank {f.rank} appears twice among the {kind}: {claimed[f.rank].file} and "
                    f"{f.file} (files of two runs in one place? pass the files of one run)"
                )
            claimed[f.rank] = f
        files.sort(key=lambda f: f.rank)


def short_list(ranks, most=12):
    """'0, 1, 2' or, for long lists, the first ones and how many more."""
    head = ", ".join(map(str, ranks[:most]))
    return head if len(ranks) <= most else f"{head} and {len(ranks) - most} more"


def gpu_sources(summaries):
    """{source: [ranks]} of the ranks that have GPU times, in GPU_SOURCES order."""
    out = {}
    for src in GPU_SOURCES:
        ranks = [s.rank for s in summaries if s.gpu_source == src]
        if ranks:
            out[src] = ranks
    return out


def gpu_sources_text(summaries):
    """'cupti on rank(s) 0, 1' or, when ranks differ, 'cupti on rank(s) 0; events on rank(s) 1'."""
    return "; ".join(f"{src} on rank(s) {short_list(ranks)}" for src, ranks in gpu_sources(summaries).items())


def check_consistency(summaries, traces, msgs):
    """Warnings for inputs that merge but may mislead."""
    by_rank = {s.rank: s for s in summaries}
    for t in traces:
        s = by_rank.get(t.rank)
        if s is not None and s.pid is not None and t.pid is not None and s.pid != t.pid:
            msgs.warn(
                f"rank {t.rank}: the summary {s.file} (pid {s.pid}) and the trace {t.file} "
                f"(pid {t.pid}) come from different processes: files of two runs?"
            )
    if summaries and traces:
        only_s = sorted(set(by_rank) - {t.rank for t in traces})
        only_t = sorted({t.rank for t in traces} - set(by_rank))
        if only_s:
            msgs.note(f"no trace for rank(s) {', '.join(map(str, only_s))}")
        if only_t:
            msgs.note(f"no summary for rank(s) {', '.join(map(str, only_t))}")
    ranks = sorted({f.rank for f in summaries + traces})
    gaps = sorted(set(range(ranks[-1] + 1)) - set(ranks)) if ranks else []
    if gaps:
        msgs.warn(
            f"no file for rank(s) {short_list(gaps)} (ranks present: {short_list(ranks)}): did a rank "
            "fail or write elsewhere?"
        )
    versions = {}
    for f in summaries + traces:
        versions.setdefault(f.version, []).append(f.rank)
    if len(versions) > 1:
        listing = "; ".join(
            f"{v or '?'} on rank(s) {', '.join(map(str, sorted(set(r))))}"
            for v, r in sorted(versions.items())
        )
        msgs.warn(f"the files come from different nsightkit versions ({listing})")
    captured = {s.captured_only for s in summaries}
    if len(captured) > 1:
        which = ", ".join(str(s.rank) for s in summaries if s.captured_only)
        msgs.warn(
            f"some ranks counted only captured steps (captured_only on rank(s) {which}) and others "
            "everything: their totals are not comparable"
        )
    if len(gpu_sources(summaries)) > 1:
        msgs.warn(
            f"the ranks' GPU times come from different sources ({gpu_sources_text(summaries)}): CUPTI "
            f'busy time and CUDA-event spans do not compare; GPU rows timed by both are "{MIXED}" and '
            "not judged"
        )
    for s in summaries:
        if s.gpu_error:
            msgs.note(f"rank {s.rank}: GPU timing stopped: {s.gpu_error}")
    for t in traces:
        if t.dropped:
            msgs.note(
                f"rank {t.rank}: the trace dropped {t.dropped} events (trace-events=N raises the limit)"
            )


# ---------------------------------------------------------------------------------------------
# Statistics across ranks


def median(values):
    """statistics.median, as an int when it is one (with an even number of ranks it is the mean of
    the two middle values)."""
    m = statistics.median(values)
    return int(m) if float(m).is_integer() else m


def spread(per_rank):
    """min / median / max over {rank: total}, the slowest and fastest rank (lowest rank on ties), and
    the slowest rank's excess over the median of the *other* ranks. Comparing with the others
    rather than with a median that includes the slowest rank keeps one rule for any number of
    ranks: with two it is the gap to the other rank."""
    if not per_rank:
        return None
    ranks = sorted(per_rank)
    values = [per_rank[r] for r in ranks]
    slowest = max(ranks, key=lambda r: (per_rank[r], -r))
    fastest = min(ranks, key=lambda r: (per_rank[r], r))
    out = {
        "min_ns": min(values),
        "median_ns": median(values),
        "max_ns": max(values),
        "slowest_rank": slowest,
        "fastest_rank": fastest,
        "others_median_ns": None,
        "excess_ns": None,
        "excess": None,
    }
    if len(ranks) > 1:
        others = median([per_rank[r] for r in ranks if r != slowest])
        out["others_median_ns"] = others
        out["excess_ns"] = per_rank[slowest] - others
        out["excess"] = out["excess_ns"] / others if others > 0 else None
    return out


class Merged:
    """One path (or the steps, or a start/end range) across ranks."""

    def __init__(self, section, key, path, label, depth):
        self.section, self.key, self.path, self.label, self.depth = section, key, path, label, depth
        self.ranks = {}  # rank -> Row

    def per_rank(self, basis):
        """{rank: total} of the ranks that have this row (for GPU: that timed it on the GPU)."""
        if basis == "cpu":
            return {r: row.total_ns for r, row in self.ranks.items()}
        return {r: row.gpu_total_ns for r, row in self.ranks.items() if row.gpu_total_ns is not None}

    def counts(self, basis):
        if basis == "cpu":
            return {r: row.count for r, row in self.ranks.items()}
        return {r: row.gpu_count for r, row in self.ranks.items() if row.gpu_count is not None}

    def stats(self, basis):
        return spread(self.per_rank(basis))

    def gpu_source(self):
        """The source of the ranks' GPU times on this row: "cupti" or "events" when they agree,
        "mixed" when they differ, None without any."""
        found = {row.gpu_source for row in self.ranks.values() if row.gpu_source is not None}
        return None if not found else found.pop() if len(found) == 1 else MIXED

    def mean_per_call(self, basis):
        """All ranks' time over all their calls."""
        calls = sum(self.counts(basis).values())
        return sum(self.per_rank(basis).values()) / calls if calls else None


def merge_rows(summaries):
    """Merged paths in tree order (a parent before its children, siblings by median CPU total,
    larger first, as in the single-rank table), plus the steps and start/end rows."""
    paths, order = {}, []
    for s in summaries:
        for row in s.rows:
            m = paths.get(row.key)
            if m is None:
                m = paths[row.key] = Merged("paths", row.key, row.path, row.label, row.depth)
                order.append(m)
            m.ranks[s.rank] = row

    def weight(m):
        return m.stats("cpu")["median_ns"]

    children = {}
    for m in order:
        parent = m.key[:-1] if m.key[:-1] in paths else None
        children.setdefault(parent, []).append(m)
    tree = []

    def walk(parent):
        for m in sorted(children.get(parent, []), key=lambda c: -weight(c)):  # stable: first seen wins ties
            tree.append(m)
            walk(m.key)

    walk(None)

    steps = None
    for s in summaries:
        if s.steps is not None:
            if steps is None:
                steps = Merged("steps", ("steps",), "capture-window steps", "steps", 0)
            steps.ranks[s.rank] = s.steps
    start_end, se_order = {}, []
    for s in summaries:
        for row in s.start_end:
            m = start_end.get(row.key)
            if m is None:
                m = start_end[row.key] = Merged("start/end", row.key, row.path, row.label, 0)
                se_order.append(m)
            m.ranks[s.rank] = row
    return tree, steps, se_order


# ---------------------------------------------------------------------------------------------
# Stragglers


class Thresholds:
    def __init__(self, excess_pct, excess_ms, share_pct, collectives):
        self.excess = excess_pct / 100.0
        self.excess_ns = excess_ms * 1e6
        self.share = share_pct / 100.0
        self.collectives = [p.lower() for p in collectives]

    def as_json(self):
        return {
            "min_excess_pct": self.excess * 100,
            "min_excess_ms": self.excess_ns / 1e6,
            "min_share_pct": self.share * 100,
            "collective_patterns": self.collectives,
        }


def is_collective(m, thresholds):
    """Whether any component of the path names a collective (then its time is mostly waiting)."""
    if m.section != "paths":
        return False
    return any(fnmatch.fnmatchcase(name.lower(), pat) for _, name in m.key for pat in thresholds.collectives)


def share_of_run(m, basis, run_median):
    st = m.stats(basis)
    return (st["median_ns"] / run_median) if st and run_median > 0 else 0.0


def collective_waits(rows, basis, th):
    """{path key: {rank: ns}}: per rank, the time of the outermost collectives below each path."""
    by_key = {m.key: m for m in rows}
    waits = {}
    for m in rows:
        if not is_collective(m, th) or (m.key[:-1] in by_key and is_collective(by_key[m.key[:-1]], th)):
            continue
        for depth in range(1, len(m.key)):
            acc = waits.setdefault(m.key[:depth], {})
            for r, v in m.per_rank(basis).items():
                acc[r] = acc.get(r, 0) + v
    return waits


def collective_time(tree, basis, th):
    """{rank: ns}: per rank, the summed totals of the outermost collective paths (a rank's share
    of waiting for the others); None when no path is a collective (timed on `basis`)."""
    by_key = {m.key: m for m in tree}
    out, found = {}, False
    for m in tree:
        if not is_collective(m, th) or (m.key[:-1] in by_key and is_collective(by_key[m.key[:-1]], th)):
            continue
        for r, v in m.per_rank(basis).items():
            found = True
            out[r] = out.get(r, 0) + v
    return out if found else None


def find_stragglers(rows, basis, run_median, th):
    """A rank is flagged on a row when its total exceeds the median of the other ranks' totals by
    more than `th.excess` (relative) AND by more than `th.excess_ns` (absolute), on a row whose
    median total holds at least `th.share` of the median run time, and which is not a collective.
    Every rank is tested, not only the slowest, so two slow ranks of eight are both flagged.
    Returns (findings, slowest-rank counts over the judged rows, collective rows)."""
    findings, slowest_counts, judged, collectives = [], {}, 0, []
    # Time inside collectives is waiting for other ranks: it is taken out of every path that holds
    # one (backward holding its all-reduces), or the ranks that wait would look slow there.
    waiting = collective_waits(rows, basis, th)
    for m in rows:
        if basis == "gpu" and m.gpu_source() == MIXED:
            continue  # CUPTI busy time on some ranks, event spans on others: not comparable
        share = share_of_run(m, basis, run_median)
        if is_collective(m, th):
            if len(m.per_rank(basis)) >= 2 and share >= th.share:
                collectives.append(m)
            continue
        wait = waiting.get(m.key, {})
        if wait and basis == "gpu":
            # On the GPU a collective runs on its own stream, overlapping the path's kernels:
            # its time cannot be taken out of the path's span, so the path is not judged.
            continue
        per_rank = {r: max(0, v - wait.get(r, 0)) for r, v in m.per_rank(basis).items()}
        if len(per_rank) < 2 or share < th.share:
            continue
        judged += 1
        st = spread(per_rank)
        slowest_counts[st["slowest_rank"]] = slowest_counts.get(st["slowest_rank"], 0) + 1
        for r in sorted(per_rank):
            others = median([v for q, v in per_rank.items() if q != r])
            excess_ns = per_rank[r] - others
            rel = excess_ns / others if others > 0 else (float("inf") if excess_ns > 0 else 0.0)
            if rel > th.excess and excess_ns > th.excess_ns:
                findings.append(
                    {
                        "rank": r,
                        "section": m.section,
                        "path": m.path,
                        "depth": m.depth,
                        "total_ns": per_rank[r],
                        "others_median_ns": others,
                        "excess_ns": excess_ns,
                        "excess": None if others <= 0 else rel,
                        "waiting_excluded_ns": wait.get(r, 0),
                        "share": share,
                        "ranks_compared": len(per_rank),
                    }
                )
    return findings, slowest_counts, judged, collectives


# ---------------------------------------------------------------------------------------------
# Text output


def fmt_ns(ns):
    """Three significant digits, as the single-rank table: "812 ns", "3.25 us", "12.3 ms", "1.23 s"."""
    if ns is None:
        return "-"
    if abs(ns) < 999.5:
        return f"{ns:.0f} ns"
    for scale, unit in ((1e3, "us"), (1e6, "ms"), (1e9, "s")):
        v = ns / scale
        if abs(v) < 999.5 or unit == "s":
            if abs(v) < 9.995:
                return f"{v:.2f} {unit}"
            if abs(v) < 99.95:
                return f"{v:.1f} {unit}"
            return f"{v:.0f} {unit}"
    raise AssertionError("unreachable")


def fmt_excess(st):
    if st is None or st["excess_ns"] is None:
        return "-"
    if st["excess"] is None:
        return "inf" if st["excess_ns"] > 0 else "+0%"
    return f"+{st['excess'] * 100:.0f}%"


def fmt_calls(counts):
    if not counts:
        return "-"
    lo, hi = min(counts.values()), max(counts.values())
    return str(lo) if lo == hi else f"{lo}..{hi}"


def render_table(lines, header, rows):
    """Left-aligned first column, the others right-aligned, two spaces apart."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        cells = [str(r[0]).ljust(widths[0])] + [str(c).rjust(w) for c, w in zip(r[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())


def table_rows(rows, basis, all_ranks, run_median, tree, per_rank_cols):
    out = []
    for m in rows:
        per_rank = m.per_rank(basis)
        st = spread(per_rank)
        name = ("  " * m.depth + m.label) if tree else m.path
        share = f"{share_of_run(m, basis, run_median) * 100:.1f}%" if st else "-"
        cells = [
            name,
            f"{len(m.ranks)}/{len(all_ranks)}",
            fmt_calls(m.counts(basis)),
            share,
            fmt_ns(st["min_ns"]) if st else "-",
            fmt_ns(st["median_ns"]) if st else "-",
            fmt_ns(st["max_ns"]) if st else "-",
            f"rank {st['slowest_rank']}" if st and len(per_rank) > 1 else "-",
            fmt_excess(st),
            fmt_ns(m.mean_per_call(basis)),
        ]
        if basis == "gpu":
            cells.append(m.gpu_source() or "-")
        if per_rank_cols:
            # "missing": the rank lacks the path; "-": it has the path but no time of this kind.
            cells += [
                fmt_ns(per_rank[r]) if r in per_rank else "-" if r in m.ranks else "missing"
                for r in all_ranks
            ]
        out.append(cells)
    return out


def sorted_rows(tree, sort, top, basis):
    rows = list(tree)
    if top is not None:
        keep = sorted(rows, key=lambda m: -(m.stats(basis) or {"median_ns": -1})["median_ns"])[:top]
        kept = {id(m) for m in keep}
        rows = [m for m in rows if id(m) in kept]
    if sort == "total":
        rows.sort(key=lambda m: -(m.stats(basis) or {"median_ns": -1})["median_ns"])
    elif sort == "excess":

        def excess_key(m):
            st = m.stats(basis)
            if not st or st["excess_ns"] is None:
                return (1, 0.0)
            return (0, -(st["excess"] if st["excess"] is not None else float("inf")))

        rows.sort(key=excess_key)
    return rows


def straggler_lines(findings, slowest_counts, judged, collectives, basis, th, n_ranks, max_paths):
    what = "CPU" if basis == "cpu" else "GPU"
    lines = [
        f"stragglers ({what} time): a rank is flagged on a path when its total exceeds the median of the",
        f"other ranks' totals by more than {th.excess * 100:g}% and by more than {th.excess_ns / 1e6:g} ms; "
        f"only paths holding >= {th.share * 100:g}%",
        "of the run are judged, collectives excepted;",
        (
            "paths holding a collective are not judged (it overlaps them on another stream)"
            if basis == "gpu"
            else "a path's time inside collectives (waiting for other ranks) is subtracted first"
        ),
    ]
    if n_ranks < 2:
        return lines + ["  only one rank: nothing to compare"]
    if judged == 0:
        lines.append("  no path holds enough of the run to judge")
    elif not findings:
        lines.append(f"  none: on all {judged} judged paths every rank is within the thresholds")
    by_rank = {}
    for f in findings:
        by_rank.setdefault(f["rank"], []).append(f)
    others = "other rank" if n_ranks == 2 else "others' median"
    for r in sorted(by_rank, key=lambda q: -max(f["excess_ns"] for f in by_rank[q])):
        fs = by_rank[r]
        top = max(fs, key=lambda f: f["excess_ns"])
        lines.append(
            f"  rank {r}: slow on {len(fs)} of {judged} judged paths, by up to {fmt_ns(top['excess_ns'])} "
            f"({top['path']})"
        )
        # The largest excesses, listed in tree order so that the nesting says where the time goes.
        shown = sorted(fs, key=lambda f: -f["excess_ns"])[:max_paths]
        rows = [
            [
                "  " * f["depth"] + f["path"],
                fmt_ns(f["total_ns"]),
                fmt_ns(f["others_median_ns"]),
                "+" + fmt_ns(f["excess_ns"]),
                "inf" if f["excess"] is None else f"+{f['excess'] * 100:.0f}%",
            ]
            for f in fs
            if any(f is g for g in shown)
        ]
        table = []
        render_table(table, ["path", f"rank {r}", others, "excess", "%"], rows)
        lines += ["    " + ln for ln in table]
        if len(fs) > len(shown):
            lines.append(f"    ... and {len(fs) - len(shown)} more (--straggler-paths)")
    if judged:
        counts = ", ".join(
            f"rank {r} on {n}" for r, n in sorted(slowest_counts.items(), key=lambda kv: (-kv[1], kv[0]))
        )
        lines.append(
            f"  slowest rank per judged path (some rank always is; not a verdict by itself): {counts}"
        )
    for m in collectives:
        st = m.stats(basis)
        lines.append(
            f"  collective {m.path}: shortest on rank {st['fastest_rank']} ({fmt_ns(st['min_ns'])}, median "
            f"{fmt_ns(st['median_ns'])}): the last rank to arrive waits least"
        )
    return lines


def format_report(summaries, tree, steps, start_end, args, th):
    basis = "gpu" if args.gpu else "cpu"
    all_ranks = [s.rank for s in summaries]
    run = spread({s.rank: s.run_ns for s in summaries})
    run_median = run["median_ns"]
    lines = [
        f"nsightkit merged report: {len(all_ranks)} ranks ({', '.join(map(str, all_ranks))}); run time "
        f"median {fmt_ns(run_median)} (min {fmt_ns(run['min_ns'])}, max {fmt_ns(run['max_ns'])} on rank "
        f"{run['slowest_rank']})"
    ]
    what = "CPU wall time" if basis == "cpu" else "GPU time"
    lines += [
        f"{what} per range path; a rank's total is the sum over its threads. min/median/max: across the",
        "ranks that have the path; slowest: the rank with the max; excess: how much the slowest exceeds the",
        "median of the other ranks (with 2 ranks: the other rank); %run: median total / median run time;",
        "mean/call: all ranks' time over all their calls",
    ]
    if basis == "gpu":
        sources = gpu_sources(summaries)
        for src, ranks in sources.items():
            lines.append(f"source {src} (rank(s) {short_list(ranks)}): {GPU_SOURCE_MEANING[src]}")
        if len(sources) > 1:
            lines.append(
                f'the ranks\' sources differ: a row timed by both is "{MIXED}" (its min/median/max compare '
                "busy time with spans) and not judged"
            )
    lines.append("")
    tree_order = args.sort == "tree"
    rows = sorted_rows(tree, args.sort, args.top, basis)
    if basis == "gpu":
        rows = [m for m in rows if m.per_rank("gpu")]
    header = ["path", "ranks", "calls", "%run", "min", "median", "max", "slowest", "excess", "mean/call"]
    if basis == "gpu":
        header.append("source")
    if args.per_rank:
        header += [f"rank {r}" for r in all_ranks]
    render_table(lines, header, table_rows(rows, basis, all_ranks, run_median, tree_order, args.per_rank))
    if args.top is not None and len(rows) < len(tree):
        lines.append(f"({len(tree) - len(rows)} smaller paths not shown: --top {args.top})")
    if basis == "cpu" and any(m.per_rank("gpu") for m in tree):
        lines.append(
            f"(GPU times present, from {gpu_sources_text(summaries)}: nsightkit_merge.py --gpu shows and "
            "judges them)"
        )
        if len(gpu_sources(summaries)) > 1:
            lines.append(
                "(the ranks' GPU sources differ: CUPTI busy time and CUDA-event spans do not compare; rows "
                f'timed by both are "{MIXED}" and not judged)'
            )
    if steps is not None and basis == "cpu":
        lines.append("")
        lines.append("capture-window steps:")
        render_table(lines, header, table_rows([steps], "cpu", all_ranks, run_median, False, args.per_rank))
    if start_end and basis == "cpu":
        lines.append("")
        lines.append("start/end ranges (by name, not part of paths):")
        render_table(lines, header, table_rows(start_end, "cpu", all_ranks, run_median, False, args.per_rank))

    marks = {}
    for s in summaries:
        for key, count in s.marks.items():
            marks.setdefault(key, {})[s.rank] = count
    if marks:
        lines.append("")
        lines.append("marks:")
        for (domain, name), per_rank in marks.items():
            counts = set(per_rank.values())
            if len(counts) == 1 and len(per_rank) == len(all_ranks):
                lines.append(f"  {nkr.component(domain, name)}: {counts.pop()} on every rank")
            else:
                lines.append(
                    f"  {nkr.component(domain, name)}: "
                    + ", ".join(f"rank {r} {per_rank.get(r, 0)}" for r in all_ranks)
                )

    missing = [m for m in tree if len(m.ranks) < len(all_ranks)]
    if missing:
        lines.append("")
        lines.append("paths missing on some ranks:")
        for m in missing:
            lacking = [r for r in all_ranks if r not in m.ranks]
            lines.append(f"  {m.path}: not on rank(s) {', '.join(map(str, lacking))}")

    in_collectives = collective_time(tree, basis, th)
    if in_collectives is not None:
        lines.append("")
        lines.append(
            f"time in collectives ({'CPU' if basis == 'cpu' else 'GPU'} time): per rank, the outermost paths "
            "matching a collective pattern"
        )
        rows = [
            [
                f"rank {s.rank}",
                fmt_ns(in_collectives.get(s.rank, 0)),
                f"{100 * in_collectives.get(s.rank, 0) / s.run_ns:.1f}%" if s.run_ns > 0 else "-",
            ]
            for s in summaries
        ]
        render_table(lines, ["rank", "in collectives", "% of its run"], rows)

    lines.append("")
    judged_rows = list(tree) + ([steps] if steps is not None and basis == "cpu" else [])
    findings, counts, judged, collectives = find_stragglers(judged_rows, basis, run_median, th)
    lines += straggler_lines(
        findings, counts, judged, collectives, basis, th, len(all_ranks), args.straggler_paths
    )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Machine-readable output


def stats_json(m, basis):
    st = m.stats(basis)
    if st is None:
        return None
    st = dict(st)
    st["mean_per_call_ns"] = m.mean_per_call(basis)
    if basis == "gpu":
        st["source"] = m.gpu_source()
    counts = m.counts(basis)
    st["per_rank"] = [
        {"rank": r, "count": counts[r], "total_ns": v} for r, v in sorted(m.per_rank(basis).items())
    ]
    return st


def row_json(m, all_ranks):
    return {
        "section": m.section,
        "path": m.path,
        "depth": m.depth,
        "components": [list(c) for c in m.key] if m.section == "paths" else None,
        "ranks_present": sorted(m.ranks),
        "ranks_missing": [r for r in all_ranks if r not in m.ranks],
        "cpu": stats_json(m, "cpu"),
        "gpu": stats_json(m, "gpu"),
    }


def merged_json(summaries, tree, steps, start_end, th, msgs):
    all_ranks = [s.rank for s in summaries]
    run_median = spread({s.rank: s.run_ns for s in summaries})["median_ns"]
    stragglers = {}
    for basis in ("cpu", "gpu"):
        rows = list(tree) + ([steps] if steps is not None and basis == "cpu" else [])
        findings, counts, judged, collectives = find_stragglers(rows, basis, run_median, th)
        stragglers[basis] = {
            "findings": findings,
            "judged_paths": judged,
            "slowest_rank_counts": [{"rank": r, "paths": n} for r, n in sorted(counts.items())],
            "collectives": [m.path for m in collectives],
        }
    in_collectives = {}
    for basis in ("cpu", "gpu"):
        ct = collective_time(tree, basis, th)
        in_collectives[basis] = (
            None
            if ct is None
            else [
                {
                    "rank": s.rank,
                    "total_ns": ct.get(s.rank, 0),
                    "share": ct.get(s.rank, 0) / s.run_ns if s.run_ns > 0 else None,
                }
                for s in summaries
            ]
        )
    marks = {}
    for s in summaries:
        for (domain, name), count in s.marks.items():
            marks.setdefault((domain, name), []).append({"rank": s.rank, "count": count})
    return {
        "format": MERGED_FORMAT,
        "version": MERGED_VERSION,
        "producer": PROG,
        "ranks": [
            {
                "rank": s.rank,
                "rank_assigned": s.rank_assigned,
                "file": s.file,
                "pid": s.pid,
                "nsightkit_version": s.version,
                "run_ns": s.run_ns,
                "captured_only": s.captured_only,
                "gpu_source": s.gpu_source,
            }
            for s in summaries
        ],
        "run_ns": spread({s.rank: s.run_ns for s in summaries}),
        "thresholds": th.as_json(),
        "paths": [row_json(m, all_ranks) for m in tree],
        "steps": row_json(steps, all_ranks) if steps is not None else None,
        "start_end_ranges": [row_json(m, all_ranks) for m in start_end],
        "marks": [{"domain": d, "name": n, "per_rank": v} for (d, n), v in marks.items()],
        "stragglers": stragglers,
        "collective_time": in_collectives,
        "messages": msgs.items,
    }


CSV_STATS = ("min_ns", "median_ns", "max_ns", "slowest_rank", "excess_ns", "excess", "mean_per_call_ns")


def write_csv(f, summaries, tree, steps, start_end):
    all_ranks = [s.rank for s in summaries]
    header = ["section", "path", "depth", "ranks_present", "ranks_missing"]
    for basis in ("cpu", "gpu"):
        header += [f"{basis}_{k}" for k in CSV_STATS]
    header.append("gpu_source")
    for basis in ("cpu", "gpu"):
        header += [f"{basis}_total_ns_rank{r}" for r in all_ranks]
    header += [f"count_rank{r}" for r in all_ranks]
    w = csv.writer(f, lineterminator="\n")
    w.writerow(header)
    for m in list(tree) + ([steps] if steps is not None else []) + list(start_end):
        line = [
            m.section,
            m.path,
            m.depth,
            len(m.ranks),
            " ".join(str(r) for r in all_ranks if r not in m.ranks),
        ]
        for basis in ("cpu", "gpu"):
            st = stats_json(m, basis) or {}
            line += ["" if st.get(k) is None else st[k] for k in CSV_STATS]
        line.append(m.gpu_source() or "")
        for basis in ("cpu", "gpu"):
            per_rank = m.per_rank(basis)
            line += [per_rank.get(r, "") for r in all_ranks]
        counts = m.counts("cpu")
        line += [counts.get(r, "") for r in all_ranks]
        w.writerow(line)


# ---------------------------------------------------------------------------------------------
# Merged trace


def alignment(traces, want, msgs):
    """Per-rank shift in ns that puts every rank on the time line of the earliest one, or None.
    Only steady-clock origins can be compared: steady_clock is CLOCK_MONOTONIC, one per host."""
    if not want:
        msgs.note("--no-align: every rank's trace starts at its own enable()")
        return None
    lacking = [t for t in traces if t.clock != "steady" or t.origin_ns is None]
    if lacking:
        t = lacking[0]
        why = (
            "no clock/time_origin_ns (written by an nsightkit older than 0.1.0's multi-rank support)"
            if t.origin_ns is None
            else f"clock {t.clock!r} is not the shared steady clock"
        )
        msgs.note(f"traces not aligned: {t.file} has {why}; every rank's time starts at its own enable()")
        return None
    base = min(t.origin_ns for t in traces)
    shifts = {t.rank: t.origin_ns - base for t in traces}
    if max(shifts.values()) > ALIGN_SUSPICIOUS_NS:
        msgs.warn(
            f"the ranks enabled the report up to {max(shifts.values()) / 1e9:.0f} s apart: steady clocks "
            "are only shared within one host; for ranks on several hosts use --no-align"
        )
    return shifts


def merged_trace_events(traces, shifts):
    """Yields the merged events: per rank a process_name and process_sort_index, then its events with
    pid = rank, ts shifted, and start/end ids made unique across ranks."""
    async_ids = {}
    for t in traces:
        shift = shifts[t.rank] if shifts else 0
        named = False
        for e in t.events:
            if e["ph"] == "M" and e.get("name") == "process_name":
                named = True
        label = f"nsightkit rank {t.rank} (pid {t.pid})" + (
            " [rank assigned by merge]" if t.rank_assigned else ""
        )
        if not named or t.rank_assigned:
            yield {
                "ph": "M",
                "name": "process_name",
                "pid": t.rank,
                "tid": 0,
                "ts": 0,
                "args": {"name": label},
            }
        yield {
            "ph": "M",
            "name": "process_sort_index",
            "pid": t.rank,
            "tid": 0,
            "ts": 0,
            "args": {"sort_index": t.rank},
        }
        for e in t.events:
            if e["ph"] == "M" and (
                e.get("name") == "process_sort_index" or (t.rank_assigned and e.get("name") == "process_name")
            ):
                continue
            e = dict(e)
            e["pid"] = t.rank
            if e["ph"] != "M" and shift:
                # ts is in us with three decimals: shift in integer ns so no rounding error builds up.
                e["ts"] = (round(e["ts"] * 1000) + shift) / 1000
            if e["ph"] in ("b", "e", "n") and "id" in e:
                # Async ids are global in the trace format: rank 0's id 1 and rank 1's id 1 would pair.
                key = (t.rank, str(e["id"]))
                e["id"] = async_ids.setdefault(key, len(async_ids) + 1)
            yield e


def write_trace(f, traces, shifts):
    f.write('{"displayTimeUnit":"ns","traceEvents":[\n')
    first = True
    for e in merged_trace_events(traces, shifts):
        if not first:
            f.write(",\n")
        first = False
        f.write(json.dumps(e, ensure_ascii=False, separators=(",", ":")))
    base = min(t.origin_ns for t in traces) if shifts else None
    other = {
        "producer": PROG,
        "ranks": [t.rank for t in traces],
        "aligned": shifts is not None,
        "clock": "steady" if shifts else None,
        "time_origin_ns": base,
        "sources": [
            {
                "rank": t.rank,
                "file": t.file,
                "pid": t.pid,
                "producer": TRACE_PRODUCER + t.version,
                "time_origin_ns": t.origin_ns,
                "shift_ns": shifts[t.rank] if shifts else None,
                "events_dropped": t.dropped,
                "rank_assigned": t.rank_assigned,
            }
            for t in traces
        ],
    }
    f.write('\n],"otherData":' + json.dumps(other, ensure_ascii=False) + "}\n")


# ---------------------------------------------------------------------------------------------
# Command line


EPILOG = """\
straggler rule:
  On a path holding at least --min-share % of the median run time, rank R is flagged when its
  total exceeds the median of the other ranks' totals by more than --min-excess % AND by more
  than --min-excess-ms ms. With two ranks "the other ranks" is the other rank: the slower one is
  flagged when the gap passes both thresholds (two ranks cannot tell a slow rank from a fast
  one). Paths with a component matching a --collective pattern are not judged (the rank that
  arrives last waits least there); the table's straggler section lists them instead.

examples:
  nsightkit_merge.py out/                                  # table of every rank file in out/
  nsightkit_merge.py --trace-out merged.json --json-out merged-summary.json \\
      out/summary.rank*.json out/trace.rank*.json
  nsightkit_merge.py --gpu --per-rank --sort excess out/
"""


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="nsightkit_merge.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
    )
    ap.add_argument(
        "inputs",
        nargs="+",
        metavar="FILE",
        help="per-rank summary or trace JSON files, directories holding them, or quoted patterns",
    )
    ap.add_argument(
        "--table-out", metavar="PATH", default="-", help="the merged table: a file, or - for stdout (default)"
    )
    ap.add_argument("--json-out", metavar="PATH", help="merged statistics with per-rank numbers as JSON")
    ap.add_argument("--csv-out", metavar="PATH", help="the same as CSV, one row per path, a column per rank")
    ap.add_argument(
        "--trace-out", metavar="PATH", help="one Chrome trace with a process per rank (needs traces)"
    )
    ap.add_argument(
        "--sort",
        choices=("tree", "total", "excess"),
        default="tree",
        help="table order: tree (default; siblings by median total), total (largest median first), "
        "excess (largest relative excess of the slowest rank first)",
    )
    ap.add_argument(
        "--gpu",
        action="store_true",
        help="table and straggler rule on GPU time instead of CPU time: per rank CUPTI's busy time "
        "where its summary has it, else CUDA-event spans (the source column says which)",
    )
    ap.add_argument("--top", type=int, metavar="N", help="only the N paths with the largest median total")
    ap.add_argument("--per-rank", action="store_true", help="add a column with each rank's total")
    ap.add_argument(
        "--min-excess",
        type=float,
        default=10.0,
        metavar="PCT",
        help="straggler: relative excess over the other ranks' median, in %% (default 10)",
    )
    ap.add_argument(
        "--min-excess-ms",
        type=float,
        default=1.0,
        metavar="MS",
        help="straggler: absolute excess in ms (default 1)",
    )
    ap.add_argument(
        "--min-share",
        type=float,
        default=5.0,
        metavar="PCT",
        help="straggler: judge only paths whose median total is at least this %% of the median run "
        "time (default 5)",
    )
    ap.add_argument(
        "--straggler-paths",
        type=int,
        default=8,
        metavar="N",
        help="flagged paths listed per rank (default 8, largest excess first, shown in tree order)",
    )
    ap.add_argument(
        "--collective",
        action="append",
        metavar="GLOB",
        help="a path component pattern that marks a collective (case-insensitive; repeatable; "
        f"replaces the default {' '.join(DEFAULT_COLLECTIVES)})",
    )
    ap.add_argument("--no-collectives", action="store_true", help="judge collectives like any other path")
    ap.add_argument(
        "--assign-ranks",
        action="store_true",
        help="number files without a rank in the order given (one rank per process id) instead "
        "of stopping with an error",
    )
    ap.add_argument(
        "--no-align",
        action="store_true",
        help="do not shift the ranks' traces onto one time line (ranks on several hosts)",
    )
    a = ap.parse_args(argv)
    for name in ("top", "straggler_paths"):
        v = getattr(a, name)
        if v is not None and v < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    for name in ("min_excess", "min_excess_ms", "min_share"):
        v = getattr(a, name)
        if not (v >= 0 and v != float("inf")):
            ap.error(f"--{name.replace('_', '-')} must be a non-negative number")
    return a


def open_output(path):
    try:
        return open(path, "w", encoding="utf-8", newline="")
    except OSError as e:
        raise InputError(f"{path}: cannot write: {e.strerror or e}") from None


def run(argv, stdout, stderr):
    args = parse_args(argv)
    msgs = Messages(stderr)
    summaries, traces = read_inputs(args.inputs, msgs)
    if not summaries and not traces:
        hint = "; a directory is read one level deep" if any(os.path.isdir(a) for a in args.inputs) else ""
        raise InputError(f"no nsightkit summary or trace among the inputs: {' '.join(args.inputs)}{hint}")
    assign_ranks(summaries, traces, args.assign_ranks, msgs)
    check_consistency(summaries, traces, msgs)
    if args.trace_out and not traces:
        raise InputError(
            "--trace-out: no trace among the inputs (write them with NSIGHTKIT_REPORT=trace=PATH)"
        )
    if not summaries and not args.trace_out:
        raise InputError(
            "only traces among the inputs and no --trace-out: nothing to do (the table needs the "
            "summaries, NSIGHTKIT_REPORT=json=PATH)"
        )
    if not summaries and (args.json_out or args.csv_out):
        raise InputError("--json-out/--csv-out need summaries (NSIGHTKIT_REPORT=json=PATH) among the inputs")
    collectives = [] if args.no_collectives else (args.collective or list(DEFAULT_COLLECTIVES))
    th = Thresholds(args.min_excess, args.min_excess_ms, args.min_share, collectives)
    # Aligned first, so that its notes are in the JSON output's messages too.
    shifts = alignment(traces, not args.no_align, msgs) if args.trace_out else None
    wrote = []
    if summaries:
        tree, steps, start_end = merge_rows(summaries)
        if args.gpu and not any(m.per_rank("gpu") for m in tree):
            raise InputError(
                "--gpu: no rank has GPU times (CUPTI's attributed work with the nsightkit::cupti component, "
                "or CUDA-event spans of ranges inside a CurrentStream/GpuRange)"
            )
        text = format_report(summaries, tree, steps, start_end, args, th)
        if args.table_out == "-":
            stdout.write(text)
        else:
            with open_output(args.table_out) as f:
                f.write(text)
            wrote.append(f"{args.table_out} (table)")
        if args.json_out:
            doc = merged_json(summaries, tree, steps, start_end, th, msgs)
            with open_output(args.json_out) as f:
                json.dump(doc, f, indent=1, ensure_ascii=False)
                f.write("\n")
            wrote.append(f"{args.json_out} (merged summary)")
        if args.csv_out:
            with open_output(args.csv_out) as f:
                write_csv(f, summaries, tree, steps, start_end)
            wrote.append(f"{args.csv_out} (CSV)")
    elif traces:
        msgs.note("no summaries among the inputs: no table (NSIGHTKIT_REPORT=json=PATH writes them)")
    if args.trace_out:
        with open_output(args.trace_out) as f:
            write_trace(f, traces, shifts)
        wrote.append(
            f"{args.trace_out} (trace of rank(s) {', '.join(str(t.rank) for t in traces)}"
            + (", aligned)" if shifts is not None else ", not aligned)")
        )
    if wrote:
        print(f"{PROG}: wrote " + ", ".join(wrote), file=stderr)
    return 0


def main(argv=None):
    try:
        return run(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr)
    except InputError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # `... | head`: the reader went away; not an error worth a message.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug here must still end in one line, not a traceback
        print(
            f"{PROG}: internal error: {type(e).__name__}: {e} (please report it with the input files)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
