#!/usr/bin/env python3
"""End-to-end checks of the report's HTML page and of its gzip-compressed, size-capped trace.

  check_html.py trace   --demo BIN --dir DIR [--disabled]
  check_html.py cap     --demo BIN --dir DIR
  check_html.py page    --demo BIN --dir DIR --chromium BIN
  check_html.py tool    --demo BIN --dir DIR --chromium BIN --command nsightkit
  check_html.py scale   --demo BIN --dir DIR --chromium BIN [--paths N]

Pages are loaded in headless Chromium (--dump-dom after the page's script ran); a check fails on
any console message, on a script error the page caught, or on a path or number missing from the
DOM. Screenshots are kept in DIR (a CI artefact). Where Chromium is missing the page checks exit
77 (ctest: skipped); the trace checks need nothing but Python.
"""
import argparse
import gzip
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK_TRACE = os.path.join(HERE, "..", "check_trace.py")
SKIP = 77


class Failure(Exception):
    pass


def run_demo(demo, out_dir, spec, *args, env_extra=None, stdout=False):
    env = dict(os.environ)
    env.pop("NVTX_INJECTION64_PATH", None)
    for k in ("RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        env.pop(k, None)
    env["NSIGHTKIT_REPORT"] = spec
    env.update(env_extra or {})
    r = subprocess.run([demo, *args], cwd=out_dir, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise Failure(f"{demo} {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r.stdout if stdout else r.stderr


def fresh(d):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


# ---- the DOM ---------------------------------------------------------------------------------


class Dom(html.parser.HTMLParser):
    """Table rows by data-path (their cells' texts), the status element, all text."""

    def __init__(self):
        super().__init__()
        self.rows, self.status, self.text, self.attrs_by_id = {}, {}, [], {}
        self.elements = []  # (tag, attributes) of every element, in order
        self._row, self._cell = None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        if "id" in a:
            self.attrs_by_id[a["id"]] = a
        if a.get("id") == "nsk-status":
            self.status = a
        if tag == "tr" and "data-path" in a:
            self._row = self.rows.setdefault(a["data-path"], [])
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr":
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        self.text.append(data)


def load_page(chromium, page, fragment="", screenshot=None, size="1400,1600"):
    """(Dom, seconds the dump took): the page after its script ran; no console message allowed."""
    url = "file://" + os.path.abspath(page) + fragment
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-extensions", "--allow-file-access-from-files", f"--window-size={size}",
            "--enable-logging=stderr", "--v=0"]
    start = time.monotonic()
    r = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=300)
    took = time.monotonic() - start
    if r.returncode != 0:
        raise Failure(f"chromium exited {r.returncode} on {page}:\n{r.stderr[-3000:]}")
    console = [l for l in r.stderr.splitlines() if "CONSOLE" in l]
    if console:
        raise Failure(f"{page}: console messages:\n" + "\n".join(console))
    dom = Dom()
    dom.feed(r.stdout)
    if screenshot:
        s = subprocess.run(base + [f"--screenshot={os.path.abspath(screenshot)}", url],
                           capture_output=True, text=True, timeout=300)
        if s.returncode != 0 or not os.path.exists(screenshot):
            raise Failure(f"chromium could not take a screenshot of {page}:\n{s.stderr[-2000:]}")
    st = dom.status
    if st.get("data-errors"):
        raise Failure(f"{page}: script errors: {st['data-errors']}")
    if st.get("data-ready") != "yes":
        raise Failure(f"{page}: the page's script did not finish (status {st})")
    return dom, took


def expect_row(dom, path, cells, page):
    row = dom.rows.get(path)
    if row is None:
        raise Failure(f"{page}: no table row for {path!r}; rows: {sorted(dom.rows)[:20]}")
    for c in cells:
        if c not in row:
            raise Failure(f"{page}: row {path!r} has no cell {c!r}: {row}")


def expect_charts(dom, page, steps=None, ranks=0):
    """The charts the page's own script drew: the icicle's boxes on the canvas, and the step
    chart's line (`steps` points) with its two axes, or `ranks` bars."""
    canvas = dom.attrs_by_id.get("nsk-flame", {})
    if int(canvas.get("data-drawn", "0")) == 0:
        raise Failure(f"{page}: the icicle drew no box: {canvas}")
    if steps is not None:
        lines = [a for t, a in dom.elements if t == "path" and a.get("class") == "line"]
        if len(lines) != 1 or lines[0].get("data-points") != str(steps) or \
                lines[0]["d"].count("L") != steps - 1:
            raise Failure(f"{page}: the step chart should have one line of {steps} points: {lines}")
        axes = [a for t, a in dom.elements if t == "g" and a.get("class") == "axis"]
        ticks = [a for t, a in dom.elements if t == "g" and a.get("class") == "tick"]
        if len(axes) != 2 or len(ticks) < 6:
            raise Failure(f"{page}: the step chart should have two axes with ticks: {len(axes)}, {len(ticks)}")
        if not any(t.endswith(" ms") for t in dom.text) or not any(t.endswith(" s") for t in dom.text):
            raise Failure(f"{page}: the axes should be labelled in s and ms")
    if ranks:
        bars = [a for t, a in dom.elements if t == "rect" and a.get("class") == "bar"]
        if len(bars) != ranks or not all(float(b["width"]) >= 1 for b in bars):
            raise Failure(f"{page}: {ranks} rank bars expected: {bars}")


def page_json(path):
    """The data of a page, parsed."""
    m = re.search(r'<script id="nsk-data" type="application/json">(.*?)</script>',
                  open(path, encoding="utf-8").read(), re.S)
    if m is None:
        raise Failure(f"{path}: no page data")
    return json.loads(m.group(1))


def hidden_javascript(command):
    """`command` run where /usr/share/javascript (Debian's libjs-d3 among it) is hidden, as on a GPU
    node without it: a private mount namespace with an empty directory there. None where that cannot
    be made (no unshare, no right to mount)."""
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs none /usr/share/javascript"],
                           capture_output=True) if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs none /usr/share/javascript"],
                               capture_output=True) if shutil.which("unshare") else None
        if probe is None or probe.returncode != 0:
            return None
        flags = "-rm"
    else:
        flags = "-m"
    return ["unshare", flags, "sh", "-c", 'mount -t tmpfs none /usr/share/javascript && exec "$0" "$@"'] + command


def expect_text(dom, texts, page):
    all_text = "".join(dom.text)
    for t in texts:
        if t not in all_text:
            raise Failure(f"{page}: the page does not say {t!r}")


# ---- the trace -------------------------------------------------------------------------------


def read_gz_trace(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic != b"\x1f\x8b":
        raise Failure(f"{path}: not gzip (starts with {magic!r})")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        text = f.read()
    plain = path[:-3]
    with open(plain, "w", encoding="utf-8") as f:
        f.write(text)
    return json.loads(text), plain, len(text.encode("utf-8"))


def check_trace_file(plain, *extra):
    r = subprocess.run([sys.executable, CHECK_TRACE, plain, *extra], capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure(f"check_trace.py {plain}:\n{r.stdout}{r.stderr}")


def cmd_trace(a):
    d = fresh(a.dir)
    spec = "json=s.json,trace=t.json.gz,html=r.html,table=t.txt"
    run_demo(a.demo, d, spec)
    if a.disabled:
        left = os.listdir(d)
        if left:
            raise Failure(f"a disabled build wrote {left}")
        print("disabled build: nothing written")
        return 0
    doc, plain, size = read_gz_trace(os.path.join(d, "t.json.gz"))
    check_trace_file(plain, "--summary", os.path.join(d, "s.json"), "--expect-path", "forward/encoder")
    ev = doc["traceEvents"]
    counters = [e for e in ev if e.get("ph") == "C" and e.get("name") == "queue depth"]
    if len(counters) != 40 or sorted({e["args"]["value"] for e in counters}) != [0, 1, 2, 3]:
        raise Failure(f"expected 40 samples 0..3 of the counter track 'queue depth', got "
                      f"{[e['args'] for e in counters][:8]} ({len(counters)})")
    fwd = [e for e in ev if e.get("ph") == "X" and e.get("name") == "forward"]
    payloads = sorted(e.get("args", {}).get("payload") for e in fwd)
    if payloads != list(range(40)):
        raise Failure(f"the forward ranges' payloads should be their step numbers 0..39: {payloads}")
    cap = doc["otherData"].get("size_cap", {})
    if cap.get("events_dropped") != 0 or cap.get("max_bytes") != 256 << 20:
        raise Failure(f"otherData.size_cap should say nothing was dropped under the default cap: {cap}")
    summary = json.load(open(os.path.join(d, "s.json")))
    series = summary.get("step_series")
    if not series or len(series) != 40 or [p[1] for p in series] != [1] * 40:
        raise Failure(f"summary step_series should hold the 40 steps one by one: {series}")
    slow = [i for i, p in enumerate(series) if p[2] > 300_000]
    if not set(range(9, 40, 10)) <= set(slow):
        raise Failure(f"steps 9, 19, 29, 39 are the slow ones; series says {slow}")
    print(f"trace: {size} bytes of JSON, {os.path.getsize(os.path.join(d, 't.json.gz'))} gzip-compressed; "
          f"counter track and payloads present; step series of {len(series)} points")
    return 0


def cmd_cap(a):
    d = fresh(a.dir)
    cap = 16 << 20
    n = 1_000_000
    run_demo(a.demo, d, f"trace=t.json.gz,trace-size=16M,trace-events=2000000,table=t.txt", "ranges", str(n))
    doc, plain, size = read_gz_trace(os.path.join(d, "t.json.gz"))
    other = doc["otherData"]["size_cap"]
    if size > cap:
        raise Failure(f"the trace is {size} bytes, over its cap of {cap}")
    if other.get("max_bytes") != cap or not other.get("events_dropped"):
        raise Failure(f"otherData.size_cap should name the cap and the dropped events: {other}")
    ev = doc["traceEvents"]
    ranges = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "nsightkit"]
    kept_after = other["kept_after_us"]
    if any(e["ts"] + e["dur"] <= kept_after for e in ranges):
        raise Failure("an event that ended before the cut was kept")
    notes = [e for e in ev if e.get("ph") == "i" and "older events left out" in e.get("name", "")]
    if len(notes) != 1:
        raise Failure("the trace should carry one instant event at the cut saying what was left out")
    last_end = max(e["ts"] + e["dur"] for e in ranges)
    total = len(ranges) + other["events_dropped"]
    # n path ranges and n/2 steps were recorded; what is kept are the newest.
    if total < n or last_end < kept_after:
        raise Failure(f"{len(ranges)} ranges kept + {other['events_dropped']} dropped < {n} recorded")
    check_trace_file(plain)
    print(f"cap: {n} ranges recorded; trace {size} bytes (cap {cap}), {len(ranges)} ranges kept, "
          f"{other['events_dropped']} older events left out, cut at {kept_after:.0f} us")
    return 0


def gzip_members(path):
    data, n = open(path, "rb").read(), 0
    while data:
        d = zlib.decompressobj(31)
        d.decompress(data)
        if not d.eof:
            raise Failure(f"{path} ends inside a gzip member")
        data, n = d.unused_data, n + 1
    return n


def cmd_stream(a):
    """The trace reaches its file while the run goes on, with no write and no help from the
    program: halfway through, the file already holds events; at the end every range is there
    although the recording limit (trace-events) is a quarter of them."""
    d = fresh(a.dir)
    n = 100_000
    out = run_demo(a.demo, d, "trace=t.json.gz,trace-events=25000,table=t.txt", "stream", str(n),
                   "t.json.gz", stdout=True)
    m = re.search(r"mid-run trace bytes: (-?\d+)", out)
    if not m:
        raise Failure(f"the demo did not say the trace's size halfway: {out!r}")
    mid = int(m.group(1))
    if mid < 10_000:
        raise Failure(f"halfway through the run the trace file holds {mid} bytes: nothing was "
                      f"streamed yet (its header alone is about 100)")
    doc, plain, size = read_gz_trace(os.path.join(d, "t.json.gz"))
    members = gzip_members(os.path.join(d, "t.json.gz"))
    layers = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("name") == "layer"]
    payloads = sorted(e["args"]["payload"] for e in layers)
    if payloads != list(range(n)):
        raise Failure(f"{len(layers)} of {n} ranges in the trace (payloads "
                      f"{payloads[:3]}...{payloads[-3:]}); the recording limit lost some")
    if doc["otherData"]["events_dropped"] != 0 or doc["otherData"]["size_cap"]["events_dropped"]:
        raise Failure(f"events were dropped: {doc['otherData']}")
    check_trace_file(plain)
    print(f"stream: {mid} bytes on disk halfway; at the end {n} of {n} ranges in {members} gzip "
          f"members, {size} bytes of JSON, with trace-events=25000")
    return 0


def need_chromium(a):
    if not a.chromium or not shutil.which(a.chromium):
        print(f"chromium not found ({a.chromium!r}): skipped (scripts/install-deps.sh installs it)")
        sys.exit(SKIP)


def cmd_page(a):
    need_chromium(a)
    d = fresh(a.dir)
    run_demo(a.demo, d, "json=s.json,html=r.html,table=t.txt")
    page = os.path.join(d, "r.html")
    dom, took = load_page(a.chromium, page, screenshot=os.path.join(d, "page.png"))
    if dom.status.get("data-paths") != "4":
        raise Failure(f"{page}: 4 paths expected, the page has {dom.status.get('data-paths')}")
    expect_row(dom, "forward", ["forward", "40"], page)
    expect_row(dom, "forward/encoder", ["encoder", "40"], page)
    expect_row(dom, 'forward/decoder <b>&"quoted"</b>', ['decoder <b>&"quoted"</b>', "40"], page)
    expect_row(dom, "backward", ["40"], page)
    expect_text(dom, ["capture-window steps", "40, mean", "trainer"], page)
    expect_charts(dom, page, steps=40)
    if dom.attrs_by_id["nsk-flame"].get("data-metric") != "total_ns":
        raise Failure(f"{page}: without GPU work the icicle shows CPU time")
    # With GPU busy time measured (here written into the page's data), the picture opens on it.
    text = open(page, encoding="utf-8").read()
    data = page_json(page)
    busy = data["cols"].index("busy_ns")
    for row in data["values"][0]:
        if row:
            row[busy] = row[data["cols"].index("total_ns")] // 2
    gpu_page = os.path.join(d, "gpu.html")
    with open(gpu_page, "w", encoding="utf-8") as f:
        m = re.search(r'(<script id="nsk-data" type="application/json">)(.*?)(</script>)', text, re.S)
        f.write(text[:m.start(2)] + json.dumps(data).replace("<", "\\u003c") + text[m.end(2):])
    dom_gpu, _ = load_page(a.chromium, gpu_page)
    if dom_gpu.attrs_by_id["nsk-flame"].get("data-metric") != "busy_ns":
        raise Failure(f"{gpu_page}: with GPU busy time the icicle should open on it")
    # The filter (here from the address's fragment) keeps matching rows only.
    dom2, _ = load_page(a.chromium, page, fragment="#filter=encoder")
    if sorted(dom2.rows) != ["forward/encoder"] or dom2.status.get("data-shown") != "1":
        raise Failure(f"filter=encoder should leave one row: {sorted(dom2.rows)}")
    # Written where Debian's libjs-d3 is not (a bare GPU node): the same page, its charts drawn.
    command = hidden_javascript([a.demo])
    where = "without /usr/share/javascript"
    if command is None:
        command, where = [a.demo], "(a private mount namespace cannot be made here: written as is)"
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "NVTX_INJECTION64_PATH")}
    env["NSIGHTKIT_REPORT"] = "html=bare.html,table=t2.txt"
    r = subprocess.run(command, cwd=d, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise Failure(f"the demo {where} exited {r.returncode}: {r.stderr}")
    bare = os.path.join(d, "bare.html")
    dom3, _ = load_page(a.chromium, bare, screenshot=os.path.join(d, "bare.png"))
    expect_row(dom3, "forward/encoder", ["encoder", "40"], bare)
    expect_charts(dom3, bare, steps=40)

    def template(path):  # the page without its run's data and title: what a machine could change
        text = open(path, encoding="utf-8").read()
        for rx in (r'(<script id="nsk-data" type="application/json">).*?(</script>)',
                   r"(<title>).*?(</title>)", r'(<h1 id="nsk-title">).*?(</h1>)'):
            text = re.sub(rx, r"\1\2", text, flags=re.S)
        return text
    if template(page) != template(bare):
        raise Failure(f"the page written {where} differs from the one written here")
    print(f"page: paths, numbers, filter and charts in the DOM, no console message ({took:.2f} s to "
          f"load and dump); written {where}: the same page, its charts drawn")
    return 0


def cmd_tool(a):
    """`nsightkit html` on saved summaries: the page of one run equal to the program's own, the
    ranks of a run, two runs compared, a page written again from its data; bad input refused."""
    need_chromium(a)
    d = fresh(a.dir)
    tool = [a.command, "html"]

    def html(*args, rc=0):
        r = subprocess.run(tool + list(args), cwd=d, capture_output=True, text=True)
        if r.returncode != rc:
            raise Failure(f"nsightkit html {' '.join(args)}: exit {r.returncode}, not {rc}: {r.stderr}")
        return r

    for rank in (0, 1):
        run_demo(a.demo, d, "json=s.json,table=t.txt", env_extra={"RANK": str(rank)})
    html("s.rank0.json", "s.rank1.json", "-o", "ranks.html")
    html("s.rank1.json", "--compare", "s.rank0.json", "-o", "compare.html")
    dom, _ = load_page(a.chromium, os.path.join(d, "ranks.html"), screenshot=os.path.join(d, "ranks.png"))
    if dom.status.get("data-runs") != "2":
        raise Failure("the ranks page should hold 2 runs")
    expect_row(dom, "forward/encoder", ["encoder", "80"], "ranks.html")  # 40 calls on each rank
    expect_text(dom, ["Ranks: run time", "rank 0", "rank 1", "least rank", "most rank"], "ranks.html")
    expect_charts(dom, "ranks.html", ranks=2)
    dom, _ = load_page(a.chromium, os.path.join(d, "compare.html"), screenshot=os.path.join(d, "compare.png"))
    expect_text(dom, ["before total", "\u0394 total", "comparing"], "compare.html")
    expect_row(dom, "backward", ["40"], "compare.html")
    if not any(c.endswith("%") and (c.startswith("+") or c.startswith("-")) for c in dom.rows["backward"]):
        raise Failure(f"the compare page should give the change per path in %: {dom.rows['backward']}")
    # One summary: the page the program itself writes, byte for byte (the reader loses nothing the
    # page shows, and the page has one builder).
    run_demo(a.demo, d, "json=one.json,html=one.html,table=t1.txt")
    html("one.json", "-o", "one-again.html")
    if open(os.path.join(d, "one.html"), "rb").read() != open(os.path.join(d, "one-again.html"), "rb").read():
        raise Failure("nsightkit html of the program's summary differs from the page the program wrote")
    # A page written again from the data inside it: the same page, and one made where Debian's
    # libjs-d3 is hidden is the same too (the page reads nothing at any time).
    html("one.html", "-o", "again.html")
    if page_json(os.path.join(d, "one.html")) != page_json(os.path.join(d, "again.html")):
        raise Failure("a page written again from its own data holds other data")
    bare = hidden_javascript([a.command, "html", "one.json", "-o", "bare.html"])
    if bare is not None:
        r = subprocess.run(bare, cwd=d, capture_output=True, text=True)
        if r.returncode != 0 or open(os.path.join(d, "one.html"), "rb").read() != \
                open(os.path.join(d, "bare.html"), "rb").read():
            raise Failure(f"nsightkit html without /usr/share/javascript made another page: {r.stderr}")
    dom, _ = load_page(a.chromium, os.path.join(d, "again.html"))
    expect_row(dom, "forward/encoder", ["encoder", "40"], "again.html")
    expect_charts(dom, "again.html", steps=40)
    # Bad input: a clear message and exit status 2.
    with open(os.path.join(d, "bad.json"), "w") as f:
        f.write('{"format": "nsightkit-report", "version": 1, "rank": null, "pid": 1, "run_ns": 5, '
                '"paths": [{"name": "a", "domain": "", "depth": 1, "count": 1, "total_ns": 1}]}')
    r = html("bad.json", rc=2)
    if "bad.json" not in r.stderr or "depth 1 but no parent" not in r.stderr:
        raise Failure(f"a bad summary should give exit 2 and name the problem: {r.stderr}")
    r = html("--compare", "s.rank0.json", rc=2)
    if "give a summary" not in r.stderr:
        raise Failure(f"--compare without a summary to compare: {r.stderr}")
    r = html("s.rank0.json", "s.rank1.json", "--compare", "one.json", rc=2)
    if "--compare compares one summary with BASE, not 2" not in r.stderr:
        raise Failure(f"--compare with two summaries: {r.stderr}")
    r = html("page-that-is-not-there.html", rc=2)
    if "page-that-is-not-there.html: cannot read" not in r.stderr:
        raise Failure(f"a missing page: {r.stderr}")
    print("tool: ranks, compare and written-again pages checked in the DOM with their charts; one "
          "run's page equals the program's byte for byte, with or without /usr/share/javascript")
    return 0


def cmd_scale(a):
    need_chromium(a)
    d = fresh(a.dir)
    n = a.paths
    run_demo(a.demo, d, f"html=r.html,paths={2 * n},table=t.txt", "paths", str(n))
    page = os.path.join(d, "r.html")
    dom, took = load_page(a.chromium, page)
    if dom.status.get("data-paths") != str(n):
        raise Failure(f"{page}: {n} paths expected, the page has {dom.status.get('data-paths')}")
    if not dom.rows or not all(p.startswith("model/part") for p in dom.rows):
        raise Failure(f"{page}: the first rows are missing: {sorted(dom.rows)[:5]}")
    if len(dom.rows) > 200:
        raise Failure(f"{page}: {len(dom.rows)} rows in the DOM; only the visible ones should be")
    dom2, _ = load_page(a.chromium, page, fragment="#filter=part0/layer7/op3")
    if sorted(dom2.rows) != ["model/part0/layer7/op3"] + [f"model/part0/layer7/op{k}" for k in range(30, 40)]:
        raise Failure(f"{page}: filter part0/layer7/op3 gave {sorted(dom2.rows)}")
    print(f"scale: {n} paths, page {os.path.getsize(page)} bytes; headless Chromium loaded it and "
          f"dumped the DOM in {took:.2f} s; the page was ready {dom.status.get('data-open-ms')} ms after it "
          f"was opened (its script: {dom.status.get('data-ready-ms')} ms)")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["trace", "cap", "stream", "page", "tool", "scale"])
    ap.add_argument("--demo", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--chromium")
    ap.add_argument("--command")
    ap.add_argument("--paths", type=int, default=100_000)
    ap.add_argument("--disabled", action="store_true")
    a = ap.parse_args()
    try:
        return {"trace": cmd_trace, "cap": cmd_cap, "stream": cmd_stream, "page": cmd_page, "tool": cmd_tool,
                "scale": cmd_scale}[a.what](a)
    except Failure as e:
        print(f"FAIL: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
