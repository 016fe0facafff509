#!/usr/bin/env python3
"""Runs detr_inference --cuda-graph briefly on the GPU and checks the graph run against the eager run.

  check_graph.py --program PATH --out DIR

The program runs a small configuration (tiny model, 64x64 images, batch 2, 2 encoder and 2
decoder layers, 1 warm-up and 3 measured iterations per run) with
`--report json=DIR/report.json,table=stdout,gpu=cupti`, which writes DIR/report.eager.json and
DIR/report.graph.json. Checks:
  - the program prints "outputs identical" (its own bit-for-bit check of the graph's outputs
    against the eager forward's, same input) and exits 0;
  - both summaries name the CUPTI source (the only one that attributes a replay's kernels);
  - every module path of the model (under backbone, encoder, decoder, heads) that ran kernels in
    the eager run is in the graph run with exactly the same number of kernels, and the graph run
    has no model path the eager run lacks: replayed kernels are attributed to the modules that
    recorded them.
Exit status 77 (skipped) when no CUDA device is usable (the program says so and exits 2), or when
the CUPTI source cannot run here (the summary's GPU note says why).
The shared part (running the program, reading the two summaries, comparing kernels per path)
is examples/common/graph_check.py.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common"))
import graph_check as gc  # noqa: E402

MODEL = ("backbone", "encoder", "decoder", "heads")
ITERATIONS = 3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    gc.clear_runs(a.out)
    json_base = os.path.join(a.out, "report.json")
    cmd = [a.program, "--device", "cuda", "--cuda-graph", "--model", "tiny", "--image-size", "64",
           "--batch", "2", "--enc-layers", "2", "--dec-layers", "2", "--warmup", "1",
           "--iterations", str(ITERATIONS), "--quiet",
           "--report", f"json={json_base},table=stdout,gpu=cupti"]
    r = gc.run_program(cmd)
    if "outputs identical" not in r.stdout:
        raise gc.Failure('the program did not print "outputs identical"')
    eager, graph = gc.read_runs(a.out)
    ek = gc.compare_kernels(eager, graph, MODEL, ITERATIONS)
    total = sum(ek.values())
    print(f"check_graph.py: ok: {len(ek)} module paths, {total // ITERATIONS} kernels per iteration "
          "(summed over the paths), the same per path eager and replayed")
    return 0


if __name__ == "__main__":
    sys.exit(gc.main_of("check_graph.py", main))
