#!/usr/bin/env python3
"""Tests of python/nsightkit/report_file.py, the one reader of nsightkit's report files.

  test_report_reader.py [--reader PATH/TO/report_file.py] [unittest args]

Crafted summaries and traces in the format include/nsightkit/report.hpp writes (docs/report.md,
"Outputs"), with the fields added since version 1 first shipped and some a later writer might
add; broken files (wrong format, truncated, empty, NaN, wrong types); the component rule.
"""

import gzip
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
READER = os.path.join(HERE, "..", "..", "python", "nsightkit", "report_file.py")
nkr = None  # the module under test, loaded in main()


def time_obj(count, total_ns):
    mean = total_ns / count if count else 0.0
    return {"count": count, "total_ns": total_ns, "mean_ns": mean, "min_ns": int(mean), "p50_ns": int(mean),
            "p95_ns": int(mean), "max_ns": int(mean), "exact": True}


def row(path, name, depth, count, total_ns, domain="nsightkit", self_ns=None, gpu=None, gpu_work=None):
    r = {"path": path, "name": name, "domain": domain, "depth": depth}
    r.update(time_obj(count, total_ns))
    r["self_ns"] = total_ns if self_ns is None else self_ns
    r["gpu"] = gpu
    r["gpu_work"] = gpu_work
    return r


WORK = {"kernels": 3, "self_kernels": 1, "kernel_ns": 900, "busy_ns": 1000, "self_busy_ns": 400, "span_ns": 1500,
        "idle_ns": 500, "calls_with_work": 2, "streams": 1, "launch_latency": time_obj(3, 30),
        "h2d": {"count": 1, "bytes": 4096, "total_ns": 50, "pageable": 0}, "top_kernels": [
            {"name": "gemm", "count": 2, "total_ns": 800}], "allocations": 0, "allocated_bytes": 0,
        "freed_bytes": 0, "peak_bytes": 0}


def summary_doc():
    """A summary as the current writer makes it, plus one field no writer has yet."""
    rows = [
        row("model", "model", 0, 2, 10_000, self_ns=2_000, gpu=time_obj(2, 8_000), gpu_work=WORK),
        row("model/app@load", "load", 1, 2, 3_000, domain="app"),
        row("model/a/b", "a/b", 1, 2, 5_000),  # a name holding '/': one component
        row("other", "other", 0, 1, 100, domain=""),
    ]
    return {
        "format": "nsightkit-report", "version": 1, "nsightkit_version": "0.2.0", "rank": 1, "pid": 4242,
        "forked_from": 4000, "run_ns": 50_000, "captured_only": False, "paths": rows,
        "threads": [{"tid": 11, "name": "main", "exited": False, "ranges": 7, "trace_events_dropped": 0,
                     "paths_over_limit": 0, "depth_over_limit": 2, "marks_over_limit": 1,
                     "paths": [dict(r) for r in rows]}],
        "steps": time_obj(2, 12_000),
        "start_end_ranges": [{"name": "epoch", "domain": "app", "time": time_obj(1, 40_000)}],
        "marks": [{"name": "checkpoint", "domain": "nsightkit", "count": 3}],
        "gpu": {"ranges_timed": 2, "ranges_pending": 0, "ranges_skipped": 0, "events_created": 4,
                "source": "cupti", "note": "", "records": 10, "records_dropped": 0, "records_unattributed": 1,
                "records_late": 0, "devices": [{"device": 0, "kernels": 3, "copies": 1, "busy_ns": 1000,
                                                "span_ns": 1500}],
                "streams": [{"device": 0, "stream": 7, "kernels": 3, "copies": 1, "busy_ns": 1000}], "error": ""},
        "a_field_from_the_future": {"anything": [1, 2]},
    }


def trace_doc(producer="nsightkit 0.2.0"):
    return {
        "displayTimeUnit": "ns",
        "traceEvents": [
            {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "ts": 0, "args": {"name": "nsightkit rank 1"}},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 11, "ts": 0, "args": {"name": "main"}},
            {"ph": "X", "name": "model", "pid": 1, "tid": 11, "ts": 1.5, "dur": 10.0},
        ],
        "otherData": {"producer": producer, "rank": 1, "pid": 4242, "forked_from": None, "events_dropped": 3,
                      "clock": "steady", "clock_source": "std::chrono::steady_clock", "time_origin_ns": 123456789},
    }


class ReaderTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="nsk_reader_")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, name, content):
        path = os.path.join(self.dir, name)
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(path, mode) as f:
            f.write(content if isinstance(content, (str, bytes)) else json.dumps(content))
        return path

    def error(self, path, contains, reader=None):
        """The reader raises ReportError naming the file and the problem."""
        with self.assertRaises(nkr.ReportError) as cm:
            (reader or nkr.read)(path)
        self.assertTrue(str(cm.exception).startswith(f"{path}: "), str(cm.exception))
        self.assertEqual(cm.exception.file, path)
        self.assertIn(contains, cm.exception.problem)
        return cm.exception


class TestComponentRule(ReaderTest):
    def test_component(self):
        self.assertEqual(nkr.component("nsightkit", "conv1"), "conv1")
        self.assertEqual(nkr.component("", "conv1"), "conv1")
        self.assertEqual(nkr.component("app", "conv1"), "app@conv1")
        self.assertEqual(nkr.component("Nsightkit", "x"), "Nsightkit@x")  # domains are case-sensitive
        self.assertEqual(nkr.component("app", "a/b@c"), "app@a/b@c")  # the name is kept as is
        self.assertEqual(nkr.join_path([("nsightkit", "model"), ("app", "load"), ("", "x")]), "model/app@load/x")
        self.assertEqual(nkr.join_path([]), "")

    def test_path_built_by_the_rule_when_absent(self):
        doc = summary_doc()
        for r in doc["paths"]:
            del r["path"]
        s = nkr.summary_from("s.json", doc)
        self.assertEqual([r.path for r in s.paths], ["model", "model/app@load", "model/a/b", "other"])
        self.assertEqual(s.paths[0].missing, ["path"])


class TestSummary(ReaderTest):
    def test_valid_file(self):
        s = nkr.read(self.write("s.json", summary_doc()))
        self.assertIsInstance(s, nkr.Summary)
        self.assertEqual((s.version, s.nsightkit_version, s.rank, s.pid, s.forked_from), (1, "0.2.0", 1, 4242, 4000))
        self.assertEqual((s.run_ns, s.captured_only, s.missing), (50_000, False, []))
        self.assertEqual([r.path for r in s.paths], ["model", "model/app@load", "model/a/b", "other"])
        model, load, ab, other = s.paths
        self.assertEqual((model.count, model.total_ns, model.self_ns, model.depth), (2, 10_000, 2_000, 0))
        self.assertEqual((model.gpu.count, model.gpu.total_ns), (2, 8_000))
        self.assertEqual(model.gpu_work["top_kernels"][0]["name"], "gemm")
        self.assertEqual(model.missing, [])
        self.assertEqual((load.key, load.label, load.domain, load.name),
                         ((("nsightkit", "model"), ("app", "load")), "app@load", "app", "load"))
        self.assertIsNone(load.gpu)
        self.assertIsNone(load.gpu_work)
        self.assertEqual((ab.key, ab.label), ((("nsightkit", "model"), ("nsightkit", "a/b")), "a/b"))
        self.assertEqual((other.domain, other.label), ("", "other"))
        self.assertIs(s.by_path()["model/a/b"], ab)
        t = s.threads[0]
        self.assertEqual((t.tid, t.name, t.exited, t.ranges), (11, "main", False, 7))
        self.assertEqual((t.depth_over_limit, t.marks_over_limit, t.paths_over_limit), (2, 1, 0))
        self.assertEqual(len(t.paths), 4)
        self.assertEqual((s.steps.count, s.steps.total_ns), (2, 12_000))
        se = s.start_end_ranges[0]
        self.assertEqual((se.label, se.time.count, se.time.total_ns), ("app@epoch", 1, 40_000))
        self.assertEqual((s.marks[0].label, s.marks[0].count), ("checkpoint", 3))
        g = s.gpu
        self.assertEqual((g.ranges_timed, g.source, g.records, g.records_unattributed), (2, "cupti", 10, 1))
        self.assertEqual((g.devices[0]["busy_ns"], g.streams[0]["stream"], g.error), (1000, 7, ""))
        self.assertEqual(s.raw["a_field_from_the_future"], {"anything": [1, 2]})

    def test_older_writer_without_the_new_fields(self):
        doc = summary_doc()
        del doc["forked_from"], doc["a_field_from_the_future"]
        for r in doc["paths"]:
            del r["gpu_work"]
        for k in ("depth_over_limit", "marks_over_limit"):
            del doc["threads"][0][k]
        doc["gpu"] = {"ranges_timed": 0, "ranges_pending": 0, "ranges_skipped": 0, "events_created": 0, "error": ""}
        s = nkr.read_summary(self.write("old.json", doc))
        self.assertEqual((s.forked_from, s.missing), (None, []))
        self.assertEqual([r.missing for r in s.paths], [[]] * 4)  # gpu_work is not a required row key
        self.assertIsNone(s.paths[0].gpu_work)
        self.assertEqual((s.threads[0].depth_over_limit, s.threads[0].marks_over_limit), (0, 0))
        self.assertEqual((s.gpu.records, s.gpu.records_late, s.gpu.source, s.gpu.devices), (0, 0, "", []))

    def test_minimal_summary_lists_what_is_missing(self):
        doc = {"format": "nsightkit-report", "version": 1, "rank": None, "pid": 1, "run_ns": 0,
               "paths": [{"name": "x", "depth": 0, "count": 0, "total_ns": 0}]}
        s = nkr.read_summary(self.write("min.json", doc))
        self.assertEqual(s.missing, ["nsightkit_version", "captured_only", "threads", "steps", "start_end_ranges",
                                     "marks", "gpu"])
        self.assertEqual((s.paths[0].domain, s.paths[0].path, s.steps, s.gpu, s.threads), ("nsightkit", "x", None,
                                                                                           None, []))
        self.assertIn("self_ns", s.paths[0].missing)

    def test_wrong_format(self):
        self.error(self.write("other.json", {"format": "something-else", "version": 1}),
                   "not an nsightkit report file: expected a summary")
        self.error(self.write("other2.json", {"format": "something-else"}), 'not an nsightkit summary (no "format"',
                   reader=nkr.read_summary)
        self.error(self.write("list.json", [1, 2]), "not an nsightkit summary", reader=nkr.read_summary)
        self.error(self.write("v2.json", dict(summary_doc(), version=2)),
                   "nsightkit-report version 2 is not one this reader understands (1)")
        self.error(self.write("trace.json", trace_doc()), "not an nsightkit summary", reader=nkr.read_summary)
        merged = {"format": "nsightkit-merged-report", "version": 1}
        self.error(self.write("merged.json", merged), "a merged summary (written by nsightkit merge)")

    def test_truncated_and_broken_files(self):
        text = json.dumps(summary_doc())
        self.error(self.write("cut.json", text[: len(text) // 2]), "broken JSON (")
        e = self.error(self.write("cut2.json", text[:-1]), "cut short by a process that died while writing it?")
        self.assertIn("line 1 column", e.problem)
        self.error(self.write("empty.json", ""), "empty file (did the process die before writing it?)")
        self.error(self.write("blank.json", "\n  \n"), "empty file")
        self.error(self.write("text.json", "hello\n"), "not JSON (Expecting value, line 1 column 1)")
        self.error(self.write("nan.json", '{"format": "nsightkit-report", "run_ns": NaN}'),
                   "not JSON (NaN is not a JSON value)")
        self.error(self.write("bin.json", b"\xff\xfe\x00x"), "not UTF-8 text")
        self.error(os.path.join(self.dir, "absent.json"), "cannot read: No such file or directory")

    def test_bad_content(self):
        def bad(name, change, contains):
            doc = summary_doc()
            change(doc)
            self.error(self.write(name, doc), contains)

        bad("norank.json", lambda d: d.pop("rank"), "nsightkit-report without 'rank'")
        bad("nopaths.json", lambda d: d.pop("paths"), "nsightkit-report without 'paths'")
        bad("rank.json", lambda d: d.update(rank=-1), "'rank' must be a non-negative integer or null, not -1")
        bad("rankbool.json", lambda d: d.update(rank=True), "'rank' must be a non-negative integer or null")
        bad("pid.json", lambda d: d.update(pid="12"), "'pid' must be a non-negative integer, not '12'")
        bad("fork.json", lambda d: d.update(forked_from="x"), "'forked_from' must be an integer or null")
        bad("run.json", lambda d: d.update(run_ns=-5), "'run_ns' must be a non-negative number")
        bad("paths.json", lambda d: d.update(paths={}), "'paths' is not a list")
        bad("orphan.json", lambda d: d["paths"].pop(0),
            "paths[0] ('model/app@load') has depth 1 but no parent before it (rows must be in tree order)")
        bad("dup.json", lambda d: d["paths"].append(dict(d["paths"][3])), "paths[4]: path 'other' appears twice")
        bad("count.json", lambda d: d["paths"][1].update(count=-1),
            "paths[1] needs a non-negative integer 'count' and a number 'total_ns'")
        bad("name.json", lambda d: d["paths"][1].update(name=None),
            "paths[1] needs a string 'name' and 'domain' and an integer 'depth'")
        bad("p50.json", lambda d: d["paths"][0].update(p50_ns="fast"), "paths[0]: 'p50_ns' is not a number")
        bad("gpu.json", lambda d: d["paths"][0].update(gpu={"count": 1}),
            "paths[0].gpu needs a non-negative integer 'count'")
        bad("work.json", lambda d: d["paths"][0].update(gpu_work=[1]), "paths[0].gpu_work is neither an object nor null")
        # The merge computes with CUPTI's busy time per path: a number that is not one is an error.
        bad("busy.json", lambda d: d["paths"][0].update(gpu_work=dict(WORK, busy_ns="1 ms")),
            "paths[0].gpu_work: 'busy_ns' is not a non-negative number")
        bad("calls.json", lambda d: d["paths"][0].update(gpu_work=dict(WORK, calls_with_work=-2)),
            "paths[0].gpu_work: 'calls_with_work' is not a non-negative number")
        bad("tid.json", lambda d: d["threads"][0].pop("tid"), "threads[0] needs an integer 'tid'")
        bad("trow.json", lambda d: d["threads"][0]["paths"].pop(0), "threads[0].paths[0] ('model/app@load') has depth 1")
        bad("steps.json", lambda d: d.update(steps=[]), "steps is not an object")
        bad("se.json", lambda d: d["start_end_ranges"][0].pop("time"), "start_end_ranges[0].time is not an object")
        bad("mark.json", lambda d: d["marks"][0].update(count="3"), "marks[0] needs a string 'name' and an integer")
        bad("gpuobj.json", lambda d: d.update(gpu=[]), "'gpu' is neither an object nor null")
        bad("records.json", lambda d: d["gpu"].update(records=-1), "gpu.records must be a non-negative integer, not -1")
        bad("source.json", lambda d: d["gpu"].update(source=3), "gpu.source must be a string, not 3")
        bad("devices.json", lambda d: d["gpu"].update(devices=[1]), "gpu.devices must be a list of objects")


class TestTrace(ReaderTest):
    def test_valid_trace(self):
        t = nkr.read(self.write("t.json", trace_doc()))
        self.assertIsInstance(t, nkr.Trace)
        self.assertEqual((t.nsightkit_version, t.rank, t.pid, t.forked_from, t.merged), ("0.2.0", 1, 4242, None, False))
        self.assertEqual((t.clock, t.origin_ns, t.events_dropped), ("steady", 123456789, 3))
        self.assertEqual(len(t.events), 3)
        self.assertEqual(t.names("thread_name"), {(1, 11): "main"})
        self.assertEqual(t.names("process_name"), {1: "nsightkit rank 1"})

    def test_merged_trace(self):
        doc = trace_doc("nsightkit merge (nsightkit 0.1.0)")
        doc["otherData"] = {"producer": "nsightkit merge (nsightkit 0.1.0)", "ranks": [0, 1], "aligned": True}
        t = nkr.read_trace(self.write("m.json", doc))
        self.assertEqual((t.merged, t.rank, t.nsightkit_version), (True, None, ""))
        # A merge older than the command named itself otherwise: its otherData still tells.
        doc["otherData"]["producer"] = "an older merge"
        self.assertEqual(nkr.kind_of(doc), "merged-trace")

    def test_bad_traces(self):
        self.error(self.write("foreign.json", trace_doc("chrome")), "not an nsightkit trace", reader=nkr.read_trace)
        self.error(self.write("foreign2.json", trace_doc("chrome")), "not an nsightkit report file")
        self.error(self.write("summary.json", summary_doc()), "not an nsightkit trace", reader=nkr.read_trace)
        doc = trace_doc()
        doc["traceEvents"].append({"ph": "X", "name": "late", "ts": "soon"})
        self.error(self.write("ts.json", doc), "traceEvents[3] ('late') has no numeric 'ts'")
        doc = trace_doc()
        doc["traceEvents"].append(["not", "an", "event"])
        self.error(self.write("ev.json", doc), "traceEvents[3] is not an event object with a 'ph'")
        doc = trace_doc()
        doc["otherData"]["rank"] = "0"
        self.error(self.write("rank.json", doc), "otherData.rank must be a non-negative integer or null, not '0'")
        text = json.dumps(trace_doc())
        self.error(self.write("cut.json", text[:40]), "cut short by a process", reader=nkr.read_trace)


class TestGzip(ReaderTest):
    """trace=....json.gz (and json=....gz) files are gzip streams: read as the plain ones."""

    def gz(self, name, content):
        data = (content if isinstance(content, str) else json.dumps(content)).encode()
        return self.write(name, gzip.compress(data))

    def test_reads_compressed_files_by_content(self):
        t = nkr.read(self.gz("t.json.gz", trace_doc()))
        self.assertIsInstance(t, nkr.Trace)
        self.assertEqual((t.rank, len(t.events)), (1, 3))
        s = nkr.read_summary(self.gz("s.gz", summary_doc()))
        self.assertEqual([r.path for r in s.paths], ["model", "model/app@load", "model/a/b", "other"])
        # Told by the content, not the name: a plain file named .gz and a gzip file named .json.
        self.assertIsInstance(nkr.read(self.write("plain.json.gz", trace_doc())), nkr.Trace)
        self.assertIsInstance(nkr.read(self.gz("packed.json", trace_doc())), nkr.Trace)

    def test_broken_compressed_files(self):
        data = gzip.compress(json.dumps(trace_doc()).encode())
        self.error(self.write("cut.json.gz", data[: len(data) // 2]),
                   "gzip stream cut short: did the process die while writing it?")
        self.error(self.write("bad.json.gz", data[:10] + b"\x00" * 40 + data[-8:]), "broken gzip stream (")
        # A whole gzip stream whose JSON inside is cut short says so, as for a plain file.
        text = json.dumps(trace_doc())
        self.error(self.gz("cutjson.json.gz", text[:40]), "cut short by a process", reader=nkr.read_trace)
        self.error(self.gz("empty.json.gz", ""), "empty file")


class TestCommand(ReaderTest):
    def run_reader(self, *files):
        return subprocess.run([sys.executable, READER] + list(files), capture_output=True, text=True)

    def test_describes_files_and_names_bad_ones(self):
        s, t = self.write("s.json", summary_doc()), self.write("t.json", trace_doc())
        r = self.run_reader(s, t)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{s}: summary (nsightkit 0.2.0, rank 1, pid 4242): 4 paths, 1 threads, 2 steps", r.stdout)
        self.assertIn(f"{t}: trace (nsightkit 0.2.0, rank 1): 3 events, 3 dropped", r.stdout)
        bad = self.write("bad.json", "{")
        r = self.run_reader(s, bad)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertIn(f"error: {bad}: broken JSON", r.stderr)
        self.assertIn(f"{s}: summary", r.stdout)  # the good file is still described

    def test_help(self):
        r = self.run_reader("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("component(domain, name)", r.stdout)
        self.assertEqual(self.run_reader().returncode, 2)


def main():
    global READER, nkr
    argv = [sys.argv[0]]
    args = iter(sys.argv[1:])
    for a in args:
        if a == "--reader":
            READER = os.path.abspath(next(args))
        else:
            argv.append(a)
    spec = importlib.util.spec_from_file_location("report_file", READER)
    nkr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nkr)
    unittest.main(argv=argv, verbosity=1)


if __name__ == "__main__":
    main()
