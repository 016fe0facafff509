"""What the examples' --cuda-graph tests share (examples/detr_inference/tests/check_graph.py and
examples/resnet_training/tests/check_graph.py).

A test runs its program once with --cuda-graph and a JSON report (`json=DIR/report.json`), which
the program writes twice, tagged with the run: DIR/report.eager.json and DIR/report.graph.json.
This module runs the program, reads the two summaries and compares the kernels each module path
ran, eager and replayed:

    import graph_check as gc
    def main():
        r = gc.run_program(cmd)                         # Skip without a usable CUDA device
        eager, graph = gc.read_runs(out_dir)            # Skip when CUPTI did not measure
        per_path = gc.compare_kernels(eager, graph, roots=("forward",), steps=3)
    sys.exit(gc.main_of("check_graph.py", main))

Failures raise Failure (exit 1 with "NAME: FAIL: why"), a missing device or CUPTI raises Skip
(exit 77, which ctest reports as skipped through SKIP_RETURN_CODE).
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from nsightkit import report_file as nkr  # noqa: E402

SKIP = 77


class Skip(Exception):
    """The test cannot run here (no CUDA device, no CUPTI): exit 77."""


class Failure(Exception):
    """What the test asserts does not hold: exit 1."""


def run_program(cmd, timeout=600):
    """Runs `cmd`, echoing it and its output; returns the CompletedProcess. Skip when the program
    says --device cuda is unusable (status 2, "--device cuda:" on stderr); Failure on any other
    non-zero status."""
    print("running:", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    if r.returncode == 2 and "--device cuda:" in r.stderr:
        raise Skip("no usable CUDA device")
    if r.returncode != 0:
        raise Failure(f"the program exited with {r.returncode}")
    for run in ("eager run", "CUDA graph run"):
        heading = f"==== nsightkit report of the {run} ===="
        if heading not in r.stdout:
            raise Failure(f'the report heading "{heading}" was not printed')
    return r


def clear_runs(out_dir, base="report"):
    """Removes the summaries an earlier run left in `out_dir` (made if missing)."""
    os.makedirs(out_dir, exist_ok=True)
    for tag in ("eager", "graph"):
        p = os.path.join(out_dir, f"{base}.{tag}.json")
        if os.path.exists(p):
            os.remove(p)


def read_runs(out_dir, base="report"):
    """The eager and the graph run's summaries (DIR/BASE.eager.json, DIR/BASE.graph.json). Skip
    when either was not measured by the CUPTI source, the only one that attributes a replay's
    kernels to the modules that recorded them (the summary's GPU note says why)."""
    runs = []
    for tag, name in (("eager", "eager"), ("graph", "graph")):
        s = nkr.read_summary(os.path.join(out_dir, f"{base}.{tag}.json"))
        source = s.gpu.source if s.gpu else ""
        if source != "cupti":
            note = s.gpu.note if s.gpu else ""
            raise Skip(f"the {name} run's GPU source is '{source}', not cupti ({note})")
        runs.append(s)
    return runs[0], runs[1]


def kernels_by_path(summary, roots):
    """{path: kernels} of the paths under `roots` (their first component) that ran kernels."""
    out = {}
    for row in summary.paths:
        if row.path.split("/")[0] not in roots or not row.gpu_work:
            continue
        k = row.gpu_work.get("kernels", 0)
        if k:
            out[row.path] = k
    return out


def compare_kernels(eager, graph, roots, steps):
    """Checks that every path under `roots` ran exactly as many kernels in the graph run as in
    the eager run, with no path only one of them has, and a whole number of kernels per step
    (`steps`: the measured steps or iterations of each run). Returns {path: kernels} of the eager
    run. Failure names the paths that differ."""
    ek, gk = kernels_by_path(eager, roots), kernels_by_path(graph, roots)
    if not ek:
        raise Failure(f"the eager run attributed no kernels to paths under {', '.join(roots)}")
    missing = sorted(set(ek) - set(gk))
    extra = sorted(set(gk) - set(ek))
    differ = sorted(p for p in set(ek) & set(gk) if ek[p] != gk[p])
    problems = []
    if missing:
        problems.append(f"{len(missing)} paths of the eager run have no kernels in the graph run, "
                        f"e.g. {missing[:5]}")
    if extra:
        problems.append(f"{len(extra)} paths of the graph run are not in the eager run, e.g. {extra[:5]}")
    for p in differ[:10]:
        problems.append(f"{p}: {ek[p]} kernels eager, {gk[p]} in the graph run")
    if problems:
        raise Failure("; ".join(problems))
    for root in roots:
        if root in ek and ek[root] % steps != 0:
            raise Failure(f"{root}: {ek[root]} kernels over {steps} steps: not a whole number per step")
    return ek


def main_of(name, main):
    """Runs main() and turns its outcome into an exit status: its return value (0), SKIP after
    Skip, 1 after Failure or a malformed summary."""
    try:
        return main()
    except Skip as e:
        print(f"{name}: {e}: skipped")
        return SKIP
    except (Failure, nkr.ReportError) as e:
        print(f"{name}: FAIL: {e}", file=sys.stderr)
        return 1
