#!/usr/bin/env python3
"""Runs detr_inference briefly on the CPU and checks the module paths in its nsightkit report.

  check_report.py --program PATH --out DIR [--mode enabled|disabled]

The program runs a small configuration (64x64 images, 2 encoder and 3 decoder layers, 1 warm-up
and 2 captured iterations) with `--report json=DIR/report.json,table=DIR/table.txt`. In an enabled
build the summary JSON must hold:
  - every module path of that architecture (computed here from the architecture, independently of
    the C++ code: backbone/stem/conv ... backbone/stage3/block1/conv2, encoder/layer0/self_attn/sdpa,
    decoder/layer2/cross_attn, heads/box_head/fc2, ...) with exactly 2 calls — the captured
    iterations only, not the warm-up one;
  - no other path, except the loop's own rows (to_host, postprocess, loader);
  - 2 capture-window steps, no GPU timing (CPU run), self-consistent times.
In a build with NSIGHTKIT_DISABLE the program must still run and print its latency, and write
no report at all. Exit status 0 when every check passes.
"""
import argparse
import os
import re
import subprocess
import sys

# The report's summary is read by nsightkit's one reader, the Python package's report_file module.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from nsightkit import report_file as nkr  # noqa: E402

ITERATIONS, WARMUP, ENC, DEC = 2, 1, 2, 3


def expected_paths(enc_layers, dec_layers):
    """The module tree of examples/detr_inference/model.hpp for the tiny preset."""
    paths = ["backbone", "backbone/stem", "backbone/stem/conv", "backbone/stem/pool"]
    for s in range(1, 5):
        stage = f"backbone/stage{s}"
        paths.append(stage)
        for b in range(2):
            block = f"{stage}/block{b}"
            paths += [block, f"{block}/conv1", f"{block}/conv2"]
            if b == 0 and s > 1:  # stride 2 and more channels: a 1x1 shortcut
                paths.append(f"{block}/downsample")

    def attention(prefix):
        return [prefix] + [f"{prefix}/{p}" for p in ("q_proj", "k_proj", "v_proj", "sdpa", "out_proj")]

    def ffn(prefix):
        return [prefix, f"{prefix}/linear1", f"{prefix}/linear2"]

    paths += ["encoder", "encoder/input_proj"]
    for i in range(enc_layers):
        layer = f"encoder/layer{i}"
        paths += [layer] + attention(f"{layer}/self_attn") + [f"{layer}/norm1"] + ffn(f"{layer}/ffn") + [f"{layer}/norm2"]
    paths += ["decoder", "decoder/norm"]
    for i in range(dec_layers):
        layer = f"decoder/layer{i}"
        paths += ([layer] + attention(f"{layer}/self_attn") + [f"{layer}/norm1"] +
                  attention(f"{layer}/cross_attn") + [f"{layer}/norm2"] + ffn(f"{layer}/ffn") +
                  [f"{layer}/norm3"])
    paths += ["heads", "heads/class_head", "heads/box_head"] + [f"heads/box_head/fc{i}" for i in range(3)]
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--program", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", choices=["enabled", "disabled"], default="enabled")
    a = ap.parse_args()

    os.makedirs(a.out, exist_ok=True)
    summary = os.path.join(a.out, "report.json")
    table = os.path.join(a.out, "table.txt")
    for f in (summary, table):
        if os.path.exists(f):
            os.remove(f)
    cmd = [a.program, "--device", "cpu", "--batch", "2", "--image-size", "64", "--enc-layers", str(ENC),
           "--dec-layers", str(DEC), "--queries", "20", "--iterations", str(ITERATIONS), "--warmup",
           str(WARMUP), "--report", f"json={summary},table={table}"]
    print("running:", " ".join(cmd))
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    print(run.stdout)
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    check(run.returncode == 0, f"exit status {run.returncode}")
    check(f"latency over {ITERATIONS} captured iterations" in run.stdout, "no latency summary")
    check(re.search(r"per image: +p50 [0-9.]+ ms +p95 [0-9.]+ ms", run.stdout) is not None,
          "no per-image p50/p95 line")
    check(len(re.findall(r"^  query ", run.stdout, re.M)) == 10, "not 10 detections printed")

    if a.mode == "disabled":
        check(not os.path.exists(summary) and not os.path.exists(table),
              "a report was written although instrumentation is compiled out")
        check("NSIGHTKIT_DISABLE" in run.stdout, "the program does not say the report is off")
    else:
        data = None
        if not os.path.exists(summary):
            failures.append(f"{summary} was not written")
        else:
            try:
                data = nkr.read_summary(summary)
            except nkr.ReportError as e:
                failures.append(str(e))
                data = None
        if data is not None:
            check(data.captured_only is True, "the report is not restricted to captured steps")
            rows = data.by_path()
            want = expected_paths(ENC, DEC)
            check(len(set(want)) == len(want), "internal: duplicate expected paths")
            for p in want:
                if p not in rows:
                    failures.append(f"missing module path {p}")
                elif rows[p].count != ITERATIONS:
                    failures.append(f"{p}: {rows[p].count} calls, expected {ITERATIONS} "
                                    "(the captured iterations, warm-up excluded)")
            loop_rows = {"to_host", "postprocess", "loader"}
            for p in rows:
                if p not in want and p not in loop_rows:
                    failures.append(f"unexpected path {p}")
            for p in ("to_host", "postprocess"):
                check(p in rows and rows[p].count == ITERATIONS, f"{p}: not {ITERATIONS} calls")
            # The loader runs before each step opens: the loads made while the window was open.
            check("loader" in rows and 1 <= rows["loader"].count <= ITERATIONS, "loader row")
            steps = data.steps.count if data.steps is not None else None
            check(steps == ITERATIONS, f"steps: {steps}")
            check(data.gpu is not None and data.gpu.ranges_timed == 0, "GPU timing on a CPU run")
            for p, r in rows.items():
                check(0 <= r.self_ns <= r.total_ns, f"{p}: self {r.self_ns} > total {r.total_ns}")
                check(r.min_ns <= r.p50_ns <= r.p95_ns <= r.max_ns, f"{p}: percentiles out of order")
            # A parent's total covers its children's.
            for p, r in rows.items():
                if "/" in p:
                    parent = rows.get(p.rsplit("/", 1)[0])
                    check(parent is not None and parent.total_ns >= r.total_ns, f"{p}: parent shorter than child")
            print(f"{len(rows)} paths in the report, {len(want)} module paths expected")
        check(os.path.exists(table), f"{table} was not written")
        if os.path.exists(table):
            with open(table) as f:
                text = f.read()
            check(re.search(r"^backbone +2 ", text, re.M) is not None, "table has no backbone row")
            check(re.search(r"^ +cross_attn +2 ", text, re.M) is not None, "table has no cross_attn row")

    for f in failures:
        print("FAIL:", f)
    print("PASS" if not failures else f"{len(failures)} failure(s)")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
