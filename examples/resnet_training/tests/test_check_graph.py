#!/usr/bin/env python3
"""CPU test of the --cuda-graph GPU check (check_graph.py and examples/common/graph_check.py).

  test_check_graph.py --workdir DIR

The GPU test runs only where a device is; this runs its checker against a stand-in program (a
Python script written into DIR) that prints and writes what resnet_training --cuda-graph does,
correctly or with one fault at a time, and asserts the checker's verdict: 0 for a good run, 1
naming the fault (kernels per path differ, a path in one run only, the model run on the host in
the graph run, a replay count, losses that differ, the graph inputs not copied, a crash), 77 for
no device or no CUPTI.
"""
import argparse
import os
import stat
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_graph.py")

# The stand-in program: argv as resnet_training's; FAKE_MODE picks the fault.
FAKE = r'''
import json, os, sys
mode = os.environ.get("FAKE_MODE", "ok")
args = sys.argv[1:]
def arg(flag):
    return args[args.index(flag) + 1]
if mode == "nodevice":
    sys.stderr.write("resnet_training: error: --device cuda: no CUDA device\n")
    sys.exit(2)
if mode == "crash":
    sys.stderr.write("resnet_training: error: recording of graph 'training step' failed\n")
    sys.exit(1)
steps, warmup = int(arg("--steps")), int(arg("--warmup"))
measured = steps - warmup
report = dict(item.split("=", 1) for item in arg("--report").split(",") if "=" in item)
base = report["json"][: -len(".json")]

def time(count, total=1000):
    return {"count": count, "total_ns": total}

def row(path, depth, calls, kernels, d2d=0):
    work = {"kernels": kernels, "d2d": {"count": d2d, "bytes": 0, "total_ns": 0, "pageable": 0}}
    return dict(path=path, name=path.split("/")[-1], domain="nsightkit", depth=depth,
                gpu_work=work, **time(calls))

def summary(graph):
    model_calls = 0 if graph and mode != "eager_model" else measured
    k = {"forward": 30, "forward/stem": 3, "forward/stage1": 9, "backward": 40,
         "backward/stem": 4, "optimizer": 2}
    if graph and mode == "kernels":
        k["forward/stage1"] += 1
        k["forward"] += 1
    paths = [row("data", 0, measured, 0)]
    if graph:
        paths.append(row("graph inputs", 0, measured, 0,
                         0 if mode == "no_inputs" else 2 * measured))
    paths += [row("forward", 0, model_calls, k["forward"] * measured),
              row("forward/stem", 1, model_calls, k["forward/stem"] * measured),
              row("forward/stage1", 1, model_calls, k["forward/stage1"] * measured)]
    if graph and mode == "extra":
        paths.append(row("forward/spare", 1, 0, measured))
    paths += [row("backward", 0, model_calls, k["backward"] * measured),
              row("backward/stem", 1, model_calls, k["backward/stem"] * measured),
              row("optimizer", 0, model_calls, k["optimizer"] * measured)]
    ranges = []
    if graph:
        launches = measured - 1 if mode == "replays" else measured
        ranges.append({"name": "graph training step (replay)", "domain": "nsightkit",
                       "time": time(launches)})
    source = "events" if mode == "events" else "cupti"
    return {"format": "nsightkit-report", "version": 1, "rank": None, "pid": 1, "run_ns": 1,
            "paths": paths, "start_end_ranges": ranges,
            "gpu": {"source": source, "note": "stand-in"}}

for tag, graph in (("eager", False), ("graph", True)):
    with open(f"{base}.{tag}.json", "w") as f:
        json.dump(summary(graph), f)
loss = [2.3 - 0.01 * i for i in range(steps)]
graph_loss = list(loss)
if mode == "losses":
    graph_loss[-1] += 1e-7
with open(arg("--metrics"), "w") as f:
    json.dump({"cuda_graph": True, "losses_identical": mode != "losses", "loss": graph_loss,
               "accuracy": [0.1] * steps, "eager_loss": loss, "eager_accuracy": [0.1] * steps}, f)
print("==== nsightkit report of the eager run ====")
print("losses identical" if mode != "losses" else "losses close")
print("==== nsightkit report of the CUDA graph run ====")
'''

CASES = [
    # mode, expected status, text the checker must print (stdout + stderr)
    ("ok", 0, "check_graph.py: ok: losses identical over 8 steps"),
    ("kernels", 1, "forward/stage1: 54 kernels eager, 60 in the graph run"),
    ("extra", 1, "paths of the graph run are not in the eager run, e.g. ['forward/spare']"),
    ("eager_model", 1, "the graph run's 'forward' row has 6 CPU calls: the host ran it"),
    ("replays", 1, "'graph training step (replay)' range: 5 launches, expected 6"),
    ("no_inputs", 1, "'graph inputs' row: expected 6 calls and 12 device-to-device copies"),
    ("losses", 1, 'the program did not print "losses identical"'),
    ("crash", 1, "the program exited with 1"),
    ("nodevice", 77, "no usable CUDA device: skipped"),
    ("events", 77, "the eager run's GPU source is 'events', not cupti (stand-in): skipped"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    fake = os.path.join(a.workdir, "fake_resnet_training")
    with open(fake, "w", encoding="utf-8") as f:
        f.write(f"#!{sys.executable}\n{FAKE}")
    os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
    failures = 0
    for mode, status, text in CASES:
        env = dict(os.environ, FAKE_MODE=mode)
        r = subprocess.run([sys.executable, CHECK, "--exe", fake, "--out", os.path.join(a.workdir, mode)],
                           capture_output=True, text=True, env=env, timeout=120)
        said = r.stdout + r.stderr
        ok = r.returncode == status and text in said
        print(f"{'ok  ' if ok else 'FAIL'} {mode}: status {r.returncode} (expected {status})")
        if not ok:
            failures += 1
            print(f"  expected to see: {text}\n  the checker said:\n{said}")
    # A losses mismatch the program did not notice itself: the metrics check catches it.
    sys.path.insert(0, HERE)
    import check_graph  # noqa: E402
    bad = os.path.join(a.workdir, "metrics_bad.json")
    with open(bad, "w", encoding="utf-8") as f:
        f.write('{"cuda_graph": true, "losses_identical": true, "loss": [1,2,3,4,5,6,7,8.000001],'
                '"eager_loss": [1,2,3,4,5,6,7,8], "accuracy": [0,0,0,0,0,0,0,0],'
                '"eager_accuracy": [0,0,0,0,0,0,0,0]}')
    try:
        check_graph.check_metrics(bad)
        print("FAIL metrics: a loss that differs in step 7 was not noticed")
        failures += 1
    except check_graph.gc.Failure as e:
        expected = "step 7: loss eager 8, graph 8.000001"
        if expected in str(e):
            print("ok   metrics: a differing loss is named")
        else:
            print(f"FAIL metrics: expected '{expected}', got '{e}'")
            failures += 1
    print(f"test_check_graph.py: {len(CASES) + 1 - failures} of {len(CASES) + 1} cases as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
