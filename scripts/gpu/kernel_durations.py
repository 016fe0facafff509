#!/usr/bin/env python3
"""Median duration per kernel kind by each measure (kernel_durations.sh's OUTDIR), and ncu's
difference from CUPTI's concurrent-kernel records.

  kernel_durations.py OUTDIR
"""
import collections
import statistics
import sys
from pathlib import Path

import compare_cupti_ncu  # its reader of ncu's CSV, beside this file


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
    return [ns for _, ns, _ in compare_cupti_ncu.parse_ncu_csv(path)]


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
