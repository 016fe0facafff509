#!/usr/bin/env python3
"""Reads nsightkit's report files: the summary JSON and the Chrome trace JSON.

The one Python reader of these files (nsightkit.load() is its read()), for notebooks, scripts and
nsightkit's own checks. Python 3.8 or later, standard library only (pandas for to_pandas() alone),
and importable on its own (no import of the rest of the package), so a checkout's scripts use it
from python/ too. It only reads:
tables, merges, comparisons and pages of saved reports are made by the `nsightkit` command
(nsightkit stats, merge, diff, html; docs/profile.md). It loads a file, checks it, and hands back
plain objects:

  summary = read_summary("s.json")      # "format": "nsightkit-report", version 1
  for row in summary.paths:             # PathRow: path, name, domain, depth, key, count,
      print(row.path, row.total_ns)     #   total_ns, self_ns, ..., gpu (TimeStats or None), gpu_work
  summary.threads, summary.steps, summary.start_end_ranges, summary.marks, summary.gpu
  trace = read_trace("t.json")          # otherData.producer "nsightkit ..." (or "nsightkit merge")
  trace.events, trace.rank, trace.origin_ns, ...
  read("f.json")                        # either, told apart by the content
  read_trace("t.json.gz")               # gzip-compressed files (trace=....json.gz) read the same

A file that is not what it should be raises ReportError, whose text names the file and the
problem ("s.json: paths[3] ('a/b') has depth 1 but no parent before it ..."). Fields this reader
does not know are kept (each object's `raw` dict) and are never an error, so a newer writer's
additions do not break older tools; a missing documented field is an error only where the reader
needs it, and is listed in `missing` otherwise.

With pandas installed, each also becomes a DataFrame (pandas is imported then, never before):

  summary.to_pandas()                   # a row per path: the columns of the report's summary CSV
  summary.to_pandas(threads=True)       # a row per thread and path, with "tid" and "thread"
  trace.to_pandas()                     # a row per trace event, its keys as columns

component(domain, name) is the rule that turns a range's domain and name into one component of a
path as the report prints it: the name alone in nsightkit's own domain ("nsightkit") and in the
default NVTX domain (""), else "domain@name".

As a command, it checks files and prints what each holds:
  python -m nsightkit.report_file FILE...   exit status 0 when every file reads, 2 otherwise
"""

import gzip
import json
import sys
import zlib

SUMMARY_FORMAT = "nsightkit-report"
SUMMARY_VERSIONS = (1,)  # summary versions this reader understands
MERGED_FORMAT = "nsightkit-merged-report"  # `nsightkit merge`'s summary; not read here
TRACE_PRODUCER = "nsightkit "  # otherData.producer of a trace written by the library: "nsightkit 0.1.0"
MERGED_PRODUCER = "nsightkit merge"  # otherData.producer of a merged trace: "nsightkit merge (...)"
DEFAULT_DOMAIN = "nsightkit"
PLAIN_DOMAINS = ("", DEFAULT_DOMAIN)  # domains whose ranges are named without "domain@"

# Documented keys (docs/report.md, "Outputs"); readers need only some, checks may ask for all.
SUMMARY_KEYS = ("nsightkit_version", "rank", "pid", "run_ns", "captured_only", "paths", "threads",
                "steps", "start_end_ranges", "marks", "gpu")
SUMMARY_REQUIRED = ("rank", "pid", "run_ns", "paths")
ROW_KEYS = ("path", "name", "domain", "depth", "count", "total_ns", "self_ns", "mean_ns", "min_ns",
            "p50_ns", "p95_ns", "max_ns", "exact", "gpu")
TIME_KEYS = ("count", "total_ns", "mean_ns", "min_ns", "p50_ns", "p95_ns", "max_ns", "exact")
# The numbers of a row's "gpu_work" (CUPTI) that readers compute with: its GPU busy time per path.
WORK_NUMBERS = ("busy_ns", "calls_with_work")


class ReportError(ValueError):
    """A file that cannot be read as a report file; str() is "FILE: PROBLEM"."""

    def __init__(self, file, problem):
        super().__init__(f"{file}: {problem}")
        self.file = file
        self.problem = problem


def component(domain, name):
    """One path component as the report prints it: `name` in nsightkit's own domain and in the
    default NVTX domain (""), else "domain@name"."""
    return name if domain in PLAIN_DOMAINS else f"{domain}@{name}"


def join_path(key):
    """The printed path of a key, a sequence of (domain, name) components."""
    return "/".join(component(d, n) for d, n in key)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# ---------------------------------------------------------------------------------------------
# Loading


def _reject_constant(name):
    """NaN and Infinity are not JSON; Python's parser would accept them."""
    raise ValueError(f"{name} is not a JSON value")


GZIP_MAGIC = b"\x1f\x8b"


def _read_text(path):
    """A file's text, decompressed first when it is gzip (told by its first bytes, not its name)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except EOFError:
            raise ReportError(path, "gzip stream cut short: did the process die while writing it?") from None
        except (OSError, zlib.error) as e:
            raise ReportError(path, f"broken gzip stream ({e})") from None
    return data.decode("utf-8")


def load_json(path):
    """The parsed JSON document of a file (plain or gzip-compressed); ReportError for a missing,
    empty, cut-short or non-JSON file."""
    try:
        return json.loads(_read_text(path), parse_constant=_reject_constant)
    except ReportError:
        raise
    except OSError as e:
        raise ReportError(path, f"cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ReportError(path, f"not UTF-8 text ({e.reason} at byte {e.start}): not a JSON file") from None
    except json.JSONDecodeError as e:
        where = f"{e.msg}, line {e.lineno} column {e.colno}"
        if not e.doc.strip():
            raise ReportError(path, "empty file (did the process die before writing it?)") from None
        if e.doc.lstrip().startswith(("{", "[")):
            # Starts like JSON but breaks: most often a file cut short by a process that died.
            raise ReportError(path, f"broken JSON ({where}): cut short by a process that died while writing it?") from None
        raise ReportError(path, f"not JSON ({where})") from None
    except ValueError as e:
        raise ReportError(path, f"not JSON ({e})") from None


def kind_of(doc):
    """'summary', 'trace', 'merged-summary', 'merged-trace' (`nsightkit merge`'s outputs), or None
    for any other document."""
    if not isinstance(doc, dict):
        return None
    if doc.get("format") == SUMMARY_FORMAT:
        return "summary"
    if doc.get("format") == MERGED_FORMAT:
        return "merged-summary"
    if isinstance(doc.get("traceEvents"), list):
        other = doc.get("otherData")
        producer = other.get("producer") if isinstance(other, dict) else None
        # Merges older than `nsightkit merge` named themselves otherwise; their otherData has the
        # merged trace's "ranks" and "aligned" too.
        if isinstance(producer, str) and (producer.startswith(MERGED_PRODUCER)
                                          or ("ranks" in other and "aligned" in other)):
            return "merged-trace"
        if isinstance(producer, str) and producer.startswith(TRACE_PRODUCER):
            return "trace"
    return None


# ---------------------------------------------------------------------------------------------
# pandas (optional: imported by to_pandas() only)


def _pandas(what):
    try:
        import pandas
    except ImportError as e:
        raise ImportError(f"nsightkit: {what} needs pandas, which is not installed here: "
                          "pip install pandas", name="pandas") from e
    return pandas


# A summary's frame has the columns of the report's summary CSV (docs/report.md, "Outputs";
# detail/report/output/summary.hpp writes it), so a script reads either file alike, plus each row's name
# and domain. Where a row has no GPU time or no GPU work ("gpu" or "gpu_work" null), its numbers are
# those the CSV writes: zeros, and exact true.
FRAME_TIME = ("count", "total_ns", "mean_ns", "min_ns", "p50_ns", "p95_ns", "max_ns", "exact")
FRAME_WORK = ("kernels", "self_kernels", "kernel_ns", "busy_ns", "self_busy_ns", "span_ns", "idle_ns")
FRAME_COPIES = (("h2d", "h2d"), ("d2h", "d2h"), ("d2d", "d2d"), ("memsets", "memset"))  # JSON key, column
FRAME_COLUMNS = (("path", "name", "domain", "depth") + FRAME_TIME + ("self_ns",)
                 + tuple(f"gpu_{k}" for k in FRAME_TIME) + tuple(f"gpu_{k}" for k in FRAME_WORK)
                 + ("gpu_launch_p50_ns",) + tuple(f"gpu_{c}_bytes" for _, c in FRAME_COPIES)
                 + ("gpu_peak_bytes",))
_NO_TIME = (0, 0, 0.0, 0, 0, 0, 0, True)


def _frame_values(row):
    """One PathRow's values in FRAME_COLUMNS order."""
    work = row.gpu_work or {}
    launch = work.get("launch_latency") or {}
    return ((row.path, row.name, row.domain, row.depth)
            + tuple(getattr(row, k) for k in FRAME_TIME) + (row.self_ns,)
            + (_NO_TIME if row.gpu is None else tuple(getattr(row.gpu, k) for k in FRAME_TIME))
            + tuple(work.get(k, 0) for k in FRAME_WORK) + (launch.get("p50_ns", 0),)
            + tuple((work.get(k) or {}).get("bytes", 0) for k, _ in FRAME_COPIES)
            + (work.get("peak_bytes", 0),))


# ---------------------------------------------------------------------------------------------
# Summary


class TimeStats:
    """A {"count", "total_ns", "mean_ns", "min_ns", "p50_ns", "p95_ns", "max_ns", "exact"} object.
    count and total_ns are always there; the others are None where the file lacks them."""

    __slots__ = TIME_KEYS + ("raw",)

    def __init__(self, raw):
        self.raw = raw
        for k in TIME_KEYS:
            setattr(self, k, raw.get(k))

    def __repr__(self):
        return f"TimeStats(count={self.count}, total_ns={self.total_ns})"


def _time(file, where, obj):
    if not isinstance(obj, dict):
        raise ReportError(file, f"{where} is not an object")
    count, total = obj.get("count"), obj.get("total_ns")
    if not is_int(count) or count < 0 or not is_number(total) or total < 0:
        raise ReportError(file, f"{where} needs a non-negative integer 'count' and a number 'total_ns'")
    for k in ("mean_ns", "min_ns", "p50_ns", "p95_ns", "max_ns"):
        if k in obj and not is_number(obj[k]):
            raise ReportError(file, f"{where}: '{k}' is not a number")
    return TimeStats(obj)


class PathRow:
    """One row of the summary: a range path with its CPU times (the row's own fields), its GPU
    times (`gpu`, None when not timed on the GPU) and its GPU work (`gpu_work`, a dict as written,
    None when none was attributed). `key` is the tuple of (domain, name) components, exact even
    when a name holds '/'; `label` is the last component as printed."""

    __slots__ = ("path", "name", "domain", "depth", "key", "label", "time", "count", "total_ns",
                 "self_ns", "mean_ns", "min_ns", "p50_ns", "p95_ns", "max_ns", "exact", "gpu",
                 "gpu_work", "missing", "raw")

    def __init__(self, raw, key, path, time, gpu):
        self.raw = raw
        self.name, self.domain, self.depth = key[-1][1], key[-1][0], len(key) - 1
        self.key, self.path, self.label = key, path, component(*key[-1])
        self.time = time
        for k in TIME_KEYS:
            setattr(self, k, getattr(time, k))
        self.self_ns = raw.get("self_ns")
        self.gpu = gpu
        self.gpu_work = raw.get("gpu_work")
        self.missing = [k for k in ROW_KEYS if k not in raw]

    def __repr__(self):
        return f"PathRow({self.path!r}, count={self.count}, total_ns={self.total_ns})"


def _rows(file, where, rows):
    """PathRows of a list in tree order (parents first), checked."""
    if not isinstance(rows, list):
        raise ReportError(file, f"'{where}' is not a list")
    out, stack, keys = [], [], set()
    for i, r in enumerate(rows):
        at = f"{where}[{i}]"
        if not isinstance(r, dict):
            raise ReportError(file, f"{at} is not an object")
        name, domain, depth = r.get("name"), r.get("domain", DEFAULT_DOMAIN), r.get("depth")
        if not isinstance(name, str) or not isinstance(domain, str) or not is_int(depth) or depth < 0:
            raise ReportError(file, f"{at} needs a string 'name' and 'domain' and an integer 'depth'")
        if depth > len(stack):
            raise ReportError(
                file,
                f"{at} ({r.get('path')!r}) has depth {depth} but no parent before it (rows must be in tree order)",
            )
        del stack[depth:]
        stack.append((domain, name))
        key = tuple(stack)
        if key in keys:
            raise ReportError(file, f"{at}: path {r.get('path')!r} appears twice")
        keys.add(key)
        time = _time(file, at, r)
        if "self_ns" in r and not is_number(r["self_ns"]):
            raise ReportError(file, f"{at}: 'self_ns' is not a number")
        gpu = r.get("gpu")
        gpu = None if gpu is None else _time(file, f"{at}.gpu", gpu)
        work = r.get("gpu_work")
        if work is not None and not isinstance(work, dict):
            raise ReportError(file, f"{at}.gpu_work is neither an object nor null")
        for k in WORK_NUMBERS:
            if work is not None and k in work and (not is_number(work[k]) or work[k] < 0):
                raise ReportError(file, f"{at}.gpu_work: '{k}' is not a non-negative number")
        path = r.get("path") if isinstance(r.get("path"), str) else join_path(key)
        out.append(PathRow(r, key, path, time, gpu))
    return out


class Thread:
    """One thread's part of the summary: its name, counters and rows (PathRow)."""

    __slots__ = ("tid", "name", "exited", "ranges", "trace_events_dropped", "paths_over_limit",
                 "depth_over_limit", "marks_over_limit", "paths", "raw")

    def __init__(self, raw, paths):
        self.raw = raw
        self.tid = raw["tid"]
        self.name = raw.get("name")
        self.exited = raw.get("exited")
        for k in ("ranges", "trace_events_dropped", "paths_over_limit", "depth_over_limit",
                  "marks_over_limit"):
            setattr(self, k, raw.get(k, 0))
        self.paths = paths

    def __repr__(self):
        return f"Thread(tid={self.tid}, name={self.name!r}, {len(self.paths)} paths)"


class StartEndRange:
    """A start/end range's times: name, domain, label (as printed), time (TimeStats)."""

    __slots__ = ("name", "domain", "label", "time", "raw")

    def __init__(self, raw, name, domain, time):
        self.raw, self.name, self.domain, self.time = raw, name, domain, time
        self.label = component(domain, name)


class Mark:
    """How often a mark was set: name, domain, label (as printed), count."""

    __slots__ = ("name", "domain", "label", "count", "raw")

    def __init__(self, raw, name, domain, count):
        self.raw, self.name, self.domain, self.count = raw, name, domain, count
        self.label = component(domain, name)


class GpuSummary:
    """The summary's "gpu" section: counters of GPU timing and, where a GPU activity source ran,
    its records, devices and streams (lists of dicts as written). Absent counters read as 0."""

    COUNTERS = ("ranges_timed", "ranges_pending", "ranges_skipped", "events_created", "records",
                "records_dropped", "records_unattributed", "records_late", "records_delegated")
    __slots__ = COUNTERS + ("source", "note", "devices", "streams", "error", "raw")

    def __init__(self, raw):
        self.raw = raw
        for k in self.COUNTERS:
            setattr(self, k, raw.get(k, 0))
        self.source = raw.get("source", "")
        self.note = raw.get("note", "")
        self.devices = raw.get("devices", [])
        self.streams = raw.get("streams", [])
        self.error = raw.get("error", "")


class Summary:
    """One process's summary JSON, checked."""

    def __init__(self, file, doc):
        self.file = file
        self.raw = doc
        self.version = doc["version"]
        self.missing = [k for k in SUMMARY_KEYS if k not in doc]
        self.nsightkit_version = str(doc.get("nsightkit_version", ""))
        self.rank = doc["rank"]
        self.pid = doc["pid"]
        self.forked_from = doc.get("forked_from")
        self.run_ns = doc["run_ns"]
        self.captured_only = bool(doc.get("captured_only", False))
        self.paths = []
        self.threads = []
        self.steps = None  # TimeStats (count 0 when no capture-window step ran) or None
        self.start_end_ranges = []
        self.marks = []
        self.gpu = None  # GpuSummary or None

    def by_path(self, rows=None):
        """{printed path: PathRow} of the merged rows (or of `rows`)."""
        return {r.path: r for r in (self.paths if rows is None else rows)}

    def to_pandas(self, threads=False):
        """The rows as a pandas DataFrame, in the file's (tree) order: a row per path of all threads
        merged, or with `threads` a row per thread and path ("tid" and "thread", its name, first).
        The columns are the report's summary CSV's (docs/report.md), with "name" and "domain"
        after "path"; the rest of a row (top kernels, copies' counts, ...) is in its PathRow.
        ImportError, saying `pip install pandas`, where pandas is not installed."""
        pandas = _pandas("Summary.to_pandas()")
        if not threads:
            return pandas.DataFrame.from_records([_frame_values(r) for r in self.paths],
                                                 columns=FRAME_COLUMNS)
        records = [(t.tid, t.name) + _frame_values(r) for t in self.threads for r in t.paths]
        return pandas.DataFrame.from_records(records, columns=("tid", "thread") + FRAME_COLUMNS)

    def __repr__(self):
        return f"Summary({self.file!r}, rank={self.rank}, {len(self.paths)} paths)"


def summary_from(file, doc):
    """A Summary from a parsed document; `file` names it in errors."""
    if not isinstance(doc, dict) or doc.get("format") != SUMMARY_FORMAT:
        raise ReportError(file, f'not an nsightkit summary (no "format": "{SUMMARY_FORMAT}")')
    version = doc.get("version")
    if version not in SUMMARY_VERSIONS:
        raise ReportError(
            file,
            f"{SUMMARY_FORMAT} version {version!r} is not one this reader understands "
            f"({', '.join(map(str, SUMMARY_VERSIONS))}); read it with the tools of the nsightkit that wrote it",
        )
    for key in SUMMARY_REQUIRED:
        if key not in doc:
            raise ReportError(file, f"{SUMMARY_FORMAT} without '{key}'")
    rank = doc["rank"]
    if rank is not None and (not is_int(rank) or rank < 0):
        raise ReportError(file, f"'rank' must be a non-negative integer or null, not {rank!r}")
    if not is_int(doc["pid"]) or doc["pid"] < 0:
        raise ReportError(file, f"'pid' must be a non-negative integer, not {doc['pid']!r}")
    forked = doc.get("forked_from")
    if forked is not None and not is_int(forked):
        raise ReportError(file, f"'forked_from' must be an integer or null, not {forked!r}")
    if not is_number(doc["run_ns"]) or doc["run_ns"] < 0:
        raise ReportError(file, "'run_ns' must be a non-negative number")
    s = Summary(file, doc)
    s.paths = _rows(file, "paths", doc["paths"])
    threads = doc.get("threads") or []
    if not isinstance(threads, list):
        raise ReportError(file, "'threads' is not a list")
    for i, t in enumerate(threads):
        if not isinstance(t, dict) or not is_int(t.get("tid")):
            raise ReportError(file, f"threads[{i}] needs an integer 'tid'")
        s.threads.append(Thread(t, _rows(file, f"threads[{i}].paths", t.get("paths", []))))
    steps = doc.get("steps")
    if steps is not None:
        s.steps = _time(file, "steps", steps)
    ses = doc.get("start_end_ranges") or []
    if not isinstance(ses, list):
        raise ReportError(file, "'start_end_ranges' is not a list")
    for i, se in enumerate(ses):
        if not isinstance(se, dict) or not isinstance(se.get("name"), str):
            raise ReportError(file, f"start_end_ranges[{i}] needs a string 'name'")
        domain = se.get("domain") if isinstance(se.get("domain"), str) else DEFAULT_DOMAIN
        s.start_end_ranges.append(
            StartEndRange(se, se["name"], domain, _time(file, f"start_end_ranges[{i}].time", se.get("time")))
        )
    marks = doc.get("marks") or []
    if not isinstance(marks, list):
        raise ReportError(file, "'marks' is not a list")
    for i, m in enumerate(marks):
        if not isinstance(m, dict) or not isinstance(m.get("name"), str) or not is_int(m.get("count")):
            raise ReportError(file, f"marks[{i}] needs a string 'name' and an integer 'count'")
        domain = m.get("domain") if isinstance(m.get("domain"), str) else DEFAULT_DOMAIN
        s.marks.append(Mark(m, m["name"], domain, m["count"]))
    gpu = doc.get("gpu")
    if gpu is not None:
        if not isinstance(gpu, dict):
            raise ReportError(file, "'gpu' is neither an object nor null")
        for k in GpuSummary.COUNTERS:
            if k in gpu and (not is_int(gpu[k]) or gpu[k] < 0):
                raise ReportError(file, f"gpu.{k} must be a non-negative integer, not {gpu[k]!r}")
        for k in ("source", "note", "error"):
            if k in gpu and not isinstance(gpu[k], str):
                raise ReportError(file, f"gpu.{k} must be a string, not {gpu[k]!r}")
        for k in ("devices", "streams"):
            if k in gpu and (not isinstance(gpu[k], list) or not all(isinstance(x, dict) for x in gpu[k])):
                raise ReportError(file, f"gpu.{k} must be a list of objects")
        s.gpu = GpuSummary(gpu)
    return s


def read_summary(path):
    """The Summary in a file; ReportError when the file is no valid nsightkit summary."""
    return summary_from(path, load_json(path))


# ---------------------------------------------------------------------------------------------
# Trace


class Trace:
    """One Chrome trace written by nsightkit (or merged by `nsightkit merge`, then `merged`): the
    events as written (dicts) and what otherData says of the process."""

    def __init__(self, file, doc):
        self.file = file
        self.raw = doc
        other = doc["otherData"]
        self.other = other
        self.producer = other["producer"]
        self.merged = kind_of(doc) == "merged-trace"
        self.nsightkit_version = "" if self.merged else self.producer[len(TRACE_PRODUCER):]
        self.rank = other.get("rank")
        self.pid = other.get("pid") if is_int(other.get("pid")) else None
        self.forked_from = other.get("forked_from") if is_int(other.get("forked_from")) else None
        self.clock = other.get("clock") if isinstance(other.get("clock"), str) else None
        self.clock_source = other.get("clock_source") if isinstance(other.get("clock_source"), str) else None
        self.origin_ns = other.get("time_origin_ns") if is_int(other.get("time_origin_ns")) else None
        self.events_dropped = other.get("events_dropped") if is_int(other.get("events_dropped")) else 0
        self.events = doc["traceEvents"]

    def names(self, kind):
        """{pid: name} for kind "process_name", {(pid, tid): name} for "thread_name"."""
        out = {}
        for e in self.events:
            if e["ph"] == "M" and e.get("name") == kind and isinstance(e.get("args"), dict):
                out[e.get("pid") if kind == "process_name" else (e.get("pid"), e.get("tid"))] = e["args"].get("name")
        return out

    def to_pandas(self):
        """The events as a pandas DataFrame, one row per event in the file's order, its keys as
        columns ("ph", "name", "ts", "dur", "pid", "tid", "args", ...; NaN where an event lacks
        one). ImportError, saying `pip install pandas`, where pandas is not installed."""
        return _pandas("Trace.to_pandas()").DataFrame.from_records(self.events)

    def __repr__(self):
        return f"Trace({self.file!r}, rank={self.rank}, {len(self.events)} events)"


def trace_from(file, doc):
    """A Trace from a parsed document; `file` names it in errors."""
    kind = kind_of(doc)
    if kind not in ("trace", "merged-trace"):
        raise ReportError(
            file,
            'not an nsightkit trace (expected "traceEvents" and otherData.producer "nsightkit ..." '
            "or \"nsightkit merge ...\")",
        )
    rank = doc["otherData"].get("rank")
    if rank is not None and (not is_int(rank) or rank < 0):
        raise ReportError(file, f"otherData.rank must be a non-negative integer or null, not {rank!r}")
    for i, e in enumerate(doc["traceEvents"]):
        if not isinstance(e, dict) or not isinstance(e.get("ph"), str):
            raise ReportError(file, f"traceEvents[{i}] is not an event object with a 'ph'")
        if e["ph"] != "M" and not is_number(e.get("ts")):
            raise ReportError(file, f"traceEvents[{i}] ({e.get('name')!r}) has no numeric 'ts'")
    return Trace(file, doc)


def read_trace(path):
    """The Trace in a file; ReportError when the file is no valid nsightkit trace."""
    return trace_from(path, load_json(path))


def read(path):
    """A Summary or a Trace, told apart by the file's content."""
    doc = load_json(path)
    kind = kind_of(doc)
    if kind == "summary":
        return summary_from(path, doc)
    if kind in ("trace", "merged-trace"):
        return trace_from(path, doc)
    if kind == "merged-summary":
        raise ReportError(path, "a merged summary (written by nsightkit merge), not one process's report")
    raise ReportError(
        path,
        f'not an nsightkit report file: expected a summary ("format": "{SUMMARY_FORMAT}", from '
        'NSIGHTKIT_REPORT=json=...) or a trace ("traceEvents" with otherData.producer "nsightkit ...", '
        "from trace=...)",
    )


# ---------------------------------------------------------------------------------------------
# Command line


def describe(obj):
    if isinstance(obj, Summary):
        steps = obj.steps.count if obj.steps is not None else 0
        rank = "no rank" if obj.rank is None else f"rank {obj.rank}"
        return (f"summary (nsightkit {obj.nsightkit_version or '?'}, {rank}, pid {obj.pid}): "
                f"{len(obj.paths)} paths, {len(obj.threads)} threads, {steps} steps, "
                f"{len(obj.start_end_ranges)} start/end ranges, {len(obj.marks)} marks, "
                f"run {obj.run_ns / 1e9:.3f} s")
    rank = "no rank" if obj.rank is None else f"rank {obj.rank}"
    what = "merged trace" if obj.merged else f"trace (nsightkit {obj.nsightkit_version or '?'}, {rank})"
    return f"{what}: {len(obj.events)} events, {obj.events_dropped} dropped"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    status = 0
    for path in argv:
        try:
            print(f"{path}: {describe(read(path))}")
        except ReportError as e:
            print(f"nsightkit.report_file: error: {e}", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
