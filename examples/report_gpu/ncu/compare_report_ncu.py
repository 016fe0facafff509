#!/usr/bin/env python3
"""Compares nsightkit's per-path GPU times with Nsight Compute's kernel durations.

  compare_report_ncu.py --report report.csv --ncu ncu.csv [--kernels kernels.csv]
                        [--subtree PATH=ncu_subtree.csv ...] [--tolerance 0.10]

--report   the report's summary CSV (rows with scope "all": path, gpu_count, gpu_total_ns)
--ncu      `ncu --csv --nvtx --print-nvtx-rename kernel --metrics gpu__time_duration.sum` output of
           the same program: every kernel, renamed after its innermost NVTX push/pop range
--kernels  the example's id,path table, used for kernels ncu did not rename (spin_kernel<Id>);
           Id 0 is the warm-up kernel outside every range and is ignored
--subtree  PATH=FILE: the output of a run with `--nvtx-include` selecting that range; the sum of
           its kernels is compared with the report's GPU time of PATH

A kernel ncu attributes to a leaf range counts for that leaf and every enclosing path; each path's
sum is compared with the report's GPU total (events recorded around the range on the stream, so it
also holds the launch gaps between kernels). Exit status 0 when every path agrees within the
tolerance, 1 otherwise (or when nothing could be compared).
"""
import argparse
import csv
import io
import re
import sys

UNITS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
         "second": 1e9, "s": 1e9}


def read_report(path):
    out = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["scope"] == "all":
                out[row["path"]] = (int(row["gpu_count"]), int(row["gpu_total_ns"]), int(row["count"]))
    return out


def read_ncu(path):
    """(kernel name, duration ns) for every gpu__time_duration.sum row of an ncu --csv output."""
    with open(path, newline="", errors="replace") as f:
        lines = f.read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        raise SystemExit(f"{path}: no ncu CSV header (a line starting with \"ID\") found")
    body = [l for l in lines[start:] if l.startswith('"')]  # drop ==PROF== and program lines
    rows = []
    for row in csv.DictReader(io.StringIO("\n".join(body))):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = UNITS.get((row.get("Metric Unit") or "nsecond").strip())
        if unit is None:
            raise SystemExit(f"{path}: unknown unit {row.get('Metric Unit')!r}")
        value = float((row.get("Metric Value") or "0").replace(",", ""))
        rows.append((row.get("Kernel Name", ""), value * unit))
    return rows


def read_kernels(path):
    ids = {}
    if path:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                ids[int(row["id"])] = row["path"]
    return ids


def attribute(name, leaves, ids):
    """The leaf path a kernel belongs to and how it was found, or (None, why)."""
    tokens = [t for t in re.split(r"[/@:\s\"]+", name) if t]
    hits = {leaves[t] for t in tokens if t in leaves}
    if len(hits) == 1:
        return hits.pop(), "nvtx"
    m = re.search(r"spin_kernel<(\d+)>", name)
    if m:
        k = int(m.group(1))
        if k == 0:
            return None, "warm-up"
        if k in ids:
            return ids[k], "kernel-id"
    return None, "unattributed"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report", required=True)
    ap.add_argument("--ncu", required=True)
    ap.add_argument("--kernels")
    ap.add_argument("--subtree", action="append", default=[])
    ap.add_argument("--tolerance", type=float, default=0.10)
    a = ap.parse_args()

    report = read_report(a.report)
    ids = read_kernels(a.kernels)
    timed = {p: v for p, v in report.items() if v[0] > 0}
    if not timed:
        print(f"FAIL: {a.report} has no path with a GPU time")
        return 1
    # Leaves: paths with no child; keyed by their last component (the example keeps them unique).
    leaves = {p.rsplit("/", 1)[-1]: p for p in timed if not any(q.startswith(p + "/") for q in timed)}

    sums, kernels, methods = {}, {}, {}
    for name, ns in read_ncu(a.ncu):
        leaf, how = attribute(name, leaves, ids)
        methods[how] = methods.get(how, 0) + 1
        if leaf is None:
            continue
        parts = leaf.split("/")
        for i in range(1, len(parts) + 1):
            p = "/".join(parts[:i])
            sums[p] = sums.get(p, 0.0) + ns
            kernels[p] = kernels.get(p, 0) + 1
    print(f"ncu rows by attribution: {methods}")
    if methods.get("kernel-id"):
        print("note: some kernels were not renamed after an NVTX range; they were mapped by kernel id")

    failures, compared = 0, 0
    print(f"{'path':34} {'report GPU':>12} {'ncu sum':>12} {'diff':>8} {'kernels':>8}  result")
    for path in sorted(timed):
        count, total, _ = timed[path]
        ncu_ns = sums.get(path, 0.0)
        if ncu_ns <= 0:
            print(f"{path:34} {total / 1e6:>10.3f}ms {'-':>12} {'-':>8} {0:>8}  FAIL (ncu attributed no kernel)")
            failures += 1
            continue
        diff = (total - ncu_ns) / ncu_ns
        ok = abs(diff) <= a.tolerance
        compared += 1
        failures += 0 if ok else 1
        print(f"{path:34} {total / 1e6:>10.3f}ms {ncu_ns / 1e6:>10.3f}ms {100 * diff:>+7.2f}% {kernels[path]:>8}  "
              f"{'ok' if ok else 'FAIL'}")

    for spec in a.subtree:
        path, _, file = spec.partition("=")
        rows = read_ncu(file)
        ncu_ns = sum(ns for _, ns in rows)
        if path not in timed or not rows:
            print(f"--nvtx-include {path}: FAIL ({len(rows)} kernels profiled; report has "
                  f"{'a' if path in timed else 'no'} GPU time for it)")
            failures += 1
            continue
        total = timed[path][1]
        diff = (total - ncu_ns) / ncu_ns
        ok = abs(diff) <= a.tolerance
        compared += 1
        failures += 0 if ok else 1
        print(f"--nvtx-include {path}: {len(rows)} kernels, ncu {ncu_ns / 1e6:.3f} ms, report {total / 1e6:.3f} ms, "
              f"{100 * diff:+.2f}%  {'ok' if ok else 'FAIL'}")

    verdict = "PASS" if failures == 0 and compared > 0 else "FAIL"
    print(f"{verdict}: {compared} comparisons, {failures} outside {100 * a.tolerance:.0f}%")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
