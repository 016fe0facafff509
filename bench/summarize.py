#!/usr/bin/env python3
"""Turns Google Benchmark JSON files into a Markdown table of ratios against baselines measured in
the same process: BM_raw_nvtx_push_pop ("raw pair") and BM_empty_loop ("empty loop").

usage: summarize.py <label>=<file.json> [...]
Uses the median aggregate when the run had --benchmark_repetitions, else the single value."""
import json
import sys


def load(path):
    with open(path) as f:
        data = json.load(f)
    times = {}
    for b in data["benchmarks"]:
        name = b.get("run_name", b["name"])
        agg = b.get("aggregate_name")
        if agg not in (None, "median"):
            continue
        if agg is None and name in times:
            continue  # keep the median when both are present
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        times[name] = b["cpu_time"] * scale
    return data.get("context", {}), times


def main(argv):
    print("| binary | benchmark | ns/iter | × raw pair | × empty loop |")
    print("|---|---|---:|---:|---:|")
    for arg in argv[1:]:
        label, path = arg.split("=", 1)
        _, times = load(path)
        raw = times.get("BM_raw_nvtx_push_pop")
        empty = times.get("BM_empty_loop")
        for name, t in times.items():
            r = f"{t / raw:.2f}" if raw else "–"
            e = f"{t / empty:.2f}" if empty else "–"
            print(f"| {label} | {name.replace('BM_', '')} | {t:.2f} | {r} | {e} |")


if __name__ == "__main__":
    main(sys.argv)
