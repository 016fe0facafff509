#!/usr/bin/env python3
"""Tests of `nsightkit merge` on crafted per-rank files with known numbers.

  test_merge.py --command PATH/TO/nsightkit [--checker PATH/TO/check_trace.py] [unittest args]
  test_merge.py --write-fixtures DIR      (regenerates tests/merge/fixtures/ddp4)

The per-rank summaries and traces are generated from short descriptions (path, calls, total ms, GPU
ms) in the format include/nsightkit/report.hpp writes (docs/report.md, "Outputs"); every expected
number below is worked out by hand from those descriptions. The command is run as a subprocess,
the way users run it, and its JSON output is compared exactly.
"""

import csv
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
COMMAND = None  # the nsightkit command (--command)
CHECKER = os.path.join(HERE, "..", "check_trace.py")
FIXTURES = os.path.join(HERE, "fixtures", "ddp4")
MS = 1_000_000
# The merge's default collective patterns (nsightkit::mpi::MergeOptions, docs/multi-gpu.md).
DEFAULT_COLLECTIVES = ("*allreduce*", "*all_reduce*", "*all-reduce*", "*allgather*", "*all_gather*",
                       "*reduce_scatter*", "*reducescatter*", "*alltoall*", "*broadcast*", "*barrier*",
                       "nccl*")

# ---------------------------------------------------------------------------------------------
# Generating per-rank files


def time_obj(count, total_ns):
    """count/total with plausible, ordered percentiles (the merge reads only count and total)."""
    mean = total_ns / count if count else 0.0
    # Calls within -5 %/+10 % of the mean; a single call is its own min, median and max.
    lo, hi = (total_ns, total_ns) if count == 1 else (int(mean * 0.95), min(int(mean * 1.1), total_ns))
    return {
        "count": count,
        "total_ns": total_ns,
        "mean_ns": round(mean, 1),
        "min_ns": lo,
        "p50_ns": total_ns if count == 1 else int(mean),
        "p95_ns": hi,
        "max_ns": hi,
        "exact": True,
    }


def work_obj(calls, busy_ns):
    """A row's "gpu_work" as the CUPTI source writes it (the merge reads busy_ns and calls_with_work);
    the other numbers are plausible: one kernel per call, no copies, no idle time."""
    copies = {"count": 0, "bytes": 0, "total_ns": 0, "pageable": 0}
    work = {
        "kernels": calls,
        "self_kernels": calls,
        "kernel_ns": busy_ns,
        "busy_ns": busy_ns,
        "self_busy_ns": busy_ns,
        "span_ns": busy_ns,
        "idle_ns": 0,
        "calls_with_work": calls,
        "streams": 1,
        "launch_latency": time_obj(calls, 5000 * calls),
    }
    for k in ("h2d", "d2h", "d2d", "other_copies", "memsets"):
        work[k] = dict(copies)
    work.update(
        {
            "top_kernels": [{"name": "kernel", "count": calls, "total_ns": busy_ns}],
            "allocations": 0,
            "allocated_bytes": 0,
            "freed_bytes": 0,
            "peak_bytes": 0,
            "sync_calls": 0,
            "sync_ns": 0,
            "sync_api": "",
            "legacy_stream_work": 0,
        }
    )
    return work


def make_summary(
    rank,
    rows,
    run_ms=1000,
    pid=None,
    version="0.1.0",
    captured_only=False,
    steps=None,
    start_end=(),
    marks=(),
):
    """rows: [(path, calls, cpu_ms, gpu_ms or None[, (calls with work, busy ms) or None])] in tree
    order; names are the '/'-separated parts. gpu_ms is the CUDA-event span ("gpu"), the fifth item
    CUPTI's attributed work ("gpu_work"); a rank with any of the latter has the source "cupti"."""
    out_rows = []
    cupti = any(len(r) > 4 and r[4] is not None for r in rows)
    for path, count, cpu_ms, gpu_ms, *more in rows:
        total = round(cpu_ms * MS)
        children = sum(
            round(c[2] * MS)
            for c in rows
            if c[0].startswith(path + "/") and c[0].count("/") == path.count("/") + 1
        )
        row = {"path": path, "name": path.rsplit("/", 1)[-1], "domain": "nsightkit", "depth": path.count("/")}
        row.update(time_obj(count, total))
        row["self_ns"] = max(0, total - children)
        row["gpu"] = None if gpu_ms is None else time_obj(count, round(gpu_ms * MS))
        work = more[0] if more else None
        if cupti:
            row["gpu_work"] = None if work is None else work_obj(work[0], round(work[1] * MS))
        out_rows.append(row)
    return {
        "format": "nsightkit-report",
        "version": 1,
        "nsightkit_version": version,
        "rank": rank,
        "pid": pid if pid is not None else 4000 + (rank or 0),
        "run_ns": round(run_ms * MS),
        "captured_only": captured_only,
        "paths": out_rows,
        "threads": [
            {
                "tid": 1,
                "name": "main",
                "exited": False,
                "ranges": 0,
                "trace_events_dropped": 0,
                "paths_over_limit": 0,
                "paths": out_rows,
            }
        ],
        "steps": time_obj(*(steps or (0, 0))),
        "start_end_ranges": [
            {"name": n, "domain": "nsightkit", "time": time_obj(c, round(t * MS))} for n, c, t in start_end
        ],
        "marks": [{"name": n, "domain": "nsightkit", "count": c} for n, c in marks],
        "gpu": {
            "ranges_timed": 0,
            "ranges_pending": 0,
            "ranges_skipped": 0,
            "events_created": 0,
            "error": "",
            **({"source": "cupti"} if cupti else {}),
        },
    }


def make_trace(rank, origin_ns, spans, pid=None, clock="steady", version="0.1.0", asyncs=()):
    """spans: [(name, ts_us, dur_us)] on one thread; asyncs: [(id, name, begin_us, end_us)]."""
    os_pid = pid if pid is not None else 4000 + (rank or 0)
    epid = rank if rank is not None else os_pid
    label = f"nsightkit rank {rank} (pid {os_pid})" if rank is not None else f"nsightkit pid {os_pid}"
    events = [
        {"ph": "M", "name": "process_name", "pid": epid, "tid": 0, "ts": 0, "args": {"name": label}},
        {"ph": "M", "name": "thread_name", "pid": epid, "tid": 11, "ts": 0, "args": {"name": "main"}},
    ]
    for name, ts, dur in spans:
        events.append(
            {
                "ph": "X",
                "name": name,
                "cat": "nsightkit",
                "pid": epid,
                "tid": 11,
                "ts": ts,
                "dur": dur,
                "args": {"path": name},
            }
        )
    for i, name, b, e in asyncs:
        for ph, ts in (("b", b), ("e", e)):
            events.append(
                {
                    "ph": ph,
                    "name": name,
                    "cat": "nsightkit start/end",
                    "id": i,
                    "pid": epid,
                    "tid": 11,
                    "ts": ts,
                }
            )
    other = {"producer": f"nsightkit {version}", "rank": rank, "pid": os_pid, "events_dropped": 0}
    if clock is not None:
        other["clock"] = clock
        other["time_origin_ns"] = origin_ns
    return {"displayTimeUnit": "ns", "traceEvents": events, "otherData": other}


def ddp4():
    """Four data-parallel ranks; rank 2's stage2/conv1 takes twice as long as on the others (200 ms
    instead of about 100), the others wait for it in the all-reduce (longer GPU time there); rank 0
    alone saves a checkpoint. Totals in ms over 10 steps of a 1 s run."""
    conv1 = {0: 100, 1: 101, 2: 200, 3: 99}
    wait = {0: 130, 1: 128, 2: 12, 3: 131}  # all-reduce GPU time
    files = {}
    for r in range(4):
        c = conv1[r]
        f = c + 203  # forward = stage1 100 + stage2 (conv1 + conv2 90 + 1) + head 10 + 2 of its own
        rows = [
            ("data", 10, 80 + r, None),
            ("forward", 10, f, f - 2),
            ("forward/stage1", 10, 100, 99),
            ("forward/stage2", 10, c + 91, c + 90),
            ("forward/stage2/conv1", 10, c, c - 1),
            ("forward/stage2/conv2", 10, 90, 89),
            ("forward/head", 10, 10, 9),
            ("backward", 10, 450 + r, 440 + r),
            ("backward/allreduce", 30, 6, wait[r]),
            ("optimizer", 10, 50, 48),
        ]
        if r == 0:
            rows.append(("save checkpoint", 1, 30, None))
        files[f"summary.rank{r}.json"] = make_summary(
            r,
            rows,
            run_ms=1000 + r,
            steps=(10, (990 + r) * MS),
            start_end=[("epoch", 1, 995)],
            marks=[("checkpoint", 1)],
        )
        origin = 7_000_000_000_000 + r * 1_250_125  # the ranks enabled 1.250125 ms apart
        spans = [("forward", 100.0 + 100_000 * s, f * 100.0) for s in range(10)]
        files[f"trace.rank{r}.json"] = make_trace(r, origin, spans, asyncs=[(1, "epoch", 50.0, 995_050.0)])
    return files


def write_files(directory, files):
    os.makedirs(directory, exist_ok=True)
    paths = {}
    for name, doc in files.items():
        paths[name] = os.path.join(directory, name)
        with open(paths[name], "w", encoding="utf-8") as f:
            if isinstance(doc, str):
                f.write(doc)
            else:
                json.dump(doc, f, indent=1)
                f.write("\n")
    return paths


# ---------------------------------------------------------------------------------------------
# Running the command


class Result:
    def __init__(self, proc, json_doc, table):
        self.rc, self.out, self.err = proc.returncode, proc.stdout, proc.stderr
        self.json, self.table = json_doc, table


class MergeCase(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="nsk_merge_")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def files(self, files, sub="in"):
        return write_files(os.path.join(self.dir, sub), files)

    def merge(self, *args, expect_rc=0, json_out=True):
        """Runs the command; returns stdout, stderr and the parsed --json."""
        out = os.path.join(self.dir, "merged-summary.json")
        if os.path.exists(out):
            os.remove(out)
        cmd = [COMMAND, "merge"] + [str(a) for a in args] + (["--json", out] if json_out else [])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        self.assertNotIn("Traceback", proc.stderr)
        self.assertEqual(proc.returncode, expect_rc, f"{cmd}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        doc = None
        if expect_rc == 0 and json_out and os.path.exists(out):
            with open(out, encoding="utf-8") as f:
                doc = json.load(f)
        return Result(proc, doc, proc.stdout)

    def error(self, *args, contains):
        """An input error: exit 2, one line on stderr starting with the program's name."""
        r = self.merge(*args, expect_rc=2, json_out=False)
        lines = [ln for ln in r.err.splitlines() if ln.strip()]
        self.assertEqual(len([ln for ln in lines if "error" in ln]), 1, r.err)
        self.assertIn(contains, r.err)
        self.assertEqual(r.out, "")
        return r.err


def row(doc, path, section="paths"):
    rows = doc[section] if section != "steps" else [doc["steps"]]
    for r in rows:
        if r["path"] == path:
            return r
    raise AssertionError(f"no row {path!r} in {[r['path'] for r in rows]}")


def per_rank(stats):
    return {p["rank"]: p["total_ns"] for p in stats["per_rank"]}


# ---------------------------------------------------------------------------------------------
# The statistics


class TestStatistics(MergeCase):
    def test_three_ranks_min_median_max_slowest(self):
        paths = self.files(
            {
                f"s{r}.json": make_summary(r, [("forward", 10, ms, None)])
                for r, ms in ((0, 10), (1, 20), (2, 40))
            }
        )
        r = self.merge(*paths.values())
        cpu = row(r.json, "forward")["cpu"]
        self.assertEqual((cpu["min_ns"], cpu["median_ns"], cpu["max_ns"]), (10 * MS, 20 * MS, 40 * MS))
        self.assertEqual((cpu["slowest_rank"], cpu["fastest_rank"]), (2, 0))
        # Excess of the slowest over the median of the OTHER ranks: 40 vs median(10, 20) = 15.
        self.assertEqual(cpu["others_median_ns"], 15 * MS)
        self.assertEqual(cpu["excess_ns"], 25 * MS)
        self.assertAlmostEqual(cpu["excess"], 25 / 15)
        self.assertEqual(cpu["mean_per_call_ns"], 70 * MS / 30)
        self.assertEqual(per_rank(cpu), {0: 10 * MS, 1: 20 * MS, 2: 40 * MS})
        self.assertRegex(
            r.table, r"\nforward +3/3 +10 +2\.0% +10\.0 ms +20\.0 ms +40\.0 ms +rank 2 +\+167% +2\.33 ms\n"
        )

    def test_two_ranks_median_is_the_mean_and_excess_is_the_gap(self):
        paths = self.files(
            {f"s{r}.json": make_summary(r, [("step", 4, ms, None)]) for r, ms in ((0, 30), (1, 45))}
        )
        cpu = row(self.merge(*paths.values()).json, "step")["cpu"]
        self.assertEqual(cpu["median_ns"], 37.5 * MS)
        self.assertEqual((cpu["others_median_ns"], cpu["excess_ns"], cpu["excess"]), (30 * MS, 15 * MS, 0.5))

    def test_even_ranks_median_and_ties_go_to_the_lowest_rank(self):
        paths = self.files(
            {
                f"s{r}.json": make_summary(r, [("a", 1, ms, None)])
                for r, ms in ((0, 5), (1, 7), (2, 7), (3, 1))
            }
        )
        cpu = row(self.merge(*paths.values()).json, "a")["cpu"]
        self.assertEqual(cpu["median_ns"], 6 * MS)  # (5 + 7) / 2
        self.assertEqual((cpu["slowest_rank"], cpu["fastest_rank"]), (1, 3))
        self.assertEqual(cpu["excess_ns"], 2 * MS)  # 7 vs median(5, 7, 1) = 5

    def test_path_missing_on_one_rank_is_shown(self):
        files = {
            f"s{r}.json": make_summary(
                r, [("forward", 1, 10, None)] + ([("save", 1, 3, None)] if r != 1 else [])
            )
            for r in range(3)
        }
        r = self.merge(*self.files(files).values())
        save = row(r.json, "save")
        self.assertEqual((save["ranks_present"], save["ranks_missing"]), ([0, 2], [1]))
        self.assertEqual(per_rank(save["cpu"]), {0: 3 * MS, 2: 3 * MS})
        self.assertRegex(r.table, r"\nsave +2/3 ")
        self.assertIn("paths missing on some ranks:\n  save: not on rank(s) 1\n", r.table)

    def test_gpu_statistics_and_gpu_basis(self):
        paths = self.files(ddp4())
        r = self.merge(*[p for n, p in paths.items() if n.startswith("summary")], "--gpu")
        gpu = row(r.json, "backward/allreduce")["gpu"]
        self.assertEqual(per_rank(gpu), {0: 130 * MS, 1: 128 * MS, 2: 12 * MS, 3: 131 * MS})
        self.assertEqual((gpu["min_ns"], gpu["median_ns"], gpu["max_ns"]), (12 * MS, 129 * MS, 131 * MS))
        self.assertEqual(gpu["fastest_rank"], 2)
        self.assertIsNone(row(r.json, "data")["gpu"])
        self.assertIn("GPU time per range path", r.table)
        self.assertNotRegex(r.table, r"\ndata ")  # no GPU time: not in a GPU table

    def test_per_rank_gpu_column_tells_missing_path_from_missing_gpu_time(self):
        files = {
            "s0.json": make_summary(0, [("x", 1, 5, 4)]),
            "s1.json": make_summary(1, [("x", 1, 5, None)]),
            "s2.json": make_summary(2, [("y", 1, 5, 3)]),
        }
        r = self.merge(*self.files(files).values(), "--gpu", "--per-rank")
        self.assertRegex(r.table, r"\nx +2/3 +1 .* +4\.00 ms +- +missing\n")
        self.assertEqual(per_rank(row(r.json, "x")["gpu"]), {0: 4 * MS})

    def test_steps_start_end_and_marks(self):
        paths = self.files(ddp4())
        r = self.merge(os.path.join(self.dir, "in"))
        self.assertEqual(per_rank(r.json["steps"]["cpu"]), {q: (990 + q) * MS for q in range(4)})
        self.assertEqual(
            per_rank(row(r.json, "epoch", "start_end_ranges")["cpu"]), {q: 995 * MS for q in range(4)}
        )
        self.assertEqual(
            r.json["marks"],
            [
                {
                    "domain": "nsightkit",
                    "name": "checkpoint",
                    "per_rank": [{"rank": q, "count": 1} for q in range(4)],
                }
            ],
        )
        self.assertIn("  checkpoint: 1 on every rank", r.table)
        self.assertEqual(len(paths), 8)

    def test_tree_order_and_sorting(self):
        paths = self.files(ddp4())
        summaries = [p for n, p in paths.items() if n.startswith("summary")]
        tree = [x["path"] for x in self.merge(*summaries).json["paths"]]
        # Siblings by median total, larger first; children right after their parent.
        self.assertEqual(
            tree,
            [
                "backward",
                "backward/allreduce",
                "forward",
                "forward/stage2",
                "forward/stage2/conv1",
                "forward/stage2/conv2",
                "forward/stage1",
                "forward/head",
                "data",
                "optimizer",
                "save checkpoint",
            ],
        )
        by_total = self.merge(*summaries, "--sort", "total", "--top", "3").table
        self.assertRegex(
            by_total, r"\nbackward .*\nforward .*\nforward/stage2 .*\n\(8 smaller paths not shown"
        )
        by_excess = self.merge(*summaries, "--sort", "excess").table.split("\n")
        first = next(i for i, ln in enumerate(by_excess) if ln.startswith("path "))
        self.assertTrue(by_excess[first + 1].startswith("forward/stage2/conv1 "), by_excess[first + 1])

    def test_per_rank_columns_and_csv(self):
        paths = self.files(ddp4())
        summaries = [p for n, p in paths.items() if n.startswith("summary")]
        out_csv = os.path.join(self.dir, "m.csv")
        r = self.merge(*summaries, "--per-rank", "--csv", out_csv)
        self.assertRegex(r.table, r"\npath +ranks +calls .* +rank 0 +rank 1 +rank 2 +rank 3\n")
        self.assertRegex(r.table, r"\nsave checkpoint +1/4 .* +30\.0 ms +missing +missing +missing\n")
        with open(out_csv, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        by_path = {x["path"]: x for x in rows}
        fwd = by_path["forward"]
        self.assertEqual(
            [fwd[f"cpu_total_ns_rank{q}"] for q in range(4)], [str(v * MS) for v in (303, 304, 403, 302)]
        )
        self.assertEqual(
            (fwd["cpu_min_ns"], fwd["cpu_median_ns"], fwd["cpu_max_ns"], fwd["cpu_slowest_rank"]),
            (str(302 * MS), "303500000", str(403 * MS), "2"),
        )
        save = by_path["save checkpoint"]
        self.assertEqual(
            (save["ranks_present"], save["ranks_missing"], save["cpu_total_ns_rank1"]), ("1", "1 2 3", "")
        )
        self.assertEqual(by_path["capture-window steps"]["section"], "steps")
        self.assertEqual(by_path["epoch"]["section"], "start/end")


# ---------------------------------------------------------------------------------------------
# Stragglers


class TestStragglers(MergeCase):
    def summaries(self):
        return [p for n, p in self.files(ddp4()).items() if n.startswith("summary")]

    def test_slowed_rank_is_identified(self):
        r = self.merge(*self.summaries())
        findings = r.json["stragglers"]["cpu"]["findings"]
        # forward 403 vs median(303, 304, 302) = 303: +33 %; stage2 291 vs 191: +52 %; conv1 200 vs
        # 100: +100 %. Nothing else passes 10 % and 1 ms on a path holding >= 5 % of the run.
        self.assertEqual(
            [(f["rank"], f["path"]) for f in findings],
            [(2, "forward"), (2, "forward/stage2"), (2, "forward/stage2/conv1")],
        )
        fwd = findings[0]
        self.assertEqual(
            (fwd["total_ns"], fwd["others_median_ns"], fwd["excess_ns"]), (403 * MS, 303 * MS, 100 * MS)
        )
        self.assertAlmostEqual(fwd["excess"], 100 / 303)
        self.assertIn(
            "  rank 2: slow on 3 of 8 judged paths, by up to 100 ms (forward)\n"
            "    path                      rank 2  others' median   excess      %\n"
            "    forward                   403 ms          303 ms  +100 ms   +33%\n"
            "      forward/stage2          291 ms          191 ms  +100 ms   +52%\n"
            "        forward/stage2/conv1  200 ms          100 ms  +100 ms  +100%\n",
            r.table,
        )

    def test_collective_wait_is_not_a_straggler(self):
        r = self.merge(*self.summaries(), "--gpu")
        gpu = r.json["stragglers"]["gpu"]
        # On the GPU, ranks 0, 1 and 3 wait ~130 ms in the all-reduce against rank 2's 12 ms: that is
        # waiting for rank 2, not slowness, so the all-reduce is reported as a collective.
        self.assertEqual(sorted({f["rank"] for f in gpu["findings"]}), [2])
        self.assertEqual(gpu["collectives"], ["backward/allreduce"])
        self.assertIn(
            "  collective backward/allreduce: shortest on rank 2 (12.0 ms, median 129 ms): the last rank to "
            "arrive waits least\n",
            r.table,
        )
        custom = self.merge(*self.summaries(), "--gpu", "--collective", "NOTHING*").json["stragglers"]["gpu"]
        self.assertEqual(custom["collectives"], [])

    def test_two_ranks_collective_judged_would_blame_the_waiting_rank(self):
        # With two ranks the waiting rank 0 (130 ms vs 12 ms in the all-reduce) passes every threshold:
        # only the collective rule keeps it from being called a straggler.
        two = [p for p in self.summaries() if p.endswith(("rank0.json", "rank2.json"))]
        gpu = self.merge(*two, "--gpu").json["stragglers"]["gpu"]
        self.assertEqual(sorted({f["rank"] for f in gpu["findings"]}), [2])
        judged = self.merge(*two, "--gpu", "--no-collectives").json["stragglers"]["gpu"]
        self.assertEqual(
            [
                (f["rank"], f["others_median_ns"])
                for f in judged["findings"]
                if f["path"] == "backward/allreduce"
            ],
            [(0, 12 * MS)],
        )

    def test_waiting_inside_a_path_is_not_held_against_it(self):
        # resnet_training with rank 1 sleeping in forward: on the GPU, rank 0's backward holds
        # ~1 s of waiting in its all-reduces and "allreduce wait"; without the subtraction rank 0
        # would be flagged on backward. Rows: (path, calls, cpu_ms, gpu_ms).
        def ranks(fwd, wait, bucket, back):
            return [
                ("forward", 50, fwd, fwd),
                ("backward", 50, back + 40 + wait + bucket, back + wait + bucket),
                ("backward/stage1", 50, 150 + bucket, 150 + bucket),
                ("backward/stage1/allreduce bucket0", 50, bucket, bucket),
                ("backward/allreduce wait", 50, wait, wait),
            ]

        files = {
            "summary.rank0.json": make_summary(0, ranks(160, 950, 40, 360), run_ms=2000),
            "summary.rank1.json": make_summary(1, ranks(1150, 1, 2, 361), run_ms=2000),
        }
        r = self.merge(*self.files(files).values(), "--gpu")
        findings = r.json["stragglers"]["gpu"]["findings"]
        self.assertEqual([(f["rank"], f["path"]) for f in findings], [(1, "forward")])
        judged = {f["path"]: f for f in r.json["stragglers"]["cpu"]["findings"]}
        self.assertEqual(list(judged), ["forward"])
        self.assertEqual(judged["forward"]["waiting_excluded_ns"], 0)
        # On the GPU, paths holding a collective are not judged at all (it overlaps them there).
        gpu_all = self.merge(
            *self.files(files, "b").values(), "--gpu", "--min-excess", "0", "--min-excess-ms", "0"
        )
        gpu_paths = {f["path"] for f in gpu_all.json["stragglers"]["gpu"]["findings"]}
        self.assertNotIn("backward", gpu_paths)
        self.assertNotIn("backward/stage1", gpu_paths)
        # On the CPU, the subtraction: backward minus both collectives below it (bucket0 two deep).
        no_wait = self.merge(*self.files(files, "c").values(), "--min-excess", "0", "--min-excess-ms", "0")
        back = [f for f in no_wait.json["stragglers"]["cpu"]["findings"] if f["path"] == "backward"]
        self.assertEqual(len(back), 1)
        self.assertEqual((back[0]["rank"], back[0]["waiting_excluded_ns"]), (1, (1 + 2) * MS))
        self.assertEqual((back[0]["total_ns"], back[0]["others_median_ns"]), (401 * MS, 400 * MS))

    def test_balanced_ranks_have_no_straggler(self):
        # Within +-3 % of each other: the slowest rank exists but is no straggler.
        files = {
            f"s{r}.json": make_summary(r, [("forward", 10, 300 * f, None), ("backward", 10, 500 * f, None)])
            for r, f in enumerate((1.0, 1.03, 0.97, 1.01))
        }
        r = self.merge(*self.files(files).values())
        self.assertEqual(r.json["stragglers"]["cpu"]["findings"], [])
        self.assertIn("  none: on all 2 judged paths every rank is within the thresholds\n", r.table)
        self.assertIn(
            "slowest rank per judged path (some rank always is; not a verdict by itself): rank 1 on 2\n",
            r.table,
        )

    def test_thresholds_are_all_required_and_adjustable(self):
        # a: +20 % but only 0.2 ms; b: +20 % and 4 ms but 2 % of the run; c: +5 % and 25 ms.
        slow = {"a": 1.2, "b": 24, "c": 525}
        fast = {"a": 1, "b": 20, "c": 500}
        files = {
            f"s{r}.json": make_summary(r, [(k, 1, (slow if r == 1 else fast)[k], None) for k in "abc"])
            for r in range(3)
        }
        paths = list(self.files(files).values())
        self.assertEqual(self.merge(*paths).json["stragglers"]["cpu"]["findings"], [])
        lower = self.merge(*paths, "--min-excess", "4").json["stragglers"]["cpu"]["findings"]
        self.assertEqual([(f["rank"], f["path"]) for f in lower], [(1, "c")])
        small = self.merge(*paths, "--min-excess-ms", "0.1", "--min-share", "0").json["stragglers"]["cpu"][
            "findings"
        ]
        self.assertEqual([(f["rank"], f["path"]) for f in small], [(1, "b"), (1, "a")])  # table order
        self.assertEqual(
            self.merge(*paths, "--min-excess-ms", "0.1", "--min-share", "0").json["thresholds"],
            {
                "min_excess_pct": 10.0,
                "min_excess_ms": 0.1,
                "min_share_pct": 0.0,
                "collective_patterns": list(DEFAULT_COLLECTIVES),
            },
        )

    def test_absolute_threshold_alone_can_spare_a_rank(self):
        # A short run: +20 % on a path holding 20 % of it, but only 0.4 ms.
        files = {
            f"s{r}.json": make_summary(r, [("d", 1, 2.4 if r == 1 else 2, None)], run_ms=10) for r in range(3)
        }
        paths = list(self.files(files).values())
        self.assertEqual(self.merge(*paths).json["stragglers"]["cpu"]["findings"], [])
        flagged = self.merge(*paths, "--min-excess-ms", "0.3").json["stragglers"]["cpu"]["findings"]
        self.assertEqual([(f["rank"], f["excess_ns"]) for f in flagged], [(1, 0.4 * MS)])

    def test_two_slow_ranks_of_eight_are_both_flagged(self):
        files = {
            f"s{r}.json": make_summary(r, [("forward", 10, 500 if r in (3, 6) else 300, None)])
            for r in range(8)
        }
        findings = self.merge(*self.files(files).values()).json["stragglers"]["cpu"]["findings"]
        self.assertEqual(
            [(f["rank"], f["others_median_ns"]) for f in findings], [(3, 300 * MS), (6, 300 * MS)]
        )

    def test_two_ranks_compare_with_the_other_rank(self):
        files = {
            f"s{r}.json": make_summary(r, [("forward", 10, 300 if r == 0 else 400, None)]) for r in range(2)
        }
        r = self.merge(*self.files(files).values())
        self.assertIn(
            "  rank 1: slow on 1 of 1 judged paths, by up to 100 ms (forward)\n"
            "    path     rank 1  other rank   excess     %\n"
            "    forward  400 ms      300 ms  +100 ms  +33%\n",
            r.table,
        )

    def test_one_rank_has_nothing_to_compare(self):
        r = self.merge(*self.files({"s.json": make_summary(0, [("forward", 1, 5, None)])}).values())
        self.assertIn("only one rank: nothing to compare", r.table)
        self.assertRegex(r.table, r"\nforward +1/1 +1 .* +- +- +5\.00 ms\n")


# ---------------------------------------------------------------------------------------------
# Where the GPU numbers come from: CUPTI's busy time per path, else CUDA-event spans


def nccl3(rank_two_events=False):
    """Three data-parallel ranks measured by CUPTI; rank 2 is slow in forward on the GPU (350 ms of
    busy time against 250), so ranks 0 and 1 wait for it inside the NCCL all-reduce, whose kernels
    run on NCCL's own stream: 120 and 118 ms of kernel time there against rank 2's 20. Rank 0's
    all-reduce row also carries a 0.5 ms CUDA-event span (its current stream, not NCCL's): CUPTI's
    number wins. With `rank_two_events`, rank 2 has no CUPTI and only event spans (the all-reduce's
    2 ms span misses NCCL's stream). Rows: (path, calls, cpu ms, event span ms, (calls, busy ms))."""
    nccl = {0: 120, 1: 118, 2: 20}
    files = {}
    for r in range(3):
        if r == 2 and rank_two_events:
            rows = [
                ("data", 10, 80, None),
                ("forward", 10, 400, 380),
                ("backward", 10, 500, 450),
                ("backward/nccl allreduce", 10, 40, 2),
                ("optimizer", 10, 50, None),
            ]
        else:
            fwd = 350 if r == 2 else 250
            rows = [
                ("data", 10, 80, None, None),
                ("forward", 10, fwd + 50, None, (10, fwd)),
                ("backward", 10, 500, None, (10, 400)),
                ("backward/nccl allreduce", 10, 40, 0.5 if r == 0 else None, (10, nccl[r])),
                ("optimizer", 10, 50, None, (10, 45)),
            ]
        files[f"summary.rank{r}.json"] = make_summary(r, rows)
    return files


class TestGpuSources(MergeCase):
    def test_cupti_busy_time_per_path_and_the_nccl_stream(self):
        paths = list(self.files(nccl3()).values())
        out_csv = os.path.join(self.dir, "m.csv")
        r = self.merge(*paths, "--gpu", "--csv", out_csv)
        nccl = row(r.json, "backward/nccl allreduce")["gpu"]
        # The NCCL row carries its kernel time on NCCL's stream, not rank 0's 0.5 ms event span.
        self.assertEqual(per_rank(nccl), {0: 120 * MS, 1: 118 * MS, 2: 20 * MS})
        self.assertEqual([p["count"] for p in nccl["per_rank"]], [10, 10, 10])  # calls with work
        self.assertEqual((nccl["min_ns"], nccl["median_ns"], nccl["max_ns"]), (20 * MS, 118 * MS, 120 * MS))
        self.assertEqual(nccl["mean_per_call_ns"], 258 * MS / 30)
        self.assertEqual(nccl["source"], "cupti")
        self.assertEqual(row(r.json, "forward")["gpu"]["source"], "cupti")
        self.assertIsNone(row(r.json, "data")["gpu"])  # no GPU work: no GPU numbers
        self.assertEqual([x["gpu_source"] for x in r.json["ranks"]], ["cupti"] * 3)
        self.assertNotIn("warning", r.err)
        # Rank 2 is slow in forward on the GPU; the ranks that wait in the all-reduce are not.
        gpu = r.json["stragglers"]["gpu"]
        self.assertEqual([(f["rank"], f["path"]) for f in gpu["findings"]], [(2, "forward")])
        self.assertEqual(gpu["collectives"], ["backward/nccl allreduce"])
        self.assertEqual(
            r.json["collective_time"]["gpu"],
            [{"rank": q, "total_ns": v * MS, "share": v / 1000} for q, v in ((0, 120), (1, 118), (2, 20))],
        )
        self.assertIn(
            "source cupti (rank(s) 0, 1, 2): busy time of the kernels, copies and memsets a path launched, "
            "on any stream (NCCL's too)\n",
            r.table,
        )
        self.assertRegex(r.table, r"\n  nccl allreduce +3/3 +10 +11\.8% +20\.0 ms +118 ms +120 ms +rank 0 .* cupti\n")
        self.assertIn(
            "  collective backward/nccl allreduce: shortest on rank 2 (20.0 ms, median 118 ms)", r.table
        )
        with open(out_csv, newline="", encoding="utf-8") as f:
            by_path = {x["path"]: x for x in csv.DictReader(f)}
        self.assertEqual(by_path["backward/nccl allreduce"]["gpu_source"], "cupti")
        self.assertEqual(by_path["backward/nccl allreduce"]["gpu_total_ns_rank0"], str(120 * MS))
        self.assertEqual(by_path["data"]["gpu_source"], "")
        cpu_table = self.merge(*paths).table
        self.assertIn(
            "(GPU times present, from cupti on rank(s) 0, 1, 2: nsightkit merge --gpu shows and judges them)\n",
            cpu_table,
        )
        self.assertNotIn("sources differ", cpu_table)

    def test_a_rank_without_cupti_falls_back_to_event_spans_and_is_named(self):
        paths = list(self.files(nccl3(rank_two_events=True)).values())
        out_csv = os.path.join(self.dir, "m.csv")
        r = self.merge(
            *paths, "--gpu", "--min-excess", "0", "--min-excess-ms", "0", "--min-share", "0", "--csv", out_csv
        )
        self.assertIn(
            "warning: the ranks' GPU times come from different sources (cupti on rank(s) 0, 1; events on "
            "rank(s) 2): CUPTI busy time and CUDA-event spans do not compare",
            r.err,
        )
        self.assertEqual([m["level"] for m in r.json["messages"]], ["warning"])
        self.assertEqual([x["gpu_source"] for x in r.json["ranks"]], ["cupti", "cupti", "events"])
        fwd = row(r.json, "forward")["gpu"]
        self.assertEqual(per_rank(fwd), {0: 250 * MS, 1: 250 * MS, 2: 380 * MS})
        self.assertEqual(fwd["source"], "mixed")
        # Only ranks 0 and 1 have GPU time on optimizer, both from CUPTI.
        self.assertEqual(row(r.json, "optimizer")["gpu"]["source"], "cupti")
        self.assertEqual(per_rank(row(r.json, "optimizer")["gpu"]), {0: 45 * MS, 1: 45 * MS})
        # Busy time against spans is no comparison: mixed rows are not judged, even with no thresholds.
        gpu = r.json["stragglers"]["gpu"]
        judged = {f["path"] for f in gpu["findings"]}
        self.assertFalse(judged & {"forward", "backward", "backward/nccl allreduce"}, judged)
        self.assertEqual(gpu["collectives"], [])
        self.assertEqual(gpu["judged_paths"], 1)  # optimizer
        self.assertIn("source events (rank(s) 2): span between CUDA events", r.table)
        self.assertIn('the ranks\' sources differ: a row timed by both is "mixed"', r.table)
        self.assertRegex(r.table, r"\nforward +3/3 +10 .* +mixed\n")
        self.assertRegex(r.table, r"\noptimizer +3/3 +10 .* +cupti\n")
        with open(out_csv, newline="", encoding="utf-8") as f:
            by_path = {x["path"]: x for x in csv.DictReader(f)}
        self.assertEqual(by_path["forward"]["gpu_source"], "mixed")
        self.assertEqual(by_path["forward"]["gpu_total_ns_rank2"], str(380 * MS))
        cpu_table = self.merge(*paths).table
        self.assertIn("(GPU times present, from cupti on rank(s) 0, 1; events on rank(s) 2: ", cpu_table)
        self.assertIn(
            "(the ranks' GPU sources differ: CUPTI busy time and CUDA-event spans do not compare; rows timed "
            'by both are "mixed" and not judged)\n',
            cpu_table,
        )

    def test_event_spans_alone_are_labelled_events(self):
        paths = [p for n, p in self.files(ddp4()).items() if n.startswith("summary")]
        r = self.merge(*paths, "--gpu")
        self.assertEqual(row(r.json, "backward/allreduce")["gpu"]["source"], "events")
        self.assertEqual([x["gpu_source"] for x in r.json["ranks"]], ["events"] * 4)
        self.assertIn("source events (rank(s) 0, 1, 2, 3): span between CUDA events", r.table)
        self.assertIn(
            "(GPU times present, from events on rank(s) 0, 1, 2, 3: nsightkit merge --gpu shows and judges",
            self.merge(*paths).table,
        )
        none = self.files({"s0.json": make_summary(0, [("f", 1, 1, None)])}, "none")
        self.assertEqual(self.merge(*none.values()).json["ranks"][0]["gpu_source"], None)

    def test_cupti_work_without_busy_time_is_an_error(self):
        doc = make_summary(0, [("f", 1, 5, None, (1, 4))])
        del doc["paths"][0]["gpu_work"]["busy_ns"]
        self.error(
            *self.files({"s0.json": doc}).values(), contains="s0.json: paths[0] ('f'): gpu_work has no 'busy_ns'"
        )


# ---------------------------------------------------------------------------------------------
# The merged trace


class TestTrace(MergeCase):
    def merge_traces(self, files, *extra, expect_rc=0):
        paths = self.files(files)
        out = os.path.join(self.dir, "merged-trace.json")
        r = self.merge(*paths.values(), "--trace", out, *extra, expect_rc=expect_rc, json_out=False)
        doc = None
        if expect_rc == 0:
            with open(out, encoding="utf-8") as f:
                doc = json.load(f)
        return r, doc, out

    def test_ranks_become_processes_on_one_time_line(self):
        files = {n: d for n, d in ddp4().items() if n.startswith("trace")}
        r, doc, out = self.merge_traces(files)
        events = doc["traceEvents"]
        # Every input event is there, plus a process_sort_index per rank.
        self.assertEqual(len(events), sum(len(d["traceEvents"]) for d in files.values()) + 4)
        self.assertEqual(sorted({e["pid"] for e in events}), [0, 1, 2, 3])
        names = {
            e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"
        }
        self.assertEqual(names, {q: f"nsightkit rank {q} (pid {4000 + q})" for q in range(4)})
        sort = {e["pid"]: e["args"]["sort_index"] for e in events if e["name"] == "process_sort_index"}
        self.assertEqual(sort, {q: q for q in range(4)})
        # Rank q enabled q * 1.250125 ms after rank 0: its events move by exactly that much.
        for q in range(4):
            got = [e["ts"] for e in events if e["pid"] == q and e["ph"] == "X"]
            want = [100.0 + 100_000 * s + q * 1250.125 for s in range(10)]
            self.assertEqual([round(t * 1000) for t in got], [round(t * 1000) for t in want])
        self.assertEqual(doc["otherData"]["time_origin_ns"], 7_000_000_000_000)
        self.assertEqual(
            [s["shift_ns"] for s in doc["otherData"]["sources"]], [q * 1_250_125 for q in range(4)]
        )
        self.assertTrue(doc["otherData"]["aligned"])
        # The same start/end id on every rank must not pair across ranks.
        ids = {(e["pid"], e["id"]) for e in events if e["ph"] in ("b", "e")}
        self.assertEqual(len({i for _, i in ids}), 4)
        self.assertIn("(trace of rank(s) 0, 1, 2, 3, aligned)", r.err)
        check = subprocess.run([sys.executable, CHECKER, out], capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def test_older_traces_are_not_shifted(self):
        files = {
            "t0.json": make_trace(0, None, [("a", 5.0, 1.0)], clock=None),
            "t1.json": make_trace(1, 9_000, [("a", 7.0, 1.0)]),
        }
        r, doc, _ = self.merge_traces(files)
        self.assertEqual([e["ts"] for e in doc["traceEvents"] if e["ph"] == "X"], [5.0, 7.0])
        self.assertIn("note: traces not aligned: ", r.err)
        self.assertIn("t0.json has no clock/time_origin_ns", r.err)
        self.assertFalse(doc["otherData"]["aligned"])

    def test_custom_clock_and_no_align_are_not_shifted(self):
        files = {
            "t0.json": make_trace(0, 1_000, [("a", 5.0, 1.0)], clock="custom"),
            "t1.json": make_trace(1, 9_000, [("a", 7.0, 1.0)]),
        }
        r, doc, _ = self.merge_traces(files)
        self.assertIn("clock 'custom' is not the shared steady clock", r.err)
        self.assertEqual([e["ts"] for e in doc["traceEvents"] if e["ph"] == "X"], [5.0, 7.0])
        files["t0.json"] = make_trace(0, 1_000, [("a", 5.0, 1.0)])
        r, doc, _ = self.merge_traces(files, "--no-align")
        self.assertEqual([e["ts"] for e in doc["traceEvents"] if e["ph"] == "X"], [5.0, 7.0])
        r, doc, _ = self.merge_traces(files)
        self.assertEqual([e["ts"] for e in doc["traceEvents"] if e["ph"] == "X"], [5.0, 15.0])

    def test_origins_hours_apart_warn(self):
        files = {
            "t0.json": make_trace(0, 1_000, [("a", 5.0, 1.0)]),
            "t1.json": make_trace(1, 1_000 + 3600 * 10**9, [("a", 7.0, 1.0)]),
        }
        r, _, _ = self.merge_traces(files)
        self.assertIn("warning: the ranks enabled the report up to 3600 s apart", r.err)
        self.assertIn("--no-align", r.err)


# ---------------------------------------------------------------------------------------------
# Inputs and errors


class TestInputs(MergeCase):
    def test_directory_and_pattern_inputs(self):
        paths = self.files(ddp4())
        write_files(os.path.join(self.dir, "in"), {"other.json": {"hello": 1}})
        r = self.merge(os.path.join(self.dir, "in"))
        self.assertIn("other.json: not an nsightkit summary or trace, skipped", r.err)
        self.assertEqual([x["rank"] for x in r.json["ranks"]], [0, 1, 2, 3])
        r = self.merge(os.path.join(self.dir, "in", "summary.rank[13].json"))
        self.assertEqual([x["rank"] for x in r.json["ranks"]], [1, 3])
        # Named twice (a file and its directory): read once.
        r = self.merge(paths["summary.rank0.json"], os.path.join(self.dir, "in"))
        self.assertEqual(len(r.json["ranks"]), 4)

    def test_merged_output_in_the_input_directory_is_skipped(self):
        paths = self.files(ddp4())
        indir = os.path.join(self.dir, "in")
        self.merge(indir, "--trace", os.path.join(indir, "merged.json"), json_out=False)
        r = self.merge(indir)
        self.assertIn("merged.json: a merged file (written by nsightkit merge), skipped", r.err)
        self.error(
            os.path.join(indir, "merged.json"),
            paths["summary.rank0.json"],
            contains="merged.json: this is a merged file",
        )

    def test_assign_ranks_pairs_summary_and_trace_by_pid(self):
        files = {
            "a.json": make_summary(None, [("f", 1, 4, None)], pid=77),
            "b.json": make_summary(None, [("f", 1, 6, None)], pid=55),
            "ta.json": make_trace(None, 100, [("f", 1.0, 4.0)], pid=77),
            "tb.json": make_trace(None, 200, [("f", 1.0, 6.0)], pid=55),
            "c.json": make_summary(0, [("f", 1, 5, None)], pid=99),
        }
        paths = self.files(files)
        order = [paths[n] for n in ("a.json", "b.json", "ta.json", "tb.json", "c.json")]
        self.error(*order, contains="a.json: no rank in the file")
        out = os.path.join(self.dir, "t.json")
        r = self.merge(*order, "--assign-ranks", "--trace", out)
        # Rank 0 is taken by c.json: pid 77 gets 1, pid 55 gets 2, in the order given.
        self.assertEqual(
            [(x["rank"], x["pid"], x["rank_assigned"]) for x in r.json["ranks"]],
            [(0, 99, False), (1, 77, True), (2, 55, True)],
        )
        self.assertIn("a.json: no rank in the file; assigned rank 1 (--assign-ranks, pid 77)", r.err)
        with open(out, encoding="utf-8") as f:
            trace = json.load(f)
        names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
        self.assertEqual(
            names,
            {
                1: "nsightkit rank 1 (pid 77) [rank assigned by merge]",
                2: "nsightkit rank 2 (pid 55) [rank assigned by merge]",
            },
        )

    def test_warnings_mixed_captured_versions_pids_and_gaps(self):
        files = {
            "s0.json": make_summary(0, [("f", 1, 4, None)], captured_only=True),
            "s2.json": make_summary(2, [("f", 1, 4, None)], version="0.2.0"),
            "t0.json": make_trace(0, 5, [("f", 1.0, 4.0)], pid=1234),
        }
        r = self.merge(*self.files(files).values())
        self.assertIn("warning: some ranks counted only captured steps (captured_only on rank(s) 0)", r.err)
        self.assertIn(
            "warning: the files come from different nsightkit versions (0.1.0 on rank(s) 0; 0.2.0 on "
            "rank(s) 2)",
            r.err,
        )
        self.assertIn("warning: rank 0: the summary", r.err)
        self.assertIn("come from different processes", r.err)
        self.assertIn("warning: no file for rank(s) 1 (ranks present: 0, 2): did a rank fail", r.err)
        self.assertIn("note: no trace for rank(s) 2", r.err)
        self.assertEqual([m["level"] for m in r.json["messages"]].count("warning"), 4)

    def test_errors(self):
        p = self.files(
            {
                "good.json": make_summary(0, [("f", 1, 1, None)]),
                "good1.json": make_summary(1, [("f", 1, 1, None)]),
                "dup.json": make_summary(1, [("f", 1, 1, None)]),
                "bad.json": '{"format": "nsightkit-report", "version": 1, "paths": [',
                "text.json": "this is not json\n",
                "empty.json": "",
                "nan.json": '{"format": "nsightkit-report", "version": 1, "rank": 0, "run_ns": NaN}',
                "latin1.json": b"\xff\xfe".decode("latin-1"),
                "other.json": {"traceEvents": [], "otherData": {"producer": "someone else"}},
                "v2.json": dict(make_summary(2, []), version=2),
                "norows.json": {"format": "nsightkit-report", "version": 1, "rank": 0, "pid": 1, "run_ns": 5},
                "orphan.json": dict(
                    make_summary(3, []),
                    paths=[
                        {
                            "path": "a/b",
                            "name": "b",
                            "domain": "nsightkit",
                            "depth": 1,
                            "count": 1,
                            "total_ns": 5,
                        }
                    ],
                ),
                "badrank.json": dict(make_summary(0, []), rank=-1),
                "trace.json": make_trace(0, 1, [("f", 1.0, 1.0)]),
                "badts.json": dict(
                    make_trace(1, 1, []), traceEvents=[{"ph": "X", "name": "x", "ts": "soon"}]
                ),
            }
        )
        self.error(os.path.join(self.dir, "nope.json"), contains="nope.json: no such file or directory")
        self.error(os.path.join(self.dir, "nope*.json"), contains="nope*.json: the pattern matches no file")
        self.error(
            p["bad.json"],
            contains="bad.json: broken JSON (parse error at line 1, column 56: syntax error while parsing value "
            "- unexpected end of input; expected '[', '{', or a literal): cut short by a process that",
        )
        self.error(p["empty.json"], contains="empty.json: empty file (did the process die before writing it?)")
        self.error(p["text.json"], contains="text.json: not JSON (parse error at line 1, column 2: ")
        self.error(p["nan.json"], contains="nan.json: not JSON (parse error at line 1, column 67: ")
        self.error(p["other.json"], contains="other.json: not an nsightkit report file: expected a summary")
        self.error(
            p["v2.json"], contains="v2.json: nsightkit-report version 2 is not one this reader understands (1)"
        )
        self.error(p["norows.json"], contains="norows.json: nsightkit-report without 'paths'")
        self.error(
            p["orphan.json"], contains="orphan.json: paths[0] ('a/b') has depth 1 but no parent before it"
        )
        self.error(
            p["badrank.json"], contains="badrank.json: 'rank' must be a non-negative integer or null, not -1"
        )
        self.error(p["badts.json"], contains="badts.json: traceEvents[0] ('x') has no numeric 'ts'")
        self.error(p["good1.json"], p["dup.json"], contains="rank 1 appears twice among the summaries: ")
        self.error(
            p["good.json"],
            "--trace",
            os.path.join(self.dir, "t.json"),
            contains="--trace: no trace among the inputs",
        )
        self.error(p["trace.json"], contains="only traces among the inputs and no --trace: nothing to do")
        self.error(p["good.json"], "--gpu", contains="--gpu: no rank has GPU times")
        self.error(
            p["good.json"],
            "-o",
            os.path.join(self.dir, "no", "such", "dir.txt"),
            contains="dir.txt: cannot write: No such file or directory",
        )
        empty = os.path.join(self.dir, "empty")
        os.mkdir(empty)
        self.error(empty, contains="no nsightkit summary or trace among the inputs: ")
        self.error(empty, contains="; a directory is read one level deep")

    def test_latin1_file_is_not_json(self):
        path = os.path.join(self.dir, "bin.json")
        with open(path, "wb") as f:
            f.write(b"\xff\xfe\x00garbage")
        self.error(path, contains="bin.json: not UTF-8 text")

    def test_usage_errors_and_help(self):
        for args, says in (
            ([], "give the per-rank files"),
            (["--top", "0", "x"], "--top must be a whole number from 1"),
            (["--min-excess", "-1", "x"], "--min-excess must be a number >= 0, not '-1'"),
            (["--sort", "name", "x"], "--sort must be one of tree, total, excess, not 'name'"),
            (["--bogus", "x"], "unknown option '--bogus'"),
            (["--json"], "--json needs a value"),
        ):
            r = self.merge(*args, expect_rc=2, json_out=False)
            self.assertIn("nsightkit merge: error: " + says, r.err)
            self.assertIn("(nsightkit merge --help says more)", r.err)
        h = self.merge("--help", json_out=False)
        for needle in (
            "--trace",
            "--json",
            "--csv",
            "-o, --output",
            "--gpu",
            "--top",
            "--sort",
            "straggler rule:",
            "--assign-ranks",
            "--no-align",
            "--collective",
        ):
            self.assertIn(needle, h.out)

    def test_table_to_file(self):
        paths = self.files(ddp4())
        out = os.path.join(self.dir, "table.txt")
        r = self.merge(os.path.join(self.dir, "in"), "-o", out)
        self.assertEqual(r.out, "")
        with open(out, encoding="utf-8") as f:
            self.assertIn("nsightkit merged report: 4 ranks (0, 1, 2, 3)", f.read())
        self.assertEqual(len(paths), 8)


class TestFixtures(unittest.TestCase):
    def test_committed_fixtures_match_their_description(self):
        # docs/multi-gpu.md shows the merge of tests/merge/fixtures/ddp4: keep it what ddp4() says.
        for name, doc in ddp4().items():
            with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
                self.assertEqual(json.load(f), doc, name)

    def test_fixtures_pass_the_independent_checker(self):
        # The crafted files are valid report output as tests/check_trace.py sees it.
        for r in range(4):
            files = [os.path.join(FIXTURES, f"{kind}.rank{r}.json") for kind in ("trace", "summary")]
            check = subprocess.run(
                [sys.executable, CHECKER, files[0], "--summary", files[1], "--expect-pid", str(r)],
                capture_output=True,
                text=True,
            )
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)


def main():
    global COMMAND, CHECKER
    argv = sys.argv[1:]
    if argv[:1] == ["--write-fixtures"]:
        write_files(argv[1], ddp4())
        return 0
    while argv[:1] in (["--command"], ["--checker"]):
        if argv[0] == "--command":
            COMMAND = os.path.abspath(argv[1])
        else:
            CHECKER = os.path.abspath(argv[1])
        argv = argv[2:]
    if COMMAND is None:
        print("test_merge.py: --command PATH/TO/nsightkit is needed", file=sys.stderr)
        return 2
    return 0 if unittest.main(argv=[sys.argv[0]] + argv, exit=False).result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
