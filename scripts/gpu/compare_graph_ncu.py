#!/usr/bin/env python3
"""Per-module GPU time of CUDA-graph replays: nsightkit's report against Nsight Compute.

  compare_graph_ncu.py --report report.graph.json --ncu ncu.txt
                       [--min-us 100] [--tolerance 0.02] [--markdown out.md]

--report  the summary JSON of a graph run with gpu=cupti (detr_inference --cuda-graph writes
          report.graph.json): every replayed kernel counted for the module path that captured it
--ncu     `ncu --nvtx --csv --graph-profiling node --metrics gpu__time_duration.sum` output of
          the same program (eager forwards and graph replays of the same input shape)

Nsight Compute sees a replayed kernel node inside the start/end range around the graph launch
("graph NAME (replay)", one range id per replay), not inside the module that captured it. The
eager forward runs the same kernels in the same order inside its module ranges, so the i-th
kernel of each replay is mapped to the i-th kernel of an eager forward, and the names must agree
kernel by kernel in every replay and every eager forward (else the script stops: the mapping
would be a guess). ncu's time per path is the mean over the replays it profiled. Per module path: the report's kernels per replay against ncu's, and the report's mean
kernel time per replay against ncu's summed gpu__time_duration of the mapped kernels, within the
tolerance for paths of at least --min-us. Exit status 0 when counts are exact and times agree,
1 otherwise, 2 when the inputs cannot be read or mapped.
"""
import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_cupti_ncu import load_rows, offset_summary, parse_ncu_csv  # noqa: E402

REPLAY_SUFFIX = " (replay)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", required=True)
    ap.add_argument("--ncu", required=True)
    ap.add_argument("--min-us", type=float, default=100.0)
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("--markdown")
    a = ap.parse_args()
    report = load_rows(a.report)
    kernels = parse_ncu_csv(a.ncu, start_end=True)
    if not kernels:
        print(f"{a.ncu}: no kernel with a gpu__time_duration.sum found", file=sys.stderr)
        return 2
    replays = {}  # replay range id -> [(ns, kernel name)]
    eager = []
    roots = {p.split("/")[0] for p, r in report.items() if (r.get("gpu_work") or {}).get("kernels")}
    for names, ns, name, ranges in kernels:
        rid = next((i for i, m in ranges if m.endswith(REPLAY_SUFFIX)), None)
        if rid is not None:
            replays.setdefault(rid, []).append((ns, name))
        elif names and names[0] in roots:
            eager.append((names, ns, name))
    if not replays:
        print(f"{a.ncu}: no kernel inside a '... (replay)' range (was --graph-profiling node "
              "given, and did the program replay a graph?)", file=sys.stderr)
        return 2
    groups = list(replays.values())
    n = len(groups[0])
    if any(len(g) != n for g in groups) or not eager or len(eager) % n:
        print(f"{a.ncu}: replays of {sorted({len(g) for g in groups})} kernels and {len(eager)} eager "
              "kernels: not whole forwards of one length", file=sys.stderr)
        return 2
    forwards = [eager[i:i + n] for i in range(0, len(eager), n)]
    order = [k[2] for k in forwards[0]]
    for f in forwards[1:]:
        if [k[2] for k in f] != order:
            print(f"{a.ncu}: the eager forwards launch different kernels", file=sys.stderr)
            return 2
    for g in groups:
        for i, (_, name) in enumerate(g):
            if name != order[i]:
                print(f"{a.ncu}: kernel {i} is {order[i]!r} eagerly but {name!r} in a replay: "
                      "the order differs, no mapping", file=sys.stderr)
                return 2
    ncu = {}
    for i, (names, _, _) in enumerate(forwards[0]):
        mean_ns = statistics.mean(g[i][0] for g in groups)
        for d in range(1, len(names) + 1):
            c = ncu.setdefault("/".join(names[:d]), [0, 0.0])
            c[0] += 1
            c[1] += mean_ns
    # Replays in the report's run: its kernels per path over ncu's kernels per replay (the same
    # for every path when the attribution is right).
    ratios = sorted({(report.get(p) or {}).get("gpu_work", {}).get("kernels", 0) / k
                     for p, (k, _) in ncu.items() if k})
    runs = round(statistics.median(ratios)) if ratios else 0
    if runs < 1:
        print("the report's run has none of the replayed paths", file=sys.stderr)
        return 2
    lines = [f"ncu: {len(groups)} replays of {n} kernel nodes, mapped to the module paths of "
             f"{len(forwards)} eager forwards; the report's run replayed {runs} times",
             f"{'path':<48} {'kern/rpl rpt':>12} {'kern ncu':>8} {'ncu us':>10} {'diff':>7} "
             f"{'us/kern':>8}"]
    count_bad, diffs, offset_rows = 0, [], []
    for p in sorted(ncu):
        n_k, n_ns = ncu[p]
        w = (report.get(p) or {}).get("gpu_work") or {}
        r_k = w.get("kernels", 0) / runs
        r_ns = w.get("kernel_ns", 0) / runs
        d = (r_ns - n_ns) / n_ns if n_ns else float("nan")
        if r_k != n_k:
            count_bad += 1
        else:
            offset_rows.append((r_ns, n_ns, n_k))
        if n_ns >= a.min_us * 1e3:
            diffs.append(abs(d))
        flag = "" if r_k == n_k else "  <-- count"
        lines.append(f"{p[:48]:<48} {r_k:>12g} {n_k:>8} {n_ns / 1e3:>10.1f} {100 * d:+6.1f}% "
                     f"{(r_ns - n_ns) / n_k / 1e3:>+8.2f}{flag}")
    within = sum(1 for x in diffs if x <= a.tolerance)
    lines += ["", f"kernel counts per replay: {len(ncu) - count_bad} of {len(ncu)} paths exact",
              (f"replay kernel time vs ncu: {within}/{len(diffs)} paths >= {a.min_us:g} us within "
               f"{100 * a.tolerance:g}%, median |diff| {100 * statistics.median(diffs):.2f}%, "
               f"max {100 * max(diffs):.2f}%") if diffs else
              f"no path of at least {a.min_us:g} us",
              offset_summary(offset_rows, a.min_us, a.tolerance)]
    text = "\n".join(lines)
    print(text)
    if a.markdown:
        Path(a.markdown).write_text("```\n" + text + "\n```\n")
    return 0 if count_bad == 0 and all(x <= a.tolerance for x in diffs) else 1


if __name__ == "__main__":
    sys.exit(main())
