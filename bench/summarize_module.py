#!/usr/bin/env python3
"""Ratio table for bench_module*.json: each module-hook benchmark against its plain-range (or direct
call) baseline measured in the same process, median of the repetitions (CPU time).

usage: summarize_module.py <label>=<file.json> [...]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summarize  # noqa: E402  (the same JSON reader as the range table)

# (benchmark, baseline, what the ratio says)
PAIRS = [
    ("BM_ModuleScope_default_hooks", "BM_ScopedRange_static", "ModuleScope vs ScopedRange (target <= 1.3 with no tool)"),
    ("BM_ModuleScope_nested3", "BM_ScopedRange_nested3", "3 nested ModuleScopes vs 3 nested ScopedRanges"),
    ("BM_Hooked_call", "BM_ScopedRange_around_direct_call", "Hooked call vs ScopedRange + direct call"),
    ("BM_Hooked_call", "BM_direct_call", "Hooked call vs direct call"),
    ("BM_instrument_call", "BM_direct_call", "instrument() call vs direct call"),
    ("BM_ModuleScope_tracked", "BM_ScopedRange_static", "ModuleScope with paths tracked vs ScopedRange"),
    ("BM_ModuleScope_one_global_hook", "BM_ScopedRange_static", "ModuleScope + 1 user hook vs ScopedRange"),
    ("BM_Hooked_call_one_instance_hook", "BM_ScopedRange_around_direct_call", "Hooked + 1 instance hook vs ScopedRange + call"),
]


def load(path):
    return summarize.load(path)[1]


def main(argv):
    print("| binary | comparison | ns/iter | baseline ns/iter | ratio |")
    print("|---|---|---:|---:|---:|")
    for arg in argv[1:]:
        label, path = arg.split("=", 1)
        t = load(path)
        for bench, base, what in PAIRS:
            if bench in t and base in t and t[base] > 0:
                print(f"| {label} | {what} | {t[bench]:.2f} | {t[base]:.2f} | {t[bench] / t[base]:.2f} |")
    print()
    print("| binary | benchmark | ns/iter |")
    print("|---|---|---:|")
    for arg in argv[1:]:
        label, path = arg.split("=", 1)
        for name, v in load(path).items():
            print(f"| {label} | {name.replace('BM_', '')} | {v:.2f} |")


if __name__ == "__main__":
    main(sys.argv)
