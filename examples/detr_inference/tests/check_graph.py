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
    captured them.
Exit status 77 (skipped) when no CUDA device is usable (the program says so and exits 2), or when
the CUPTI source cannot run here (the summary's GPU note says why).
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
import nsightkit_report as nkr  # noqa: E402

SKIP = 77
MODEL = ("backbone", "encoder", "decoder", "heads")
ITERATIONS = 3


def fail(msg):
    print(f"check_graph.py: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def model_kernels(summary):
    """{path: kernels} of the model's paths that ran kernels."""
    out = {}
    for row in summary.paths:
        if row.path.split("/")[0] not in MODEL or not row.gpu_work:
            continue
        k = row.gpu_work.get("kernels", 0)
        if k:
            out[row.path] = k
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    json_base = os.path.join(a.out, "report.json")
    for tag in ("eager", "graph"):
        p = os.path.join(a.out, f"report.{tag}.json")
        if os.path.exists(p):
            os.remove(p)
    cmd = [a.program, "--device", "cuda", "--cuda-graph", "--model", "tiny", "--image-size", "64",
           "--batch", "2", "--enc-layers", "2", "--dec-layers", "2", "--warmup", "1",
           "--iterations", str(ITERATIONS), "--quiet",
           "--report", f"json={json_base},table=stdout,gpu=cupti"]
    print("running:", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    if r.returncode == 2 and "--device cuda:" in r.stderr:
        print("check_graph.py: no usable CUDA device: skipped")
        return SKIP
    if r.returncode != 0:
        fail(f"the program exited with {r.returncode}")
    if "outputs identical" not in r.stdout:
        fail('the program did not print "outputs identical"')
    if "==== nsightkit report of the eager run ====" not in r.stdout or \
       "==== nsightkit report of the CUDA graph run ====" not in r.stdout:
        fail("the two labelled report tables were not printed")

    eager = nkr.read_summary(os.path.join(a.out, "report.eager.json"))
    graph = nkr.read_summary(os.path.join(a.out, "report.graph.json"))
    for name, s in (("eager", eager), ("graph", graph)):
        source = s.gpu.source if s.gpu else ""
        if source != "cupti":
            note = s.gpu.note if s.gpu else ""
            print(f"check_graph.py: the {name} run's GPU source is '{source}', not cupti ({note}): skipped")
            return SKIP
    ek, gk = model_kernels(eager), model_kernels(graph)
    if not ek:
        fail("the eager run attributed no kernels to the model's modules")
    missing = sorted(set(ek) - set(gk))
    extra = sorted(set(gk) - set(ek))
    differ = sorted(p for p in set(ek) & set(gk) if ek[p] != gk[p])
    problems = []
    if missing:
        problems.append(f"{len(missing)} paths of the eager run have no kernels in the graph run, e.g. {missing[:5]}")
    if extra:
        problems.append(f"{len(extra)} paths of the graph run are not in the eager run, e.g. {extra[:5]}")
    for p in differ[:10]:
        problems.append(f"{p}: {ek[p]} kernels eager, {gk[p]} in the graph run")
    if problems:
        fail("; ".join(problems))
    total = sum(ek.values())
    if total % ITERATIONS != 0:
        fail(f"{total} model kernels over {ITERATIONS} iterations: not a whole number per iteration")
    print(f"check_graph.py: ok: {len(ek)} module paths, {total // ITERATIONS} kernels per iteration, "
          "the same per path eager and replayed")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except nkr.ReportError as e:
        fail(str(e))
