#!/usr/bin/env python3
"""Runs resnet_training --cuda-graph briefly on the GPU and checks the CUDA graph run against the eager run.

  check_graph.py --exe PATH --out DIR [--pipeline prefetch|copy]

The program trains a small configuration (8 steps of which 2 warm-up, batch 16, 32x32 images,
width 8, 3 stages of 1 block, 2 loader workers, page-locked memory; with the prefetcher or,
--pipeline copy, copies on the compute stream) with --no-tf32 --layout nchw, where every kernel is
deterministic, and writes `--metrics DIR/metrics.json` and
`--report json=DIR/report.json,table=stdout,gpu=cupti` (DIR/report.eager.json and
DIR/report.graph.json). Checks:
  - it exits 0 and prints "losses identical" and both report headings;
  - metrics.json: the graph run's loss and accuracy of every step equal the eager run's as
    written (9 significant digits, which tell any two floats apart), and it says so itself;
  - both summaries come from the CUPTI source (the only one that attributes a replay's kernels);
  - every path under forward, backward and optimizer ran exactly as many kernels in the graph
    run as in the eager run, with no path in one run only: replayed kernels are attributed to
    the modules that recorded them;
  - the graph run was replayed: its start/end range "graph training step (replay)" counts one
    launch per measured step; its forward, backward and optimizer rows have kernels but no CPU
    calls (the host did not run the model); "graph inputs" copied the images and the labels
    device to device once per measured step. The eager run has no replay range and one forward
    call per measured step.
Exit status 77 (skipped) without a usable CUDA device or where the CUPTI source cannot run (the
summary's GPU note says why). The shared part (running the program, reading the two summaries,
comparing kernels per path) is examples/common/graph_check.py.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common"))
import graph_check as gc  # noqa: E402

STEPS, WARMUP = 8, 2
MEASURED = STEPS - WARMUP
STEP_RANGES = ("forward", "backward", "optimizer")
REPLAY = "graph training step (replay)"


def row(summary, path):
    for r in summary.paths:
        if r.path == path:
            return r
    return None


def replay_range(summary):
    for r in summary.start_end_ranges:
        if r.name == REPLAY:
            return r
    return None


def check_metrics(path):
    try:
        with open(path, encoding="utf-8") as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        raise gc.Failure(f"{path}: {e}")
    if m.get("cuda_graph") is not True:
        raise gc.Failure(f"{path}: \"cuda_graph\" is not true")
    for graph_key, eager_key in (("loss", "eager_loss"), ("accuracy", "eager_accuracy")):
        g, e = m.get(graph_key), m.get(eager_key)
        if not isinstance(g, list) or not isinstance(e, list) or len(g) != STEPS or len(e) != STEPS:
            raise gc.Failure(f"{path}: '{graph_key}' and '{eager_key}' need {STEPS} values each")
        for i, (a, b) in enumerate(zip(e, g)):
            if a != b:
                raise gc.Failure(f"{path}: step {i}: {graph_key} eager {a!r}, graph {b!r}")
    if m.get("losses_identical") is not True:
        raise gc.Failure(f"{path}: \"losses_identical\" is not true")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exe", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pipeline", choices=("prefetch", "copy"), default="prefetch")
    a = ap.parse_args()
    gc.clear_runs(a.out)
    metrics = os.path.join(a.out, "metrics.json")
    if os.path.exists(metrics):
        os.remove(metrics)
    cmd = [a.exe, "--device", "cuda", "--cuda-graph", "--steps", str(STEPS), "--warmup", str(WARMUP),
           "--batch", "16", "--image-size", "32", "--width", "8", "--stages", "3", "--blocks", "1",
           "--workers", "2", "--decode-us", "0", "--pinned",
           "--prefetch" if a.pipeline == "prefetch" else "--no-prefetch",
           "--no-tf32", "--layout", "nchw", "--metrics", metrics,
           "--report", f"json={os.path.join(a.out, 'report.json')},table=stdout,gpu=cupti"]
    r = gc.run_program(cmd)
    if "losses identical" not in r.stdout:
        raise gc.Failure('the program did not print "losses identical"')
    check_metrics(metrics)

    eager, graph = gc.read_runs(a.out)
    kernels = gc.compare_kernels(eager, graph, STEP_RANGES, MEASURED)

    replay = replay_range(graph)
    if replay is None or replay.time.count != MEASURED:
        got = "none" if replay is None else replay.time.count
        raise gc.Failure(f"the graph run's '{REPLAY}' range: {got} launches, expected {MEASURED}")
    if replay_range(eager) is not None:
        raise gc.Failure(f"the eager run has a '{REPLAY}' range")
    for name in STEP_RANGES:
        g, e = row(graph, name), row(eager, name)
        if g is None or not g.gpu_work or not g.gpu_work.get("kernels"):
            raise gc.Failure(f"the graph run's '{name}' row has no kernels")
        if g.time.count != 0:
            raise gc.Failure(f"the graph run's '{name}' row has {g.time.count} CPU calls: the host "
                             "ran it instead of replaying it")
        if e is None or e.time.count != MEASURED:
            got = "none" if e is None else e.time.count
            raise gc.Failure(f"the eager run's '{name}' row: {got} CPU calls, expected {MEASURED}")
    inputs = row(graph, "graph inputs")
    d2d = (inputs.gpu_work or {}).get("d2d", {}) if inputs is not None else {}
    if inputs is None or inputs.time.count != MEASURED or d2d.get("count") != 2 * MEASURED:
        raise gc.Failure(f"the graph run's 'graph inputs' row: expected {MEASURED} calls and "
                         f"{2 * MEASURED} device-to-device copies, got "
                         f"{'none' if inputs is None else inputs.time.count} and {d2d.get('count')}")
    print(f"check_graph.py: ok: losses identical over {STEPS} steps; {len(kernels)} paths, "
          f"{sum(kernels[n] for n in STEP_RANGES if n in kernels) // MEASURED} kernels per step, "
          f"the same per path eager and replayed; {MEASURED} replays")
    return 0


if __name__ == "__main__":
    sys.exit(gc.main_of("check_graph.py", main))
