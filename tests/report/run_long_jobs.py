#!/usr/bin/env python3
"""Long jobs, servers and schedulers (docs/long-jobs.md), on real processes.

  run_long_jobs.py --demo report_signals_demo --checker check_trace.py --dir DIR CASE

Runs tests/report/report_signals_demo with NSIGHTKIT_REPORT, sends it signals the way schedulers,
terminals and users do, and checks what it leaves: every output complete and valid (the summary
JSON and CSV and the trace by tests/check_trace.py, the HTML page's data), the exit status or the
signal the program would have had without the report, the program's own handler called. Waits are
polls with a deadline that fails the case; no case sleeps and hopes.

Cases: sigterm, sigint, sigusr1 (the default action after the outputs), handler-before,
handler-after (the program's own handler), second-signal (a second SIGTERM while the outputs are
written ends the process at once), write-in-progress (SIGTERM while the program writes),
trigger-signal, trigger-file (a requested capture, twice), snapshots (a reader polling the files
never sees half of one), sigkill (the streamed trace after SIGKILL, read back with the documented
repair), fork (a forked child's signal acts as before and never reaches the parent's report),
ignored (SIG_IGN stays ignored),
strict (status 2 for a bad value, status 3 for an output not written).
"""
import argparse
import csv
import glob
import gzip
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import zlib

DEADLINE = 60.0  # seconds any wait may take before the case fails


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def clean_env(extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NSIGHTKIT_", "OMPI_COMM_", "PMI_", "SLURM_"))
           and k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "NVTX_INJECTION64_PATH")}
    env.update(extra)
    return env


DEMOS = []  # every demo started: main() kills what is left of them, whatever the case did


class Demo:
    """The demo running, its stdout and stderr lines collected as they come. Each runs in a
    process group of its own (with the children it forks), killed at the end of the case."""

    def __init__(self, demo, spec, args=(), env=None, preexec=None):
        extra = {"NSIGHTKIT_REPORT": spec}
        extra.update(env or {})
        def start():  # the dispositions a job gets from its launcher: SIGINT not ignored
            os.setpgid(0, 0)
            for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2):
                signal.signal(sig, signal.SIG_DFL)
            if preexec:
                preexec()
        self.p = subprocess.Popen([demo, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=clean_env(extra), preexec_fn=start)
        DEMOS.append(self)
        self.out, self.err = [], []
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.readers = [threading.Thread(target=self._read, args=(s, l), daemon=True)
                        for s, l in ((self.p.stdout, self.out), (self.p.stderr, self.err))]
        for r in self.readers:
            r.start()

    def _read(self, stream, lines):
        for raw in stream:
            with self.cond:
                lines.append(raw.decode("utf-8", "replace"))
                self.cond.notify_all()

    def wait_for(self, which, pattern, count=1, timeout=DEADLINE):
        """Waits until `count` lines of stdout or stderr match `pattern`; fails past the deadline."""
        lines = self.out if which == "out" else self.err
        rx = re.compile(pattern)
        end = time.monotonic() + timeout
        with self.cond:
            while sum(1 for l in lines if rx.search(l)) < count:
                left = end - time.monotonic()
                check(left > 0 and self.p.poll() is None or
                      sum(1 for l in lines if rx.search(l)) >= count,
                      f"no {count} line(s) matching {pattern!r} on std{which} "
                      f"(exit {self.p.poll()}):\n{self.text()}")
                self.cond.wait(min(left, 0.2) if left > 0 else 0.2)

    def finish(self, timeout=DEADLINE):
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise Failure(f"the demo did not end within {timeout} s:\n{self.text()}")
        for r in self.readers:
            r.join(timeout)
        check(not re.search(r"(Thread|Address|UndefinedBehavior)Sanitizer|runtime error:",
                            "".join(self.err)), "a sanitizer report:\n" + self.text())
        return rc

    def text(self):
        return "--- stdout\n" + "".join(self.out) + "--- stderr\n" + "".join(self.err)

    def count(self, which, pattern):
        with self.lock:
            return sum(1 for l in (self.out if which == "out" else self.err)
                       if re.search(pattern, l))


def check_html(path):
    text = open(path, encoding="utf-8").read()
    check(text.rstrip().endswith("</html>"), f"{path}: the page does not end with </html>")
    m = re.search(r'<script id="nsk-data" type="application/json">(.*?)</script>', text, re.S)
    check(m is not None, f"{path}: no page data")
    data = json.loads(m.group(1))
    check(data.get("format") == "nsightkit-page", f"{path}: not an nsightkit page")
    return data


def check_outputs(args, d, expect_paths=("work",), trace=True, name="s", table_file=True):
    """Every output in `d` complete and valid."""
    summary, table_csv = os.path.join(d, f"{name}.json"), os.path.join(d, f"{name}.csv")
    cmd = [sys.executable, args.checker]
    if trace:
        tr = glob.glob(os.path.join(d, "t.json*"))
        check(len(tr) == 1, f"one trace expected in {d}: {tr}")
        cmd.append(tr[0])
    cmd += ["--summary", summary, "--csv", table_csv]
    for p in expect_paths:
        cmd += ["--expect-path", p]
    r = subprocess.run(cmd, capture_output=True, text=True)
    check(r.returncode == 0, f"check_trace.py failed:\n{r.stdout}{r.stderr}")
    page = check_html(os.path.join(d, f"{name}.html"))
    check(page["paths"]["name"], "the page has no paths")
    if table_file:
        table = open(os.path.join(d, f"{name}.txt"), encoding="utf-8").read()
        check(table.startswith("nsightkit report (") and table.endswith("\n"), "the table is cut")
    return json.load(open(summary, encoding="utf-8"))


def fresh(d):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def spec_for(d, console=False):
    """Every output: the table on stderr (`console`) or in a file."""
    table = "table" if console else f"table={d}/s.txt"
    return f"{table},json={d}/s.json,csv={d}/s.csv,html={d}/s.html,trace={d}/t.json.gz"


def path_count(summary, path):
    return sum(r["count"] for r in summary["paths"] if r["path"] == path)


# ---- cases -------------------------------------------------------------------------------------

def default_action(args, sig):
    d = fresh(os.path.join(args.dir, f"default_{sig.name}"))
    demo = Demo(args.demo, spec_for(d, console=True), ["--threads", "4"])
    demo.wait_for("out", r"^ready")
    os.kill(demo.p.pid, sig)
    rc = demo.finish()
    check(rc == -sig, f"{sig.name}: the process must end by the signal, got {rc}:\n{demo.text()}")
    check(demo.count("err", rf"wrote .*\(at {sig.name}\)") == 1, demo.text())
    check(demo.count("err", r"^nsightkit report \(pid") == 1, "the table once:\n" + demo.text())
    s = check_outputs(args, d, table_file=False)
    check(len(s["threads"]) >= 4, "every recording thread is in the summary")
    check(path_count(s, "work") > 0, "work was recorded")
    check(any(r["name"] == "request" for r in s["start_end_ranges"]), "start/end ranges")


def sigterm(args):
    default_action(args, signal.SIGTERM)


def sigint(args):
    default_action(args, signal.SIGINT)


def sigusr1(args):
    default_action(args, signal.SIGUSR1)


def own_handler(args, when):
    """The program's own handlers: SIGUSR1 to checkpoint and go on, SIGTERM to stop gracefully."""
    d = fresh(os.path.join(args.dir, f"handler_{when}"))
    demo = Demo(args.demo, spec_for(d, console=True), ["--threads", "3", "--handler", when])
    demo.wait_for("out", r"^ready")
    os.kill(demo.p.pid, signal.SIGUSR1)
    if when == "before":  # the report's handler runs first: the files at the signal, no table
        demo.wait_for("err", r"wrote .*\(at SIGUSR1\)")
        # The run goes on: the streamed trace grows again at once (written in place); the other
        # files are whole whenever they are read.
        check_outputs(args, d, table_file=False, trace=False)
    os.kill(demo.p.pid, signal.SIGTERM)
    rc = demo.finish()
    check(rc == 0, f"the program's graceful exit status: {rc}\n{demo.text()}")
    check(demo.count("out", r"SIGUSR1 handled 1 times") == 1 and
          demo.count("out", r"handler called for signal 15") == 1,
          "the program's own handlers ran, once each:\n" + demo.text())
    check(demo.count("err", r"^nsightkit report \(pid") == 1,
          "the table is printed once, at exit:\n" + demo.text())
    if when == "after":  # installed after the report's: the program's handlers alone, as it asked
        check(demo.count("err", r"\(at SIG") == 0, demo.text())
    s = check_outputs(args, d, table_file=False)
    check(path_count(s, "after signal") == 1, "the files hold the whole run, written at exit")


def handler_before(args):
    own_handler(args, "before")


def handler_after(args):
    own_handler(args, "after")


def second_signal(args):
    """A second SIGTERM while the report writes ends the process at once; whole files only."""
    for attempt in range(8):
        d = fresh(os.path.join(args.dir, f"second_{attempt}"))
        demo = Demo(args.demo, spec_for(d), ["--threads", "2", "--paths", "60000"])
        demo.wait_for("out", r"^ready")
        os.kill(demo.p.pid, signal.SIGTERM)
        end = time.monotonic() + DEADLINE
        while not glob.glob(os.path.join(d, "*.nsightkit-tmp.*")) and demo.p.poll() is None:
            check(time.monotonic() < end, "no write began:\n" + demo.text())
            time.sleep(0.0005)
        if demo.p.poll() is None:
            os.kill(demo.p.pid, signal.SIGTERM)
        rc = demo.finish()
        check(rc == -signal.SIGTERM, f"ended by SIGTERM, got {rc}:\n{demo.text()}")
        if demo.count("err", r"SIGTERM while the outputs are being written: the process ends now"):
            for f in glob.glob(os.path.join(d, "s.*")):  # what is in place is whole
                if f.endswith(".json"):
                    json.load(open(f, encoding="utf-8"))
                elif f.endswith(".html"):
                    check_html(f)
                elif f.endswith(".csv"):
                    rows = list(csv.reader(open(f, encoding="utf-8")))
                    check(rows and rows[0][0] == "scope", f"{f}: no header")
            check(not os.path.exists(os.path.join(d, "s.txt")) or
                  open(os.path.join(d, "s.txt")).read().endswith("\n"), "the table is whole")
            return
    raise Failure("the second SIGTERM never arrived during a write in 8 attempts")


def write_in_progress(args):
    """SIGTERM while the program itself writes (Report::write() in a loop): the report's write
    waits for it, then writes whole files, and the process ends by the signal."""
    d = fresh(os.path.join(args.dir, "write_in_progress"))
    demo = Demo(args.demo, spec_for(d), ["--threads", "2", "--write-loop", "--pace", "100"])
    demo.wait_for("out", r"^ready")
    demo.wait_for("err", r"nsightkit report: wrote", count=3)
    os.kill(demo.p.pid, signal.SIGTERM)
    rc = demo.finish()
    check(rc == -signal.SIGTERM, f"ended by SIGTERM, got {rc}:\n{demo.text()}")
    check(demo.count("err", r"wrote .*\(at SIGTERM\)") == 1, demo.text())
    check_outputs(args, d)


def requested(args, by_file):
    d = fresh(os.path.join(args.dir, "trigger_file" if by_file else "trigger_signal"))
    trigger = os.path.join(d, "go")
    spec = f"window-only,json={d}/s.json,csv={d}/s.csv" + (f",trigger-file={trigger}" if by_file else "")
    demo = Demo(args.demo, spec, ["--threads", "1", "--capture"])
    demo.wait_for("out", r"^ready")
    for n in (1, 2):
        if by_file:
            open(trigger, "w").close()
        else:
            os.kill(demo.p.pid, signal.SIGUSR2)
        demo.wait_for("err", r"capture requested by " + ("trigger file" if by_file else "SIGUSR2"),
                      count=n)
        demo.wait_for("err", r"wrote .*\(the requested capture's steps ended\)", count=n)
        s = json.load(open(os.path.join(d, "s.json"), encoding="utf-8"))
        check(s["steps"]["count"] == 3 * n, f"capture {n}: {s['steps']['count']} captured steps, "
                                            f"expected {3 * n}\n{demo.text()}")
        check(path_count(s, "serve") == 3 * n, "the captured steps' ranges")
        if by_file:
            check(not os.path.exists(trigger), "the trigger file is removed when seen")
    check(demo.p.poll() is None, "the process runs on after a requested capture")
    os.kill(demo.p.pid, signal.SIGTERM)
    check(demo.finish() == -signal.SIGTERM, demo.text())


def trigger_signal(args):
    requested(args, False)


def trigger_file(args):
    requested(args, True)


def snapshots(args):
    """snapshot-every rewrites the files; a reader polling them never sees half a file."""
    d = fresh(os.path.join(args.dir, "snapshots"))
    demo = Demo(args.demo, f"table={d}/s.txt,json={d}/s.json,csv={d}/s.csv,html={d}/s.html,"
                           "snapshot-every=20ms", ["--threads", "2", "--paths", "2000"])
    demo.wait_for("out", r"^ready")
    versions = {name: set() for name in ("s.txt", "s.json", "s.csv", "s.html")}
    reads = 0
    end = time.monotonic() + DEADLINE
    while min(len(v) for v in versions.values()) < 5:
        check(time.monotonic() < end, f"fewer than 5 snapshots seen: "
                                      f"{ {k: len(v) for k, v in versions.items()} }")
        for name in versions:
            try:
                with open(os.path.join(d, name), "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                continue
            reads += 1
            text = data.decode("utf-8")
            if name == "s.json":
                check(json.loads(text)["format"] == "nsightkit-report", "a whole summary")
            elif name == "s.csv":
                rows = list(csv.reader(text.splitlines()))
                check(len(rows) >= 2 and all(len(r) == len(rows[0]) for r in rows),
                      "a whole CSV")
            elif name == "s.html":
                check(text.rstrip().endswith("</html>"), "a whole page")
            else:
                check(text.startswith("nsightkit report (") and text.endswith("\n"), "a whole table")
            versions[name].add(hash(data))
    check(demo.count("err", r"wrote") == 0, "periodic snapshots write silently:\n" + demo.text())
    os.kill(demo.p.pid, signal.SIGINT)
    check(demo.finish() == -signal.SIGINT, demo.text())
    print(f"snapshots: {reads} reads, all whole; versions seen: "
          f"{ {k: len(v) for k, v in versions.items()} }")


def repaired_trace(path):
    """The documented repair of a streamed trace whose process was killed (docs/long-jobs.md):
    its text up to the last whole event, closed with ']}'."""
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":  # gzip members; the last may be cut
        text, at = b"", 0
        while at < len(raw):
            z = zlib.decompressobj(31)
            try:
                text += z.decompress(raw[at:])
            except zlib.error:
                break
            if not z.eof:
                break
            at = len(raw) - len(z.unused_data)
        raw = text
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)  # written whole (the end was there)
    except ValueError:
        pass
    return json.loads(text[:text.rfind(",\n{")] + "]}")


def sigkill(args):
    for suffix in ("json.gz", "json"):
        d = fresh(os.path.join(args.dir, "sigkill_" + suffix.replace(".", "_")))
        path = os.path.join(d, "t." + suffix)
        demo = Demo(args.demo, f"trace={path}", ["--threads", "1"])
        demo.wait_for("out", r"^ready")

        def streamed():  # (ranges, start/end ranges, counter samples) in the file, read as repaired
            try:
                events = repaired_trace(path)["traceEvents"]
            except (OSError, ValueError):
                return (0, 0, 0)
            return (sum(1 for e in events if e.get("ph") == "X" and e.get("name") == "work"),
                    sum(1 for e in events if e.get("ph") == "b"),
                    sum(1 for e in events if e.get("ph") == "C"))
        end = time.monotonic() + DEADLINE
        seen = streamed()
        while min(seen) == 0 or seen[0] < 100:  # a whole piece with each kind of event
            check(time.monotonic() < end, f"the trace was not streamed ({seen}):\n" + demo.text())
            time.sleep(0.05)
            seen = streamed()
        os.kill(demo.p.pid, signal.SIGKILL)
        check(demo.finish() == -signal.SIGKILL, demo.text())
        after = streamed()
        check(all(a >= b for a, b in zip(after, seen)),
              f"{path}: what was streamed before the kill is readable after it: {seen} -> {after}")


def fork(args):
    """A child forked from the recording process starts no thread: its SIGTERM acts as before the
    report (it ends by it, writing nothing), and never reaches the parent's report, which goes on
    and writes its own files at its own SIGTERM."""
    d = fresh(os.path.join(args.dir, "fork"))
    demo = Demo(args.demo, f"json={d}/s.json,csv={d}/s.csv", ["--threads", "1", "--fork"])
    demo.wait_for("out", r"^ready")
    demo.wait_for("out", r"^child \d+ ready")
    child = int(re.search(r"^child (\d+) ready", "".join(demo.out), re.M).group(1))
    os.kill(child, signal.SIGTERM)
    end = time.monotonic() + DEADLINE
    while True:  # the child is a zombie (ended by the signal) until the parent reaps it
        try:
            state = open(f"/proc/{child}/stat").read().split(")")[1].split()[0]
        except FileNotFoundError:
            break
        if state == "Z":
            break
        check(time.monotonic() < end, "the child did not end at its SIGTERM")
        time.sleep(0.01)
    check(not glob.glob(os.path.join(d, f"*.pid{child}.*")), "the child wrote nothing at the signal")
    check(demo.count("err", r"\(at SIGTERM\)") == 0, "no report wrote at the child's signal:\n" +
          demo.text())
    check(demo.p.poll() is None, "the parent runs on")
    os.kill(demo.p.pid, signal.SIGTERM)
    check(demo.finish() == -signal.SIGTERM, demo.text())
    check(demo.count("err", r"wrote .*s\.json .*\(at SIGTERM\)") == 1, demo.text())
    check(demo.count("err", r"\(at SIGTERM\)") == 1, "the parent's write alone:\n" + demo.text())
    s = json.load(open(os.path.join(d, "s.json"), encoding="utf-8"))
    check(path_count(s, "work") > 0 and path_count(s, "in child") == 0, "the parent's own report")


def ignored(args):
    """A signal the process ignores (nohup) stays ignored: the run goes on."""
    d = fresh(os.path.join(args.dir, "ignored"))
    demo = Demo(args.demo, f"json={d}/s.json", ["--threads", "1"],
                preexec=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    demo.wait_for("out", r"^ready")
    demo.wait_for("err", r"SIGHUP is ignored by this process")
    os.kill(demo.p.pid, signal.SIGHUP)
    os.kill(demo.p.pid, signal.SIGTERM)  # signals arrive in order: SIGHUP came first
    check(demo.finish() == -signal.SIGTERM, demo.text())
    check(demo.count("err", r"\(at SIGHUP\)") == 0, demo.text())


def strict(args):
    d = fresh(os.path.join(args.dir, "strict"))
    demo = Demo(args.demo, "json=x.json,tabel,strict", ["--threads", "1"])
    rc = demo.finish()
    check(rc == 2, f"a bad value in strict mode: status 2, got {rc}\n{demo.text()}")
    check(demo.count("err", r"strict mode: NSIGHTKIT_REPORT is not valid") == 1, demo.text())
    demo = Demo(args.demo, "json=x.json,tabel", ["--threads", "1"], {"NSIGHTKIT_REPORT_STRICT": "1"})
    check(demo.finish() == 2, demo.text())
    blocker = os.path.join(d, "file")
    open(blocker, "w").close()
    demo = Demo(args.demo, f"json={blocker}/s.json,strict", ["--threads", "1"])
    check(demo.finish() == 2, "an output that cannot be written: status 2 at once\n" + demo.text())
    check(demo.count("err", r"strict mode: an output cannot be written") == 1, demo.text())
    # Writable when checked, not when written (its directory removed meanwhile): status 3 at exit.
    sub = os.path.join(d, "later")
    os.makedirs(sub)
    demo = Demo(args.demo, f"json={sub}/s.json,strict", ["--threads", "1", "--handler", "before"],
                preexec=None)
    demo.wait_for("out", r"^ready")
    shutil.rmtree(sub)
    open(sub, "w").close()  # now a file where the directory was
    os.kill(demo.p.pid, signal.SIGTERM)
    rc = demo.finish()
    check(rc == 3, f"an output not written where asked: status 3, got {rc}\n{demo.text()}")
    check(demo.count("err", r"strict mode: an output was not written where asked") == 1,
          demo.text())
    for f in glob.glob(f"nsightkit-summary.{demo.p.pid}.json"):
        os.remove(f)  # the fallback copy in the working directory


CASES = {f.__name__.replace("_", "-"): f for f in (
    sigterm, sigint, sigusr1, handler_before, handler_after, second_signal, write_in_progress,
    trigger_signal, trigger_file, snapshots, sigkill, fork, ignored, strict)}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--demo", required=True)
    ap.add_argument("--checker", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    try:
        CASES[args.case](args)
    except Failure as e:
        print(f"FAIL {args.case}: {e}")
        return 1
    finally:  # nothing outlives the case (a process left holding the test's output stalls ctest)
        for demo in DEMOS:
            try:
                os.killpg(demo.p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            demo.p.wait()
    print(f"ok {args.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
