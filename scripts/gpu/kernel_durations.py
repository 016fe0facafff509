#!/usr/bin/env python3
"""Median duration per kernel kind by each measure (kernel_durations.sh's OUTDIR), and ncu's
difference from CUPTI's concurrent-kernel records.

  kernel_durations.py OUTDIR
"""
import collections
import csv
import statistics
import sys
from pathlib import Path

UNITS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}


def program_rows(path):
    """[(kernel, duration ns or None)] from one run of kernel_durations."""
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith("#") or not line:
            continue
        _, kernel, ns = line.split(",")
        rows.append((kernel, float(ns) if ns else None))
    return rows


def ncu_durations(path):
    """gpu__time_duration of every profiled kernel, in launch order."""
    lines = [l for l in path.read_text().splitlines() if l.startswith('"')]
    out = []
    for r in csv.DictReader(lines):
        if r.get("Metric Name") == "gpu__time_duration.sum":
            out.append(float(r["Metric Value"].replace(",", "")) * UNITS[r["Metric Unit"]])
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = Path(sys.argv[1])
    kernels = [k for k, _ in program_rows(d / "none.csv")]
    ncu = ncu_durations(d / "ncu.csv")
    if len(ncu) != 2 * len(kernels):  # both passes are profiled; the second is compared
        sys.exit(f"ncu profiled {len(ncu)} kernels, expected {2 * len(kernels)}")
    by = collections.OrderedDict((k, collections.defaultdict(list)) for k in kernels)
    for k, ns in zip(kernels, ncu[len(kernels):]):
        by[k]["ncu"].append(ns)
    measures = ["ncu", "concurrent", "concurrent-sync", "serial", "serial-sync"]
    for m in measures[1:]:
        for f in sorted(d.glob(f"{m}.*.csv")):
            rows = program_rows(f)
            if [k for k, _ in rows] != kernels:
                sys.exit(f"{f}: not the same kernel sequence")
            for k, ns in rows:
                by[k][m].append(ns)
    print("| kernel | " + " | ".join(f"{m} (µs)" for m in measures) + " | ncu − concurrent (µs) |")
    print("|---|" + "---:|" * (len(measures) + 1))
    for k, got in by.items():
        med = {m: statistics.median(got[m]) / 1e3 for m in measures if got[m]}
        cells = [f"{med[m]:.2f}" if m in med else "–" for m in measures]
        diff = med["ncu"] - med["concurrent"] if "concurrent" in med else float("nan")
        print(f"| {k} | " + " | ".join(cells) + f" | {diff:+.2f} |")


if __name__ == "__main__":
    main()
