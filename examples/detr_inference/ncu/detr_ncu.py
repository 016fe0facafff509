#!/usr/bin/env python3
"""Per-module DRAM traffic and duration from Nsight Compute, for examples/detr_inference.

  detr_ncu.py pick --report report.json [--top 3]
      the heaviest top-level modules of an nsightkit report (summary JSON), by GPU time (CPU
      time where no GPU time was recorded), one per line; the loop's own rows (to_host,
      postprocess, loader, prefetch ...) are not modules and are skipped

  detr_ncu.py summarize [--report report.json] --module PATH=NCU.csv [--module ...] [--markdown F]
      for each module: the kernels of one `ncu --nvtx --nvtx-include "nsightkit@PATH/" --csv
      --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum` run, summed:
      DRAM bytes read, written, read + written, the sum of kernel durations, the achieved DRAM
      bandwidth (bytes / duration) and the time per MB moved; with --report, the report's GPU
      time of the same path per iteration beside it. Then how well duration follows the bytes
      moved across modules (Pearson r, and the spread of microseconds per MB): whether a module's
      latency is proportional to its DRAM transfer size.

The report is read by nsightkit's reader, python/nsightkit/report_file.py. Python standard library only.
Exit status 1 when a file has no kernel rows, 2 when the report cannot be read.
"""
import argparse
import csv
import io
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from nsightkit import report_file as nkr  # noqa: E402

METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum")
BYTE_UNITS = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
              "kibyte": 1024, "mibyte": 1024 ** 2, "gibyte": 1024 ** 3}
TIME_UNITS = {"nsecond": 1, "ns": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
              "second": 1e9, "s": 1e9}
LOOP_ROWS = {"to_host", "postprocess", "loader"}


def read_ncu(path):
    """{kernel id: {"name": str, metric: value in bytes or ns}} from an ncu --csv output."""
    with open(path, newline="", errors="replace") as f:
        lines = f.read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return {}
    body = [l for l in lines[start:] if l.startswith('"')]  # skip ==PROF== and program lines
    kernels = {}
    for row in csv.DictReader(io.StringIO("\n".join(body))):
        metric = row.get("Metric Name")
        if metric not in METRICS:
            continue
        unit = (row.get("Metric Unit") or "").strip().lower()
        text = (row.get("Metric Value") or "").replace(",", "").strip()
        try:
            value = float(text)
        except ValueError:
            raise SystemExit(f"{path}: kernel {row.get('ID')}: {metric} = {text!r} is not a number")
        scale = TIME_UNITS.get(unit) if metric.startswith("gpu__time") else BYTE_UNITS.get(unit)
        if scale is None:
            raise SystemExit(f"{path}: unknown unit {unit!r} for {metric}")
        k = kernels.setdefault(row.get("ID"), {"name": row.get("Kernel Name", "")})
        k[metric] = value * scale
    return kernels


def summarize_module(path):
    kernels = read_ncu(path)
    total = {m: sum(k.get(m, 0.0) for k in kernels.values()) for m in METRICS}
    missing = [m for m in METRICS if any(m not in k for k in kernels.values())]
    names = {}
    for k in kernels.values():
        short = k["name"].split("(")[0].split("<")[0].strip()
        short = (short[5:] if short.startswith("void ") else short) or "?"
        names[short] = names.get(short, 0) + 1
    return {"kernels": len(kernels), "read": total[METRICS[0]], "write": total[METRICS[1]],
            "ns": total[METRICS[2]], "missing": missing, "names": names}


def report_rows(path):
    """{path: PathRow} of the report's merged rows; exits 2 naming the problem when unreadable."""
    try:
        return nkr.read_summary(path).by_path()
    except nkr.ReportError as e:
        print(f"detr_ncu: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


def pick(args):
    rows = report_rows(args.report)
    # ncu's filter "nsightkit@PATH/" selects ranges of nsightkit's domain only.
    top = [r for p, r in rows.items() if r.depth == 0 and p not in LOOP_ROWS
           and not p.startswith("prefetch") and r.domain == nkr.DEFAULT_DOMAIN]

    def weight(r):
        return r.gpu.total_ns if r.gpu is not None and r.gpu.count else r.total_ns

    top.sort(key=weight, reverse=True)
    for r in top[: args.top]:
        print(r.path)
    return 0 if top else 1


def pearson(xs, ys):
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / math.sqrt(sxx * syy)


def summarize(args):
    rows = report_rows(args.report) if args.report else {}
    table = []
    failed = False
    for spec in args.module:
        if "=" not in spec:
            raise SystemExit(f"--module {spec!r}: expected PATH=FILE")
        module, path = spec.split("=", 1)
        s = summarize_module(path)
        if s["kernels"] == 0:
            print(f"FAIL: {path}: no kernel rows (did the --nvtx-include filter match? see the ncu log)")
            failed = True
            continue
        if s["missing"]:
            print(f"note: {module}: some kernels lack {', '.join(s['missing'])} (counted as 0)")
        gpu_ns = None
        r = rows.get(module)
        if r is not None and r.gpu is not None and r.gpu.count:
            gpu_ns = r.gpu.total_ns / r.gpu.count  # per call = per iteration (one call per forward)
        table.append((module, s, gpu_ns))

    header = ("| module | kernels | DRAM read (MB) | DRAM write (MB) | DRAM read+write (MB) | "
              "ncu duration, sum (us) | DRAM GB/s | us per MB | report GPU time per iteration (us) |")
    lines = [header, "|" + "---|" * 9]
    for module, s, gpu_ns in table:
        total = s["read"] + s["write"]
        us = s["ns"] / 1e3
        gbps = total / s["ns"] if s["ns"] > 0 else float("nan")  # bytes/ns = GB/s
        per_mb = us / (total / 1e6) if total > 0 else float("nan")
        lines.append(f"| `{module}` | {s['kernels']} | {s['read'] / 1e6:.1f} | {s['write'] / 1e6:.1f} | "
                     f"{total / 1e6:.1f} | {us:.1f} | {gbps:.0f} | {per_mb:.2f} | "
                     + (f"{gpu_ns / 1e3:.1f} |" if gpu_ns is not None else "n/a |"))
    text = "\n".join(lines)
    print(text)
    for module, s, _ in table:
        kinds = ", ".join(f"{n} x{c}" for n, c in sorted(s["names"].items(), key=lambda kv: -kv[1])[:6])
        print(f"  {module}: {kinds}")
    xs = [s["read"] + s["write"] for _, s, _ in table]
    ys = [s["ns"] for _, s, _ in table]
    r = pearson(xs, ys)
    per_mb = [y / 1e3 / (x / 1e6) for x, y in zip(xs, ys) if x > 0]
    extra = []
    if per_mb:
        extra.append(f"us per MB moved: {min(per_mb):.2f} .. {max(per_mb):.2f} across {len(per_mb)} modules")
    extra.append(f"Pearson r(DRAM bytes, duration) = {r:.3f}" if r is not None
                 else "Pearson r needs 3 or more modules with varying values")
    for e in extra:
        print(e)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n\n" + "\n".join(extra) + "\n")
    return 1 if failed or not table else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pick")
    p.add_argument("--report", required=True)
    p.add_argument("--top", type=int, default=3)
    s = sub.add_parser("summarize")
    s.add_argument("--report")
    s.add_argument("--module", action="append", default=[], required=True)
    s.add_argument("--markdown")
    a = ap.parse_args()
    return pick(a) if a.command == "pick" else summarize(a)


if __name__ == "__main__":
    sys.exit(main())
