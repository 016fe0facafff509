#!/usr/bin/env python3
"""Per-module GPU time of CUDA-graph replays: nsightkit's report against Nsight Compute.

  compare_graph_ncu.py --report report.graph.json --ncu ncu.txt
                       [--min-us 100] [--tolerance 0.02] [--markdown out.md]

--report  the summary JSON of a graph run with gpu=cupti (detr_inference --cuda-graph writes
          report.graph.json): every replayed kernel counted for the module path that captured it
--ncu     `ncu --nvtx --csv --graph-profiling node --metrics gpu__time_duration.sum` output of the same program with one eager iteration and
          one replay

Nsight Compute sees a replayed kernel node inside the range around the graph launch, not inside
the module that captured it. The eager forward runs the same kernels in the same order inside
its module ranges, so the i-th kernel of the replay is mapped to the i-th kernel of the eager
forward, and the names must agree kernel by kernel (else the script stops: the mapping would be
a guess). Per module path: the report's kernels per replay against ncu's, and the report's mean
kernel time per replay against ncu's summed gpu__time_duration of the mapped kernels, within the
tolerance for paths of at least --min-us. Exit status 0 when counts are exact and times agree,
1 otherwise, 2 when the inputs cannot be read or mapped.
"""
import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_cupti_ncu import load_rows, parse_ncu  # noqa: E402  (the same ncu parser)

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
    kernels = parse_ncu(a.ncu)
    if not kernels:
        print(f"{a.ncu}: no kernel with a gpu__time_duration.sum found", file=sys.stderr)
        return 2
    replay = [(ns, name) for names, ns, name in kernels
              if any(n.endswith(REPLAY_SUFFIX) for n in names)]
    model_roots = {p.split("/")[0] for p, r in report.items()
                   if (r.get("gpu_work") or {}).get("kernels") and not p.endswith(REPLAY_SUFFIX)
                   and "/" in p}
    eager = [(names, ns, name) for names, ns, name in kernels
             if names and names[0] in model_roots and not any(n.endswith(REPLAY_SUFFIX) for n in names)]
    if not replay:
        print(f"{a.ncu}: no kernel inside a '... (replay)' range (was --graph-profiling node "
              "given, and did the program replay a graph?)", file=sys.stderr)
        return 2
    if len(eager) > len(replay) and len(eager) % len(replay) == 0:
        eager = eager[:len(replay)]  # several eager forwards (warm-up before capture): the first
    if len(eager) != len(replay):
        print(f"{a.ncu}: {len(eager)} eager kernels under {sorted(model_roots)} but {len(replay)} "
              "replayed kernels: cannot map one to one", file=sys.stderr)
        return 2
    for i, ((_, _, en), (_, rn)) in enumerate(zip(eager, replay)):
        if en != rn:
            print(f"{a.ncu}: kernel {i} is {en!r} in the eager forward but {rn!r} in the replay: "
                  "the order differs, no mapping", file=sys.stderr)
            return 2
    ncu = {}
    for (names, _, _), (ns, _) in zip(eager, replay):
        for i in range(1, len(names) + 1):
            c = ncu.setdefault("/".join(names[:i]), [0, 0.0])
            c[0] += 1
            c[1] += ns
    # Replays in the report's run: its kernels per path over ncu's kernels per replay (the same
    # for every path when the attribution is right).
    ratios = sorted({(report.get(p) or {}).get("gpu_work", {}).get("kernels", 0) / n_k
                     for p, (n_k, _) in ncu.items() if n_k})
    replays = statistics.median(ratios) if ratios else 0
    if replays <= 0 or replays != int(replays):
        print(f"the report's kernels per path are not a whole multiple of ncu's (ratios "
              f"{ratios[:5]}): replays cannot be told", file=sys.stderr)
    replays = max(1, round(replays))
    lines = [f"ncu: {len(replay)} replayed kernels mapped to the eager forward's module paths; "
             f"the report's run replayed {replays} times",
             f"{'path':<48} {'kern/rpl rpt':>12} {'kern ncu':>8} {'ncu us':>10} {'diff':>7}"]
    count_bad, diffs = 0, []
    for p in sorted(ncu):
        n_k, n_ns = ncu[p]
        w = (report.get(p) or {}).get("gpu_work") or {}
        r_k = w.get("kernels", 0) / replays
        r_ns = w.get("kernel_ns", 0) / replays
        d = (r_ns - n_ns) / n_ns if n_ns else float("nan")
        if r_k != n_k:
            count_bad += 1
        if n_ns >= a.min_us * 1e3:
            diffs.append(abs(d))
        flag = "" if r_k == n_k else "  <-- count"
        lines.append(f"{p[:48]:<48} {r_k:>12g} {n_k:>8} {n_ns / 1e3:>10.1f} {100 * d:+6.1f}%{flag}")
    within = sum(1 for x in diffs if x <= a.tolerance)
    lines += ["", f"kernel counts per replay: {len(ncu) - count_bad} of {len(ncu)} paths exact",
              (f"replay kernel time vs ncu: {within}/{len(diffs)} paths >= {a.min_us:g} us within "
               f"{100 * a.tolerance:g}%, median |diff| {100 * statistics.median(diffs):.2f}%, "
               f"max {100 * max(diffs):.2f}%") if diffs else
              f"no path of at least {a.min_us:g} us"]
    text = "\n".join(lines)
    print(text)
    if a.markdown:
        Path(a.markdown).write_text("```\n" + text + "\n```\n")
    return 0 if count_bad == 0 and all(x <= a.tolerance for x in diffs) else 1


if __name__ == "__main__":
    sys.exit(main())
