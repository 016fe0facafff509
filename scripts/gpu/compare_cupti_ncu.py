#!/usr/bin/env python3
"""Per-path GPU work from nsightkit's report against Nsight Compute, for one captured step.

  compare_cupti_ncu.py --report cupti.json [--events events.json] --ncu ncu.txt
                       [--trace cupti-trace.json] [--min-us 100] [--tolerance 0.02]
                       [--markdown out.md]

--report  the report's summary JSON of a run with gpu=cupti (gpu_work per path)
--events  optionally the summary JSON of the same run with gpu=events (the CUDA-event span)
--ncu     `ncu --nvtx --csv --metrics gpu__time_duration.sum` output of the same program and
          step (one row per kernel with its thread's NVTX push/pop stack; the text form of
          `--print-nvtx-rename none` without --csv is read too)

Each ncu kernel counts for its innermost nsightkit-domain range path and every enclosing one
(capture-window step ranges "step N" are not path components, as in the report). Per path: the
report's kernel count against ncu's (must be equal), the report's summed kernel time and its GPU
busy time against ncu's summed gpu__time_duration (within the tolerance for paths of at least
--min-us), and the event span where given. Exit status 0 when counts are exact everywhere and
times agree within the tolerance, 1 otherwise, 2 when the inputs cannot be read.

--trace   optionally the trace of the run with gpu=cupti (trace=PATH, .gz or plain): its kernel
          slices are CUPTI's records of the step's kernels. Matched one to one with ncu's kernels
          in launch order (start time; base names checked), they give each of ncu's paths its
          kernels' durations as CUPTI recorded them, so the report is also compared with CUPTI's
          records summed per ncu path: the attribution and the sums, without the per-kernel
          difference between the two measures (scripts/gpu/kernel_durations.sh). The exit status
          stays that of the comparison with ncu.

Kernels a library launches from a thread of its own (NCCL's non-blocking communicator) are
outside every range for ncu; the report counts them for the range that made their stream
current (`delegated_kernels` per path). They are taken out of the report's per-path counts and
kernel times before comparing, a path holding any is not compared on busy time (a union cannot
be taken apart), and their total is compared with ncu's kernels outside any nsightkit range.
"""
import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from nsightkit import report_file  # noqa: E402  (the project's one reader of the summary JSON)

UNITS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
         "second": 1e9, "s": 1e9}
KERNEL_LINE = re.compile(r"^\s*(\S.*?)\s+\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\), Context \d+, Stream (\d+)")
STACK_HEADER = re.compile(r"NVTX Push/Pop Stack for Thread (\d+)")
STACK_ENTRY = re.compile(r"^\s*<(\d+),\s*(.*)>\s*$")
METRIC = re.compile(r"gpu__time_duration\.sum\s+(\S+)\s+([0-9.,]+)")
STEP = re.compile(r"^step \d+$")


def load_rows(path):
    """{path: raw row dict} of a summary's merged rows, read by the project's one reader."""
    try:
        summary = report_file.read_summary(path)
    except report_file.ReportError as e:
        sys.exit(str(e))
    return {p: row.raw for p, row in summary.by_path().items()}


def parse_ncu_text(path):
    """[(stack names in the nsightkit domain, duration ns, kernel name)] of every kernel."""
    kernels = []
    current = None
    domain = None
    for line in Path(path).read_text(errors="replace").splitlines():
        m = KERNEL_LINE.match(line)
        if m and "==PROF==" not in line:
            if current is not None:
                kernels.append(current)
            current = {"name": m.group(1), "stack": {}, "ns": None}
            domain = None
            continue
        if current is None:
            continue
        if STACK_HEADER.search(line):
            domain = None
            continue
        e = STACK_ENTRY.match(line)
        if e:
            current["stack"].setdefault(domain or "<default domain>", []).append(
                (int(e.group(1)), e.group(2).strip()))
            continue
        stripped = line.strip()
        if stripped and not stripped.startswith(("Section", "---", "Metric", "gpu__", "RGB",
                                                 "Category", "Payload", "NVTX")) and \
                current["ns"] is None and not METRIC.search(line) and len(stripped.split()) == 1:
            domain = stripped  # a domain name line inside the NVTX block
            continue
        mm = METRIC.search(line)
        if mm:
            unit = UNITS.get(mm.group(1).lower())
            if unit is None:
                sys.exit(f"{path}: unknown unit {mm.group(1)!r}")
            current["ns"] = float(mm.group(2).replace(",", "")) * unit
    if current is not None:
        kernels.append(current)
    out = []
    for k in kernels:
        if k["ns"] is None:
            continue
        entries = sorted(k["stack"].get("nsightkit", []))
        names = [n for _, n in entries if not STEP.match(n)]
        out.append((names, k["ns"], k["name"]))
    return out


NVTX_ENTRY = re.compile(r'"([^"]*)"')
NVTX_TYPE = re.compile(r":(?:ASCII|REGISTERED|UNICODE|UNKNOWN):")


def nvtx_message(entry):
    """The message of one ncu NVTX entry "[id:]domain:name:...:TYPE:message"."""
    m = None
    for m in NVTX_TYPE.finditer(entry):
        pass
    return entry[m.end():] if m else entry.split(":")[-1]


def parse_ncu_csv(path, start_end=False):
    """[(stack names in the nsightkit domain, duration ns, kernel name)] of every kernel, from
    `ncu --nvtx --csv --metrics gpu__time_duration.sum` output. Each row's thread column holds
    the thread's NVTX push/pop stack, one quoted "domain:name:...:TYPE:message" per level; the
    next column the open start/end ranges ("id:domain:name:...:TYPE:message"), added to each
    tuple as [(id, message)] when `start_end` is true."""
    import csv
    out = []
    with open(path, errors="replace", newline="") as f:
        for row in csv.reader(line for line in f if line.startswith('"')):
            if len(row) < 8 or row[-3] != "gpu__time_duration.sum":
                continue
            unit = UNITS.get(row[-2].lower())
            if unit is None:
                sys.exit(f"{path}: unknown unit {row[-2]!r}")
            ns = float(row[-1].replace(",", "")) * unit
            names = []
            for entry in NVTX_ENTRY.findall(row[4]):
                message = nvtx_message(entry)
                if entry.split(":", 1)[0] == "nsightkit" and not STEP.match(message):
                    names.append(message)
            if start_end:
                ranges = [(e.split(":", 1)[0], nvtx_message(e)) for e in NVTX_ENTRY.findall(row[5])]
                out.append((names, ns, row[6], ranges))
            else:
                out.append((names, ns, row[6]))
    return out


def parse_ncu(path):
    """The CSV form when the file holds ncu's CSV rows, else the text form."""
    with open(path, errors="replace") as f:
        csv_form = any(line.startswith('"') and '"gpu__time_duration.sum"' in line for line in f)
    return parse_ncu_csv(path) if csv_form else parse_ncu_text(path)


def base_name(kernel):
    """A kernel's identifier without return type, scope, template arguments or parameters, the
    same for ncu's and the C++ runtime's demangled spellings ("void ns::<unnamed>::f<0, 1>(int *)"
    and "void ns::(anonymous namespace)::f<0, true>(int*)" are both "f")."""
    depth, out = 0, []
    for ch in kernel.replace("(anonymous namespace)", "<unnamed>"):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0 and ch == "(":
            break  # the parameter list
        elif depth == 0:
            out.append(ch)
    words = "".join(out).split("::")[-1].split()
    return words[-1] if words else kernel


def trace_kernels(path):
    """[(start us, duration us, name)] of the trace's GPU kernel slices (not copies or memsets),
    in start order."""
    import gzip
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    # nsightkit's schema puts copies and memsets under "nsightkit gpu" too ("Memcpy HtoD",
    # "Memset"; lower case in older traces); Kineto's (trace-schema=kineto) has kernels alone in
    # "kernel".
    out = [(e["ts"], e["dur"], e["name"]) for e in events
           if e.get("ph") == "X" and (e.get("cat") == "kernel" or (
               e.get("cat") == "nsightkit gpu"
               and not e["name"].startswith(("memcpy", "memset", "Memcpy", "Memset"))))]
    return sorted(out)


def against_records(kernels, trace_path, report, min_us, tolerance):
    """Lines comparing the report's per-path kernel time and busy time with CUPTI's records
    (the trace's kernel slices) summed per ncu path."""
    slices = trace_kernels(trace_path)
    if len(slices) != len(kernels):
        return [f"CUPTI's records (trace): {len(slices)} kernel slices for ncu's {len(kernels)} "
                f"kernels: not compared"]
    mismatched = sum(1 for (_, _, t), (_, _, n) in zip(slices, kernels) if base_name(t) != base_name(n))
    per = {}
    for (ts, dur, _), (names, _, _) in zip(slices, kernels):
        for i in range(1, len(names) + 1):
            per.setdefault("/".join(names[:i]), []).append((ts * 1e3, (ts + dur) * 1e3))
    d_sum, d_busy = [], []
    for p, spans in per.items():
        total = sum(e - b for b, e in spans)
        if total < min_us * 1e3:
            continue
        busy, end = 0.0, float("-inf")
        for b, e in sorted(spans):
            if e > end:
                busy += e - max(b, end)
                end = e
        w = (report.get(p) or {}).get("gpu_work") or {}
        if w.get("delegated_kernels", 0):
            continue
        d_sum.append(abs(w.get("kernel_ns", 0) - total) / total)
        d_busy.append(abs(w.get("busy_ns", 0) - busy) / busy)

    def line(name, d):
        if not d:
            return f"{name}: no path of at least {min_us:g} us"
        within = sum(1 for x in d if x <= tolerance)
        return (f"{name}: {within}/{len(d)} paths >= {min_us:g} us within {100 * tolerance:g}%, "
                f"median |diff| {100 * statistics.median(d):.3f}%, max {100 * max(d):.3f}%")
    return [f"CUPTI's records (trace): {len(slices)} kernel slices matched to ncu's kernels in "
            f"launch order, {len(slices) - mismatched} with the same base name, {mismatched} not",
            line("CUPTI summed kernel time vs CUPTI's records per ncu path", d_sum),
            line("CUPTI busy vs CUPTI's records per ncu path", d_busy)]


def offset_summary(rows, min_us, tolerance):
    """rows: [(report ns, ncu ns, kernels)] per path. A difference that is the same for every
    kernel (ncu's duration of a kernel it profiles against CUPTI's record of it in a run without
    ncu) grows with a path's kernel count; this estimates it (median over paths) and says how
    many paths of at least min_us agree within the tolerance once it is taken out. The raw
    comparison stays the verdict; this line says what the differences are made of."""
    per_kernel = [(r - n) / k for r, n, k in rows if k and n >= min_us * 1e3]
    if not per_kernel:
        return "per-kernel offset: no path to estimate it from"
    c = statistics.median(per_kernel)
    big = [(r, n, k) for r, n, k in rows if k and n >= min_us * 1e3]
    within = sum(1 for r, n, k in big if abs(r - (n + c * k)) <= tolerance * (n + c * k))
    spread = sorted(per_kernel)
    return (f"per-kernel offset (report - ncu, median over paths >= {min_us:g} us): {c / 1e3:+.2f} us "
            f"per kernel (paths range {spread[0] / 1e3:+.2f} .. {spread[-1] / 1e3:+.2f}); with it taken "
            f"out {within}/{len(big)} paths within {100 * tolerance:g}%")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", required=True)
    ap.add_argument("--events")
    ap.add_argument("--ncu", required=True)
    ap.add_argument("--trace")
    ap.add_argument("--min-us", type=float, default=100.0)
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("--markdown")
    a = ap.parse_args()
    report = load_rows(a.report)
    events = load_rows(a.events) if a.events else {}
    kernels = parse_ncu(a.ncu)
    if not kernels:
        print(f"{a.ncu}: no kernel with a gpu__time_duration.sum found", file=sys.stderr)
        return 2
    ncu = {}
    outside = 0
    for names, ns, _ in kernels:
        if not names:
            outside += 1
        for i in range(1, len(names) + 1):
            p = "/".join(names[:i])
            c = ncu.setdefault(p, [0, 0.0])
            c[0] += 1
            c[1] += ns
    lines = [f"ncu: {len(kernels)} kernels, {outside} outside any nsightkit range",
             f"{'path':<48} {'kern rpt':>8} {'kern ncu':>8} {'ncu us':>10} {'sum%':>7} "
             f"{'busy%':>7} {'events%':>8}"]
    count_bad, compared, diffs_sum, diffs_busy, diffs_ev = 0, 0, [], [], []
    offset_rows = []
    for p in sorted(set(ncu) | {k for k, r in report.items() if (r.get("gpu_work") or {}).get("kernels")}):
        n_k, n_ns = ncu.get(p, (0, 0.0))
        w = (report.get(p) or {}).get("gpu_work") or {}
        delegated = w.get("delegated_kernels", 0)
        r_k = w.get("kernels", 0) - delegated
        r_ns = w.get("kernel_ns", 0) - w.get("delegated_kernel_ns", 0)
        compared += 1
        if r_k != n_k:
            count_bad += 1
        big = n_ns >= a.min_us * 1e3
        rel = lambda v: (v - n_ns) / n_ns if n_ns else float("nan")
        d_sum = rel(r_ns)
        d_busy = rel(w.get("busy_ns", 0)) if not delegated else float("nan")
        ev = (events.get(p) or {}).get("gpu") or {}
        d_ev = rel(ev.get("total_ns", 0)) if ev else float("nan")
        if r_k == n_k:
            offset_rows.append((r_ns, n_ns, n_k))
        if big:
            diffs_sum.append(abs(d_sum))
            if not delegated:
                diffs_busy.append(abs(d_busy))
            if ev:
                diffs_ev.append(abs(d_ev))
        fmt = lambda d: f"{100 * d:+6.1f}%" if d == d else "      -"
        flag = "" if r_k == n_k else "  <-- count"
        if delegated:
            flag += f"  (+{delegated} delegated)"
        lines.append(f"{p[:48]:<48} {r_k:>8} {n_k:>8} {n_ns / 1e3:>10.1f} {fmt(d_sum):>7} "
                     f"{fmt(d_busy):>7} {fmt(d_ev):>8}{flag}")

    def summary(name, d):
        if not d:
            return f"{name}: no path of at least {a.min_us:g} us"
        within = sum(1 for x in d if x <= a.tolerance)
        return (f"{name}: {within}/{len(d)} paths >= {a.min_us:g} us within "
                f"{100 * a.tolerance:g}%, median |diff| {100 * statistics.median(d):.2f}%, "
                f"max {100 * max(d):.2f}%")
    delegated_total = sum((r.get("gpu_work") or {}).get("delegated_kernels", 0)
                          for p, r in report.items() if "/" not in p)
    lines += ["", f"kernel counts: {compared - count_bad} of {compared} paths exact, "
              f"{count_bad} differ (delegated kernels taken out of the report's)",
              f"kernels launched by a library's thread: the report gave {delegated_total} to the "
              f"ranges that made their streams current; ncu has {outside} outside any nsightkit "
              f"range ({'equal' if delegated_total == outside else 'differ'})",
              summary("CUPTI summed kernel time vs ncu", diffs_sum),
              summary("CUPTI busy vs ncu", diffs_busy),
              offset_summary(offset_rows, a.min_us, a.tolerance)]
    if events:
        lines.append(summary("events span vs ncu", diffs_ev))
    if a.trace:
        lines += against_records(kernels, a.trace, report, a.min_us, a.tolerance)
    text = "\n".join(lines)
    print(text)
    if a.markdown:
        Path(a.markdown).write_text("```\n" + text + "\n```\n")
    ok = count_bad == 0 and all(x <= a.tolerance for x in diffs_sum)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
