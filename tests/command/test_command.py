#!/usr/bin/env python3
"""Tests of the nsightkit command's subcommands on saved reports: stats, diff, merge, html.

  test_command.py --command nsightkit --fixtures command_fixtures --demo report_demo
                  [--example resnet_training] --dir DIR [unittest args]

command_fixtures writes crafted inputs and what the library makes of them in process (the
program's table and page, the MPI component's merge of four ranks); the command must give the
same bytes from the files. The other inputs are generated here with known numbers, and real
reports come from report_demo (and resnet_training, when given). Every bad input must give exit
status 2 and one line naming the problem.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

ARGS = {}
MS = 1_000_000


def run(*args, rc=0, env=None, cwd=None):
    p = subprocess.run([ARGS["command"]] + [str(a) for a in args], capture_output=True, text=True,
                       env=env, cwd=cwd)
    if p.returncode != rc:
        raise AssertionError(f"nsightkit {' '.join(map(str, args))}: exit {p.returncode}, not {rc}\n"
                             f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")
    return p


def read(path, mode="r"):
    with open(path, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
        return f.read()


def table_rows(text):
    """The first table's path cells (indentation kept), from the line after its header."""
    lines = text.split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith("path "))
    out = []
    for ln in lines[start + 1:]:
        if not ln.strip():
            break
        m = re.match(r"^( *)(.*?) {2,}", ln)
        out.append(m.group(1) + m.group(2) if m else ln)
    return out


def time_obj(count, total_ns, p50_ns, p95_ns):
    return {"count": count, "total_ns": total_ns, "mean_ns": round(total_ns / count, 1) if count else 0.0,
            "min_ns": p50_ns, "p50_ns": p50_ns, "p95_ns": p95_ns, "max_ns": p95_ns, "exact": True}


def summary(rows, pid=1, steps=None):
    """rows: (path, calls, total_ms, p50_ms, p95_ms[, CUPTI busy ms]) in tree order."""
    out = []
    for path, calls, total, p50, p95, *busy in rows:
        row = {"path": path, "name": path.rsplit("/", 1)[-1], "domain": "nsightkit", "depth": path.count("/")}
        row.update(time_obj(calls, round(total * MS), round(p50 * MS), round(p95 * MS)))
        row["gpu"] = None
        row["gpu_work"] = None
        if busy:
            row["gpu_work"] = {"kernels": calls, "busy_ns": round(busy[0] * MS), "calls_with_work": calls}
        out.append(row)
    return {"format": "nsightkit-report", "version": 1, "nsightkit_version": "0.1.0", "rank": None,
            "pid": pid, "forked_from": None, "run_ns": 2000 * MS, "captured_only": False, "paths": out,
            "threads": [], "steps": time_obj(*(steps or (0, 0, 0, 0))), "step_series": [],
            "start_end_ranges": [], "marks": [], "gpu": None, "advice": [], "advice_missing": []}


class Case(unittest.TestCase):
    def setUp(self):
        self.dir = os.path.join(ARGS["dir"], self.id().rsplit(".", 1)[-1])
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.fx = ARGS["fixtures_dir"]

    def file(self, name, doc):
        p = os.path.join(self.dir, name)
        with open(p, "w", encoding="utf-8") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc, indent=1))
        return p

    def fixture(self, name):
        return os.path.join(self.fx, name)


# ---------------------------------------------------------------------------------------------


class TestStats(Case):
    def test_the_table_is_the_programs_own(self):
        self.assertEqual(run("stats", self.fixture("crafted.json")).stdout, read(self.fixture("crafted.table.txt")))
        self.assertEqual(run("stats", self.fixture("crafted.json"), "--per-thread").stdout,
                         read(self.fixture("crafted.threads.txt")))

    def test_json_round_trip_byte_for_byte(self):
        out = os.path.join(self.dir, "again.json")
        run("stats", self.fixture("crafted.json"), "--json", out)
        self.assertEqual(read(out, "rb"), read(self.fixture("crafted.json"), "rb"))
        self.assertEqual(run("stats", self.fixture("crafted.json"), "--json", "-").stdout,
                         read(self.fixture("crafted.json")))

    def test_real_reports_read_back_whole(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("NSIGHTKIT_") and k not in (
            "RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "NVTX_INJECTION64_PATH")}
        runs = [("demo", [ARGS["demo"]], dict(env, NSIGHTKIT_REPORT="json=s.json,table=t.txt"))]
        if ARGS.get("example"):
            runs.append(("resnet", [ARGS["example"], "--device", "cpu", "--steps", "6", "--warmup", "2",
                                    "--workers", "1", "--report", "table=t.txt,json=s.json"], env))
        for name, cmd, e in runs:
            d = os.path.join(self.dir, name)
            os.makedirs(d)
            p = subprocess.run(cmd, cwd=d, env=e, capture_output=True, text=True, timeout=600)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            if not os.path.exists(os.path.join(d, "s.json")):
                self.assertFalse(os.path.exists(os.path.join(d, "t.txt")))  # a disabled build
                continue
            with self.subTest(name):
                self.assertEqual(run("stats", "s.json", cwd=d).stdout, read(os.path.join(d, "t.txt")))
                run("stats", "s.json", "--json", "again.json", cwd=d)
                self.assertEqual(read(os.path.join(d, "again.json"), "rb"), read(os.path.join(d, "s.json"), "rb"))

    def test_sort_orders_siblings_and_keeps_the_tree(self):
        f = self.fixture("crafted.json")
        tree = ["train", "  forward", '    conv "3x3"', "  backward", "    CCCL@sort", "load \u2014 \u00fcnicode\\tname"]
        self.assertEqual(table_rows(run("stats", f).stdout), tree)
        self.assertEqual(table_rows(run("stats", f, "--sort", "total").stdout), tree)
        # self: backward (400 ms of its own) before forward (200 ms).
        self.assertEqual(table_rows(run("stats", f, "--sort", "self").stdout),
                         ["train", "  backward", "    CCCL@sort", "  forward", '    conv "3x3"', tree[5]])
        # name: alphabetical at every level.
        self.assertEqual(table_rows(run("stats", f, "--sort", "name").stdout),
                         ["load \u2014 \u00fcnicode\\tname", "train", "  backward", "    CCCL@sort", "  forward",
                          '    conv "3x3"'])
        # calls: train (10) before load (7); forward and backward tie at 10 and keep their order.
        self.assertEqual(table_rows(run("stats", f, "--sort", "calls").stdout), tree)
        # gpu: forward (CUPTI busy 600 ms) before backward (CUDA events, 450 ms); load has none.
        self.assertEqual(table_rows(run("stats", f, "--sort", "gpu").stdout), tree)
        for key in ("mean", "p95"):
            self.assertEqual(table_rows(run("stats", f, "--sort", key).stdout), tree)

    def test_filter_keeps_ancestors_so_the_tree_reads(self):
        f = self.fixture("crafted.json")
        p = run("stats", f, "--filter", "conv*")
        self.assertEqual(table_rows(p.stdout), ["train", "  forward", '    conv "3x3"'])
        self.assertIn("(stats: 3 of 6 paths shown (--filter 'conv*'); 2 of them only as ancestors of shown "
                      "paths, so that the tree reads)", p.stdout)
        # A full path pattern ('*' matches '/'); two patterns: either matches.
        p = run("stats", f, "--filter", "train/backward/*", "--filter", "load*")
        self.assertEqual(table_rows(p.stdout), ["train", "  backward", "    CCCL@sort", tree_last()])
        self.assertIn("4 of 6 paths shown", p.stdout)

    def test_depth_and_top(self):
        f = self.fixture("crafted.json")
        self.assertEqual(table_rows(run("stats", f, "--depth", "1").stdout), ["train", tree_last()])
        self.assertEqual(table_rows(run("stats", f, "--depth", "2").stdout),
                         ["train", "  forward", "  backward", tree_last()])
        # The two largest totals: train (1.50 s) and its child forward (900 ms).
        self.assertEqual(table_rows(run("stats", f, "--top", "2").stdout), ["train", "  forward"])
        # The largest self time is conv's (700 ms): shown with its two ancestors.
        p = run("stats", f, "--top", "1", "--sort", "self")
        self.assertEqual(table_rows(p.stdout), ["train", "  forward", '    conv "3x3"'])
        self.assertIn("(--top 1 by self); 2 of them only as ancestors", p.stdout)

    def test_per_thread_rows_are_selected_too(self):
        p = run("stats", self.fixture("crafted.json"), "--per-thread", "--filter", "load*")
        self.assertIn('\nthread 101 "trainer":\n(no ranges)\n', p.stdout)
        self.assertRegex(p.stdout, "\nthread 202 \\(exited\\):\npath +calls .*\nload \u2014 \u00fcnicode\\\\tname +7 ")

    def test_bad_options(self):
        f = self.fixture("crafted.json")
        for args, says in ((["--sort", "fast"], "--sort must be one of total, self, calls, mean, p95, gpu, name"),
                           (["--top", "0"], "--top must be a whole number from 1"),
                           (["--depth", "x"], "--depth must be a whole number"),
                           (["--filter", ""], "--filter needs a pattern"),
                           (["--top"], "--top needs a value"),
                           (["--frobnicate"], "unknown option '--frobnicate'"),
                           (["--per-thread=yes"], "--per-thread takes no value")):
            p = run("stats", f, *args, rc=2)
            self.assertTrue(p.stderr.startswith(f"nsightkit stats: error: {says}"), p.stderr)
            self.assertEqual(p.stdout, "")
        self.assertIn("give one report file", run("stats", rc=2).stderr)
        self.assertIn("--filter GLOB", run("stats", "--help").stdout)


def tree_last():
    return "load \u2014 \u00fcnicode\\tname"


# ---------------------------------------------------------------------------------------------


class TestDiff(Case):
    def pair(self, a_rows, b_rows, **kw):
        return (self.file("a.json", summary(a_rows, pid=1, steps=kw.get("steps_a"))),
                self.file("b.json", summary(b_rows, pid=2, steps=kw.get("steps_b"))))

    A = [("forward", 10, 100, 10, 10.5),            # spread 5 %
         ("forward/encoder", 10, 60, 6, 6.3),        # spread 5 %
         ("forward/decoder", 10, 30, 3, 3.15),       # spread 5 %
         ("forward/steady", 10, 10, 1, 1),           # spread 0
         ("gone", 1, 5, 5, 5)]
    B = [("forward", 10, 130, 13, 13.5),            # +30 %: a regression
         ("forward/encoder", 10, 90, 9, 9.4),       # +50 %
         ("forward/decoder", 10, 30.3, 3.03, 3.18),  # +1 %, inside its spread
         ("forward/steady", 10, 10.1, 1.01, 1.01),  # +1 %, no spread
         ("new", 2, 4, 2, 2)]

    def verdicts(self, text):
        """{name: verdict} of the table's rows ("" where nothing is flagged)."""
        known = ("regression", "improvement", "GPU regression", "GPU improvement", "added", "removed")
        rows = {}
        for ln in text.split("\n"):
            cells = re.split(r"  +", ln.strip())
            if len(cells) < 10 or cells[0] == "path":
                continue
            rows[cells[0]] = cells[-1] if cells[-1] in known or cells[-1].endswith("regression") else ""
        return rows

    def test_a_planted_regression_is_flagged_and_a_change_inside_the_spread_is_not(self):
        a, b = self.pair(self.A, self.B)
        p = run("diff", a, b)
        v = self.verdicts(p.stdout)
        self.assertEqual(v["forward"], "regression")
        self.assertEqual(v["encoder"], "regression")
        self.assertEqual(v["decoder"], "")
        self.assertEqual(v["steady"], "")  # +1 % is below the default threshold of 5 %
        self.assertEqual((v["gone"], v["new"]), ("removed", "added"))
        self.assertRegex(p.stdout, r"\nforward +10 +10 +100 ms +130 ms +10\.0 ms +13\.0 ms +\+30\.0% +5\.0% ")
        self.assertIn("2 regressions (largest: forward/encoder +50.0%), 0 improvements, 1 path added, 1 removed, "
                      "2 unchanged", p.stdout)
        # A threshold of 0.5 %: the spread alone spares decoder; steady, without a spread, is flagged.
        v = self.verdicts(run("diff", a, b, "--threshold", "0.5").stdout)
        self.assertEqual((v["decoder"], v["steady"]), ("", "regression"))

    def test_improvements_json_and_exit_status(self):
        faster = [("forward", 10, 60, 6, 6.3)] + self.A[1:]
        a, b = self.pair(self.A, faster)
        out = os.path.join(self.dir, "d.json")
        p = run("diff", a, b, "--json", out, "--fail-on-regression")  # no regression: exit 0
        self.assertEqual(self.verdicts(p.stdout)["forward"], "improvement")
        doc = json.loads(read(out))
        self.assertEqual((doc["format"], doc["version"], doc["regressions"], doc["improvements"]),
                         ("nsightkit-diff", 1, 0, 1))
        fwd = next(r for r in doc["paths"] if r["path"] == "forward")
        self.assertEqual(fwd["status"], "improvement")
        self.assertAlmostEqual(fwd["cpu"]["change"], -0.4)
        self.assertAlmostEqual(fwd["cpu"]["spread"], 0.05)
        self.assertEqual((fwd["a"]["calls"], fwd["b"]["total_ns"]), (10, 60 * MS))
        a, b = self.pair(self.A, self.B)
        run("diff", a, b)  # regressions, but exit 0 unless asked
        run("diff", a, b, "--fail-on-regression", rc=1)
        doc = json.loads(run("diff", a, b, "--json", "-").stdout)
        self.assertEqual([(r["path"], r["status"]) for r in doc["paths"]],
                         [("forward", "regression"), ("forward/encoder", "regression"),
                          ("forward/decoder", "unchanged"), ("forward/steady", "unchanged"),
                          ("gone", "removed"), ("new", "added")])
        self.assertIsNone(next(r for r in doc["paths"] if r["path"] == "new")["a"])

    def test_gpu_time_and_steps_are_judged_too(self):
        a, b = self.pair([("step", 10, 100, 10, 10.2, 50)], [("step", 10, 100.5, 10.05, 10.2, 80)],
                         steps_a=(10, 1000 * MS, 100 * MS, 101 * MS), steps_b=(10, 1500 * MS, 150 * MS, 151 * MS))
        p = run("diff", a, b)
        self.assertRegex(p.stdout, r"\nstep +10 +10 .* \+60\.0% +GPU regression\n")
        self.assertRegex(p.stdout, r"\ncapture-window steps +10 +10 .* \+50\.0% .* regression\n")
        doc = json.loads(run("diff", a, b, "--json", "-").stdout)
        self.assertAlmostEqual(doc["paths"][0]["gpu"]["change"], 0.6)
        self.assertEqual((doc["steps"]["status"], doc["regressions"]), ("regression", 2))

    def test_changed_shows_flagged_paths_with_their_ancestors(self):
        a, b = self.pair(self.A, self.B)
        rows = table_rows(run("diff", a, b, "--changed").stdout)
        self.assertEqual(rows, ["forward", "  encoder", "gone", "new"])

    def test_bad_input(self):
        a, b = self.pair(self.A, self.B)
        self.assertIn("give two report files (A.json B.json), not 1", run("diff", a, rc=2).stderr)
        self.assertIn("--threshold must be a number >= 0, not '-3'", run("diff", a, b, "--threshold", "-3", rc=2).stderr)
        self.assertIn("a trace (trace=...), not a summary", run("diff", a, self.file("t.json", {
            "traceEvents": [], "otherData": {"producer": "nsightkit 0.1.0"}}), rc=2).stderr)


# ---------------------------------------------------------------------------------------------


class TestMerge(Case):
    def ranks(self):
        return [self.fixture(f"ranks/s.rank{r}.json") for r in range(4)]

    def test_the_same_merge_as_the_mpi_component(self):
        # command_fixtures merged the same snapshots in process, as rank 0 does under MPI.
        self.assertEqual(run("merge", *self.ranks()).stdout, read(self.fixture("ranks.table.txt")))
        self.assertEqual(run("merge", *self.ranks(), "--gpu", "--per-rank", "--sort", "excess").stdout,
                         read(self.fixture("ranks.gpu.txt")))
        out_json, out_csv = os.path.join(self.dir, "m.json"), os.path.join(self.dir, "m.csv")
        p = run("merge", *self.ranks(), "--json", out_json, "--csv", out_csv)
        self.assertEqual(p.stderr, f"nsightkit merge: wrote {out_json} (merged summary), {out_csv} (CSV)\n")
        self.assertEqual(read(out_json, "rb"), read(self.fixture("ranks.json"), "rb"))
        self.assertEqual(read(out_csv, "rb"), read(self.fixture("ranks.csv"), "rb"))

    def test_the_straggler_and_the_collective(self):
        doc = json.loads(run("merge", *self.ranks(), "--json", "-", "-o", os.devnull).stdout)
        cpu = doc["stragglers"]["cpu"]
        self.assertEqual({(f["rank"], f["path"]) for f in cpu["findings"]}, {(2, "forward"), (2, "forward/conv")})
        self.assertEqual(doc["stragglers"]["gpu"]["collectives"], ["backward/allreduce"])


# ---------------------------------------------------------------------------------------------


def page_data(path):
    text = read(path)
    m = re.search(r'<script id="nsk-data" type="application/json">(.*?)</script>', text, re.S)
    return json.loads(m.group(1))


class TestHtml(Case):
    def test_one_run_is_the_programs_own_page(self):
        out = os.path.join(self.dir, "p.html")
        p = run("html", self.fixture("crafted.json"), "-o", out)
        self.assertEqual(read(out, "rb"), read(self.fixture("crafted.html"), "rb"))
        self.assertIn("wrote", p.stderr)

    def test_ranks_and_compare(self):
        r0, r1 = self.fixture("ranks/s.rank0.json"), self.fixture("ranks/s.rank1.json")
        out = os.path.join(self.dir, "ranks.html")
        run("html", r0, r1, "-o", out)
        d = page_data(out)
        self.assertEqual((d["mode"], [r["label"] for r in d["runs"]], d["title"]),
                         ("ranks", ["rank 0", "rank 1"], "nsightkit report: 2 ranks"))
        names = d["paths"]["name"]
        self.assertIn("save checkpoint", names)
        i = names.index("save checkpoint")
        self.assertIsNotNone(d["values"][0][i])
        self.assertIsNone(d["values"][1][i])  # rank 1 has no checkpoint
        out = os.path.join(self.dir, "cmp.html")
        run("html", r1, "--compare", r0, "-o", out, "--labels", "base,new", "--title", "T")
        d = page_data(out)
        self.assertEqual((d["mode"], [r["rank"] for r in d["runs"]], [r["label"] for r in d["runs"]], d["title"]),
                         ("compare", [0, 1], ["base", "new"], "T"))

    def test_a_page_is_written_again_from_its_data(self):
        again = os.path.join(self.dir, "again.html")
        p = run("html", self.fixture("crafted.html"), "-o", again)
        self.assertIn("written again", p.stderr)
        self.assertEqual(page_data(again), page_data(self.fixture("crafted.html")))
        # A page of an older nsightkit, whose notes said its chart library was missing: the note
        # goes, the data stays.
        text = read(self.fixture("crafted.html"))
        data = page_data(self.fixture("crafted.html"))
        data["runs"][0]["notes"].insert(0, "the charts' script library (d3 3.x) was not found "
                                           "when this page was written: none")
        m = re.search(r'(<script id="nsk-data" type="application/json">)(.*?)(</script>)', text, re.S)
        older = self.file("older.html", text[:m.start(2)] + json.dumps(data).replace("<", "\\u003c") +
                          text[m.end(2):])
        run("html", older, "-o", again)
        self.assertEqual(page_data(again), page_data(self.fixture("crafted.html")))
        self.assertNotIn("d3 3.x", read(again))

    def test_bad_input(self):
        f = self.fixture("crafted.json")
        self.assertIn("not a page written by nsightkit (no nsk-data element)",
                      run("html", self.file("x.html", "<html></html>"), rc=2).stderr)
        self.assertIn("--labels names 1 runs, but 2 were given",
                      run("html", f, f, "--labels", "one", rc=2).stderr)


# ---------------------------------------------------------------------------------------------


class TestBadInput(Case):
    """Every subcommand: a bad file or option is exit status 2 and one line naming the problem."""

    def test_every_subcommand(self):
        good = self.fixture("crafted.json")
        text = read(good)
        files = {
            "missing": (os.path.join(self.dir, "missing.json"), "such file or directory"),
            "not JSON": (self.file("text.json", "hello\n"), "text.json: not JSON ("),
            "another format": (self.file("other.json", {"format": "chrome", "version": 1}),
                               "other.json: not an nsightkit"),
            "truncated": (self.file("cut.json", text[: len(text) // 2]), "cut.json: broken JSON ("),
            "empty": (self.file("empty.json", ""), "empty.json: empty file"),
            "wrong version": (self.file("v9.json", text.replace('"version":1', '"version":9', 1)),
                              "v9.json: nsightkit-report version 9 is not one this reader understands"),
        }
        calls = {
            "stats": lambda f: ["stats", f],
            "diff": lambda f: ["diff", good, f],
            "merge": lambda f: ["merge", f],
            "html": lambda f: ["html", f, "-o", os.path.join(self.dir, "x.html")],
        }
        for sub, args_of in calls.items():
            for what, (f, says) in files.items():
                with self.subTest(sub=sub, what=what):
                    p = run(*args_of(f), rc=2)
                    self.assertIn(f"nsightkit {sub}: error: ", p.stderr)
                    self.assertIn(says, p.stderr)
                    self.assertEqual(len(p.stderr.strip().split("\n")), 1, p.stderr)
                    self.assertEqual(p.stdout, "")
            with self.subTest(sub=sub, what="unknown option"):
                p = run(sub, good, "--no-such-option", rc=2)
                self.assertEqual(p.stderr, f"nsightkit {sub}: error: unknown option '--no-such-option' "
                                           f"(nsightkit {sub} --help says more)\n")
            with self.subTest(sub=sub, what="help"):
                p = run(sub, "--help")
                self.assertTrue(p.stdout.startswith(f"usage: nsightkit {sub} "), p.stdout[:100])
        self.assertIn("stats", run("--help").stdout)


def main():
    argv = sys.argv[1:]
    rest = []
    while argv:
        a = argv.pop(0)
        if a in ("--command", "--fixtures", "--demo", "--example", "--dir"):
            ARGS[a[2:]] = os.path.abspath(argv.pop(0))
        else:
            rest.append(a)
    for need in ("command", "fixtures", "demo", "dir"):
        if need not in ARGS:
            print(f"test_command.py: --{need} is needed", file=sys.stderr)
            return 2
    shutil.rmtree(ARGS["dir"], ignore_errors=True)
    os.makedirs(ARGS["dir"])
    ARGS["fixtures_dir"] = os.path.join(ARGS["dir"], "fixtures")
    subprocess.run([ARGS["fixtures"], ARGS["fixtures_dir"]], check=True)
    return 0 if unittest.main(argv=[sys.argv[0]] + rest, exit=False).result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
