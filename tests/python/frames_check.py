"""nsightkit.load(...).to_pandas(), for run_package.py's pandas case.

usage: frames_check.py run                       the program to profile: ranges on two threads
       frames_check.py check SUMMARY CSV TRACE   the frames of its saved report, checked

A summary's frame must hold what the report's own summary CSV (written by the C++ library in the
same run) holds, column for column and row for row, merged and per thread; a crafted summary with
GPU time and GPU work checks the GPU columns, which a CPU run leaves at zero; a trace's frame has a
row per event; without pandas, to_pandas() raises an ImportError that says `pip install pandas`.
"""

import json
import os
import sys
import tempfile
import threading


def program():
    import nsightkit

    def steps(n):
        for _ in range(n):
            with nsightkit.range("step"):
                with nsightkit.range("inner"):
                    pass

    worker = threading.Thread(target=steps, args=(2,))
    worker.start()
    worker.join()
    steps(3)


def expect(cond, what):
    if not cond:
        raise SystemExit(f"FAILED: {what}")
    print(f"ok: {what}")


def same(frame, csv, columns):
    """Column names whose values differ between the frame and the CSV's rows (exact: 0/1 there)."""
    frame, csv = frame.reset_index(drop=True), csv.reset_index(drop=True)
    bad = []
    for c in columns:
        mine = frame[c].astype("int64") if frame[c].dtype == bool else frame[c]
        if len(mine) != len(csv) or not (mine == csv[c]).all():
            bad.append(c)
    return bad


def crafted():
    """A summary row with GPU time and CUPTI's GPU work, and one without either (as written)."""
    def time(count, total):
        return {"count": count, "total_ns": total, "mean_ns": total / count, "min_ns": 10, "p50_ns": 20,
                "p95_ns": 30, "max_ns": 40, "exact": False}

    work = {"kernels": 3, "self_kernels": 1, "kernel_ns": 900, "busy_ns": 1000, "self_busy_ns": 400,
            "span_ns": 1500, "idle_ns": 500, "calls_with_work": 2, "streams": 1,
            "launch_latency": time(3, 30), "h2d": {"count": 1, "bytes": 4096, "total_ns": 50, "pageable": 0},
            "memsets": {"count": 2, "bytes": 512, "total_ns": 5, "pageable": 0},
            "top_kernels": [{"name": "gemm", "count": 2, "total_ns": 800}], "peak_bytes": 8192}
    rows = [dict(path="model", name="model", domain="nsightkit", depth=0, self_ns=2000, gpu=time(2, 8000),
                 gpu_work=work, **time(2, 10000)),
            dict(path="model/app@load", name="load", domain="app", depth=1, self_ns=3000, gpu=None,
                 gpu_work=None, **time(2, 3000))]
    return {"format": "nsightkit-report", "version": 1, "rank": None, "pid": 1, "run_ns": 50000,
            "paths": rows, "threads": []}


def check(summary_path, csv_path, trace_path):
    import pandas

    import nsightkit

    summary = nsightkit.load(summary_path)
    csv = pandas.read_csv(csv_path, keep_default_na=False)
    columns = [c for c in csv.columns if c not in ("scope", "tid", "thread")]

    merged = summary.to_pandas()
    expect(list(merged.columns) == columns[:1] + ["name", "domain"] + columns[1:],
           "the frame's columns: the summary CSV's, with name and domain after path")
    counts = dict(zip(merged["path"], merged["count"]))
    expect(counts == {"step": 5, "step/inner": 5}, f"a row per path of both threads merged ({counts})")
    bad = same(merged, csv[csv["scope"] == "all"], columns)
    expect(not bad, f"every column equals the CSV's merged rows ({bad})")
    expect(str(merged["count"].dtype) == "int64" and str(merged["total_ns"].dtype) == "int64"
           and str(merged["mean_ns"].dtype) == "float64" and merged["exact"].dtype == bool,
           f"integer counts and times, float means, boolean exact ({dict(merged.dtypes.astype(str))})")

    per_thread = summary.to_pandas(threads=True)
    expect(list(per_thread.columns[:3]) == ["tid", "thread", "path"], "per thread: tid and thread first")
    expect(per_thread["tid"].nunique() == 2 and len(per_thread) == 4, "two threads, two paths each")
    rows = csv[csv["scope"] == "thread"].astype({"tid": "int64"})  # text: the merged rows have none
    bad = same(per_thread, rows, ["tid", "thread"] + columns)
    expect(not bad, f"every column equals the CSV's per-thread rows ({bad})")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "crafted.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(crafted(), f)
        frame = nsightkit.load(path).to_pandas().set_index("path")
    gpu = frame.loc["model"]
    expect((gpu["gpu_count"], gpu["gpu_total_ns"], gpu["gpu_p95_ns"], bool(gpu["gpu_exact"])) == (2, 8000, 30, False),
           "GPU time: gpu_count, gpu_total_ns, gpu_p95_ns, gpu_exact")
    expect((gpu["gpu_kernels"], gpu["gpu_self_kernels"], gpu["gpu_kernel_ns"], gpu["gpu_busy_ns"],
            gpu["gpu_self_busy_ns"], gpu["gpu_span_ns"], gpu["gpu_idle_ns"]) == (3, 1, 900, 1000, 400, 1500, 500),
           "GPU work: kernels, self kernels, kernel time, busy, self busy, span, idle")
    expect((gpu["gpu_launch_p50_ns"], gpu["gpu_h2d_bytes"], gpu["gpu_d2h_bytes"], gpu["gpu_memset_bytes"],
            gpu["gpu_peak_bytes"]) == (20, 4096, 0, 512, 8192),
           "launch latency p50, copied and set bytes (0 for a kind without records), peak bytes")
    none = frame.loc["model/app@load"]
    expect((none["name"], none["domain"], none["gpu_count"], bool(none["gpu_exact"]), none["gpu_kernels"],
            none["gpu_busy_ns"]) == ("load", "app", 0, True, 0, 0),
           "a row with neither: the CSV's zeros (and exact), its own name and domain")

    trace = nsightkit.load(trace_path)
    events = trace.to_pandas()
    expect(len(events) == len(trace.events), f"a row per trace event ({len(events)})")
    steps = events[(events["ph"] == "X") & (events["name"] == "step")]
    expect(len(steps) == 5 and steps["tid"].nunique() == 2 and (steps["dur"] > 0).all(),
           "the five 'step' ranges, on two threads, with their durations")

    sys.modules["pandas"] = None  # as if pandas were not installed: `import pandas` fails
    for obj in (summary, trace):
        try:
            obj.to_pandas()
            raised = None
        except ImportError as e:
            raised = e
        expect(raised is not None and "pip install pandas" in str(raised) and raised.name == "pandas",
               f"without pandas, {type(obj).__name__}.to_pandas() says how to get it ({raised})")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        program()
    elif len(sys.argv) == 5 and sys.argv[1] == "check":
        sys.exit(check(*sys.argv[2:]))
    else:
        raise SystemExit(__doc__)
