#!/usr/bin/env python3
"""Makes nsightkit's HTML report page from saved summaries (Python 3.8+, standard library only).

The page is the one the report writes with NSIGHTKIT_REPORT=...,html=PAGE (docs/report-html.md):
one self-contained file with an icicle view of the path tree, the sortable and filterable table,
steps over the run and top kernels per module. From files:

  nsightkit_html.py s.json -o report.html              one run
  nsightkit_html.py s.rank0.json s.rank1.json ...      several ranks: a per-rank view, the
                                                       table with each path's least and most rank
  nsightkit_html.py --compare before.json after.json   two runs: the difference per path
  nsightkit_html.py page.html -o full.html             a page written without the chart library,
                                                       completed (its data is inside it)

The chart library is d3 3.x (Debian's libjs-d3), inlined into the page: --d3 FILE, else the file
NSIGHTKIT_REPORT_D3 names, else /usr/share/javascript/d3/d3.min.js. The page's template is the
report's own (include/nsightkit/detail/report/html_page.inc), found beside this tool in a
checkout or an installed prefix, or given with --template.

Summaries are read with nsightkit_report.py (kept beside this tool). Exit status 0 when the page
was written, 2 on bad input (the message names the file and the problem).
"""

import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nsightkit_report  # noqa: E402  (the one reader of the report's files)

PROG = "nsightkit_html"
COLUMNS = ["count", "total_ns", "self_ns", "mean_ns", "p50_ns", "p95_ns", "max_ns", "exact",
           "busy_ns", "self_busy_ns", "idle_ns", "kernels", "kernel_ns", "launch_p50_ns",
           "copy_bytes", "peak_bytes"]
DEBIAN_D3 = "/usr/share/javascript/d3/d3.min.js"
TEMPLATE_REL = os.path.join("include", "nsightkit", "detail", "report", "html_page.inc")


class Bad(Exception):
    """Bad input: the message names the file and the problem."""


def find_template(given):
    if given:
        return given
    here = os.path.dirname(os.path.abspath(__file__))
    for up in (os.path.join(here, ".."), os.path.join(here, "..", "..", "..")):  # checkout, prefix
        p = os.path.normpath(os.path.join(up, TEMPLATE_REL))
        if os.path.isfile(p):
            return p
    raise Bad(f"the page's template {TEMPLATE_REL} was found neither in this checkout nor in the "
              "install prefix of this tool; give it with --template")


def read_template(path):
    """The page's text: the raw string literals of html_page.inc joined (the file is C++)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise Bad(f"{path}: cannot read the template: {e.strerror}")
    text = re.sub(r"^\s*//.*$", "", text, flags=re.M)  # comments outside the literals
    parts = re.findall(r'R"nsk\((.*?)\)nsk"', text, flags=re.S)
    page = "".join(parts)
    for marker in ("@@NSK_TITLE@@", "@@NSK_DATA@@", "@@NSK_D3@@"):
        if marker not in page:
            raise Bad(f"{path}: not the page's template (no {marker})")
    return page


def is_d3_v3(js):
    return 'version:"3.' in js or 'version: "3.' in js


def find_d3(given):
    """(script text, note): the library, or "" and why not."""
    tried = []
    env = os.environ.get("NSIGHTKIT_REPORT_D3")
    for path in [given] if given else [env, DEBIAN_D3]:
        if not path:
            continue
        if path == "none":
            return "", "none asked for"
        try:
            with open(path, encoding="utf-8") as f:
                js = f.read()
        except (OSError, UnicodeDecodeError) as e:
            if given:
                raise Bad(f"{path}: cannot read the chart library: {e}")
            tried.append(f"'{path}' cannot be read")
            continue
        if not is_d3_v3(js):
            if given:
                raise Bad(f"{path}: not d3 version 3 (the page is written for Debian's libjs-d3, d3 3.x)")
            tried.append(f"'{path}' is not d3 version 3")
            continue
        return js, ""
    return "", "; ".join(tried) or "no file to try"


def html_text(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def script_safe(js):
    """A script element ends at '</script' in any case; inside a string or regex '<\\/' is the same."""
    return re.sub(r"</(?=[sS][cC][rR][iI][pP][tT])", r"<\\/", js)


def fill(template, title, data, d3):
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")
    fills = {"@@NSK_TITLE@@": html_text(title), "@@NSK_DATA@@": payload, "@@NSK_D3@@": script_safe(d3)}
    # Markers are found in the template only: text that is filled in is never searched.
    return "".join(fills.get(piece, piece) for piece in re.split(r"(@@NSK_[A-Z0-9]+@@)", template))


# ---------------------------------------------------------------------------------------------
# Data


def row_values(r):
    w = r.gpu_work or {}
    copies = sum((w.get(k) or {}).get("bytes", 0) for k in ("h2d", "d2h", "d2d", "other_copies", "memsets"))
    lat = (w.get("launch_latency") or {}).get("p50_ns", 0) or 0
    return [r.count, r.total_ns, r.self_ns or 0, r.mean_ns or 0, r.p50_ns or 0, r.p95_ns or 0,
            r.max_ns or 0, 1 if r.exact in (True, None) else 0, w.get("busy_ns", 0),
            w.get("self_busy_ns", 0), w.get("idle_ns", 0), w.get("kernels", 0),
            w.get("kernel_ns", 0), lat, copies, w.get("peak_bytes", 0)]


def run_info(s, label):
    st = s.steps
    steps = [0, 0, 0, 0, 0, 0, 1]
    if st is not None and st.count:
        steps = [st.count, st.total_ns, st.mean_ns or 0, st.p50_ns or 0, st.p95_ns or 0,
                 st.max_ns or 0, 1 if st.exact in (True, None) else 0]
    series = s.raw.get("step_series") or []
    if not (isinstance(series, list) and all(isinstance(p, list) and len(p) == 4 for p in series)):
        raise Bad(f"{s.file}: 'step_series' must be a list of [start_ns, steps, total_ns, max_ns]")
    gpu = s.gpu
    notes = []
    if gpu is not None:
        if gpu.note:
            notes.append("GPU: " + gpu.note)
        if gpu.error:
            notes.append("GPU: " + gpu.error)
    advice = []
    for a in s.raw.get("advice") or []:
        if not isinstance(a, dict):
            raise Bad(f"{s.file}: each 'advice' entry must be an object")
        advice.append([str(a.get("rule", "")), str(a.get("severity", "")), int(a.get("cost_ns", 0) or 0),
                       str(a.get("evidence", "")), str(a.get("suggestion", "")),
                       [str(p) for p in a.get("paths") or []]])
    missing = [str(m) for m in s.raw.get("advice_missing") or []]
    over = sum(t.paths_over_limit or 0 for t in s.threads)
    if over:
        notes.append(f'{over} ranges beyond the per-thread path limit are counted under "(other paths)"')
    return {
        "label": label, "rank": s.rank, "pid": s.pid, "run_ns": s.run_ns,
        "gpu_source": gpu.source if gpu is not None else "",
        "steps": steps, "series": series,
        "threads": [[t.tid, t.name or "", t.ranges or 0, 1 if t.exited else 0] for t in s.threads],
        "devices": [[d.get("device", 0), d.get("kernels", 0), d.get("copies", 0), d.get("busy_ns", 0),
                     d.get("span_ns", 0)] for d in (gpu.devices if gpu is not None else [])],
        "notes": notes, "advice": advice, "advice_missing": missing,
    }


def page_data(summaries, mode, labels):
    """The page's JSON (format "nsightkit-page") for one or more summaries: paths are the union of
    all of them, in tree order (a parent before its children, in order of first appearance)."""
    index, keys, parents = {}, [], []
    for s in summaries:
        for r in s.paths:
            for d in range(1, len(r.key) + 1):
                k = r.key[:d]
                if k not in index:
                    index[k] = len(keys)
                    keys.append(k)
                    parents.append(index[k[:-1]] if d > 1 else -1)
    kernels, kernel_index = [], {}
    values, tops = [], []
    for s in summaries:
        rows = [None] * len(keys)
        top = {}
        for r in s.paths:
            i = index[r.key]
            rows[i] = row_values(r)
            tk = (r.gpu_work or {}).get("top_kernels") or []
            if tk:
                entry = []
                for k in tk:
                    name = str(k.get("name", "?"))
                    if name not in kernel_index:
                        kernel_index[name] = len(kernels)
                        kernels.append(name)
                    entry.append([kernel_index[name], k.get("count", 0), k.get("total_ns", 0)])
                top[str(i)] = entry
        values.append(rows)
        tops.append(top)
    return {
        "format": "nsightkit-page", "version": 1, "producer": "nsightkit_html.py",
        "mode": mode,
        "runs": [run_info(s, label) for s, label in zip(summaries, labels)],
        "cols": COLUMNS,
        "paths": {"name": [nsightkit_report.component(*k[-1]) for k in keys], "parent": parents},
        "values": values, "kernels": kernels, "top": tops,
    }


def data_from_page(path):
    """The data of a page nsightkit wrote (to complete one written without the chart library)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise Bad(f"{path}: cannot read it: {e}")
    m = re.search(r'<script id="nsk-data" type="application/json">(.*?)</script>', text, re.S)
    if not m:
        raise Bad(f"{path}: not a page written by nsightkit (no nsk-data element)")
    try:
        data = json.loads(m.group(1))
    except ValueError as e:
        raise Bad(f"{path}: its data is not valid JSON ({e})")
    if not isinstance(data, dict) or data.get("format") != "nsightkit-page" or data.get("version") != 1:
        raise Bad(f"{path}: its data is not an nsightkit page of version 1")
    return data


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("inputs", nargs="+", help="summary JSON files (or one page to complete)")
    ap.add_argument("-o", "--output", default="report.html", help="the page to write (default report.html)")
    ap.add_argument("--compare", action="store_true", help="two summaries: before and after, the difference per path")
    ap.add_argument("--labels", help="comma-separated names of the inputs (default: rank, or file name)")
    ap.add_argument("--title", help="the page's title")
    ap.add_argument("--d3", help="the chart library to inline (d3 3.x; default: NSIGHTKIT_REPORT_D3, else Debian's libjs-d3)")
    ap.add_argument("--template", help="the page's template (html_page.inc; default: found beside this tool)")
    a = ap.parse_args(argv)
    try:
        template = read_template(find_template(a.template))
        d3, why = find_d3(a.d3)
        if len(a.inputs) == 1 and a.inputs[0].endswith((".html", ".htm")):
            data = data_from_page(a.inputs[0])
            title = a.title or data.get("title") or "nsightkit report"
        else:
            summaries = []
            for p in a.inputs:
                try:
                    summaries.append(nsightkit_report.read_summary(p))
                except nsightkit_report.ReportError as e:
                    raise Bad(str(e))
            if a.compare and len(summaries) != 2:
                raise Bad(f"--compare takes two summaries (before, after), not {len(summaries)}")
            if a.labels:
                labels = [x.strip() for x in a.labels.split(",")]
                if len(labels) != len(summaries):
                    raise Bad(f"--labels names {len(labels)} inputs, but {len(summaries)} were given")
            elif a.compare:
                labels = ["before", "after"]
            else:
                labels = [f"rank {s.rank}" if s.rank is not None else os.path.basename(s.file)
                          for s in summaries]
            mode = "compare" if a.compare else "ranks" if len(summaries) > 1 else "single"
            data = page_data(summaries, mode, labels)
            title = a.title or ("nsightkit: " + " vs ".join(labels) if a.compare else
                                f"nsightkit report: {len(summaries)} ranks" if mode == "ranks" else
                                f"nsightkit report ({labels[0]})")
        data["title"] = title
        if not d3:
            print(f"{PROG}: warning: no chart library (d3 3.x) to inline ({why}): the page shows how "
                  "to complete it; install Debian's libjs-d3 or give --d3", file=sys.stderr)
        page = fill(template, title, data, d3)
        tmp = a.output + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(page)
            os.replace(tmp, a.output)
        except OSError as e:
            raise Bad(f"{a.output}: cannot write it: {e.strerror}")
    except Bad as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    print(f"{PROG}: wrote {a.output} ({len(data['paths']['name'])} paths, {len(data['runs'])} "
          f"run{'s' if len(data['runs']) != 1 else ''})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
