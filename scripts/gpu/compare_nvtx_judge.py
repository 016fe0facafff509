#!/usr/bin/env python3
"""Per-range kernel counts and kernel time of `nsightkit profile` against NVIDIA's records.

  compare_nvtx_judge.py --report run.json --judge judge.csv [--ncu ncu.csv]
                        [--min-us 100] [--tolerance 0.02] [--markdown out.md]

--report  the summary JSON nsightkit profile wrote (gpu=cupti: gpu_work per path)
--judge   another run of the same deterministic program under scripts/gpu/nvtx_judge.cpp, an
          NVTX tool of its own with CUPTI: each kernel (CUPTI's record) with the push/pop ranges
          open on its launching thread at the launch call (CUPTI's callback), outermost first
--ncu     `ncu --nvtx --csv --metrics gpu__time_duration.sum` of the same program: each kernel
          with its thread's NVTX push/pop stack (default domain)

Per path (inclusive: a range counts the kernels of the ranges inside it): the report's kernel
count must equal the judge's and ncu's everywhere; the report's summed kernel time must be within
the tolerance of the judge's for paths with at least --min-us of kernel time (ncu's
gpu__time_duration runs about 1 us per kernel above CUPTI's, so it judges counts only). Kernels
outside every range are compared with the report's unattributed records. Exit status 0 when all
agree, 1 otherwise, 2 when an input cannot be read. Standard library and the package's reader
(python/nsightkit).
"""
import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from nsightkit.report_file import component  # noqa: E402  (the report's rule for a path component)


def judge_component(text):
    # The judge writes "domain@name" for a range of a named domain, the name alone in the default
    # one; the report prints a component by its own rule (nsightkit's domain plain too).
    domain, at, name = text.partition("@")
    return component(domain, name) if at else text



def judge_paths(path):
    """{path: [count, summed ns]}, the kernels outside every range, and all kernels."""
    out = defaultdict(lambda: [0, 0])
    outside = total = 0
    with open(path, errors="replace") as f:
        for line in f:
            _corr, start, end, stack = line.rstrip("\n").split(",", 3)
            total += 1
            if not stack:
                outside += 1
                continue
            parts = [judge_component(p) for p in stack.split("/")]
            for i in range(1, len(parts) + 1):
                row = out["/".join(parts[:i])]
                row[0] += 1
                row[1] += int(end) - int(start)
    return dict(out), outside, total


def ncu_counts(path):
    """{path: kernels} from ncu's CSV: each row's thread column holds the NVTX push/pop stack,
    one quoted "domain:name:...:TYPE:message" entry per level."""
    counts = defaultdict(int)
    outside = 0
    with open(path, errors="replace", newline="") as f:
        rows = list(csv.reader(line for line in f if line.startswith('"')))
    header = rows[0]
    col = None
    for i, h in enumerate(header):
        if h.startswith("thread") or "Push/Pop" in h or h.lower().startswith("nvtx"):
            col = i
            break
    metric = header.index("Metric Name")
    for row in rows[1:]:
        if len(row) <= metric or row[metric] != "gpu__time_duration.sum":
            continue
        stack = []
        if col is not None and row[col]:
            # '<tid>  "domain:name:...:Msg_Type:Msg"  "..."': the quoted entries, outermost first
            for entry in row[col].split('"')[1::2]:
                fields = entry.split(":")
                if len(fields) < 2:
                    continue
                domain, name = fields[0], fields[1]
                stack.append(component("" if domain == "<default domain>" else domain, name))
        if not stack:
            outside += 1
            continue
        for i in range(1, len(stack) + 1):
            counts["/".join(stack[:i])] += 1
    return dict(counts), outside


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--judge", required=True)
    ap.add_argument("--ncu")
    ap.add_argument("--min-us", type=float, default=100)
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("--markdown")
    a = ap.parse_args()
    try:
        with open(a.report) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{a.report}: {e}", file=sys.stderr)
        return 2
    rep = {r["path"]: r.get("gpu_work") or {} for r in doc["paths"]}
    judge, outside, total = judge_paths(a.judge)
    ncu, ncu_outside = ncu_counts(a.ncu) if a.ncu else (None, None)
    lines = ["| path | kernels: report | judge | ncu | kernel time: report (us) | judge (us) | diff |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    bad = []
    for path in sorted(set(judge) | {p for p, w in rep.items() if w.get("kernels")}):
        w = rep.get(path, {})
        rk, rns = w.get("kernels", 0), w.get("kernel_ns", 0)
        jk, jns = judge.get(path, (0, 0))
        nk = ncu.get(path, 0) if ncu is not None else None
        diff = (rns - jns) / jns if jns else 0.0
        if rk != jk:
            bad.append(f"{path}: report {rk} kernels, judge {jk}")
        if nk is not None and rk != nk:
            bad.append(f"{path}: report {rk} kernels, ncu {nk}")
        if jns >= a.min_us * 1e3 and abs(diff) > a.tolerance:
            bad.append(f"{path}: kernel time {rns / 1e3:.1f} us, judge {jns / 1e3:.1f} us ({diff:+.2%})")
        lines.append(f"| {path} | {rk} | {jk} | {'-' if nk is None else nk} | {rns / 1e3:.1f} | "
                     f"{jns / 1e3:.1f} | {diff:+.3%} |")
    unattributed = doc.get("gpu", {}).get("records_unattributed")
    lines.append(f"\nkernels: {total} (judge); outside every range: judge {outside}, "
                 f"ncu {ncu_outside}, report's unattributed records {unattributed}")
    text = "\n".join(lines)
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")
    for b in bad:
        print("MISMATCH:", b)
    print("all agree" if not bad else f"{len(bad)} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
