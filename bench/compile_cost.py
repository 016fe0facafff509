#!/usr/bin/env python3
"""Compile cost of nsightkit's public headers: wall time, CPU time and peak memory per header.

For each public header <nsightkit/X.hpp> a translation unit that only includes it is compiled
(object code thrown away), plus one TU that uses a range (`NSIGHTKIT_RANGE("step {}", i)`), with
g++ and with nvcc (-x cu), each against the baseline TU that includes only <nvtx3/nvtx3.hpp>.
Each compile is repeated; the table shows the median and the min-max of the repetitions.

Peak memory is the largest resident set of the compiler and the processes it waited for
(cc1plus, as, cicc, ptxas, ...), read from wait4()'s rusage of each compile, in MB (10^6 bytes).

usage:
  bench/compile_cost.py [--tree LABEL=INCLUDE_DIR ...] [--compiled-tree LABEL=INCLUDE_DIR ...]
                        [--compiler gxx|nvcc ...] [--repeat N] [--json FILE] [--markdown FILE]
  bench/compile_cost.py --time-trace OUT_DIR [--tree LABEL=INCLUDE_DIR]   (clang++ -ftime-trace)

Several trees (e.g. the include dir of a `git worktree` at an older commit and the working tree)
are measured in one run, interleaved per repetition so load on a shared machine hits them alike.
A --compiled-tree is compiled with -DNSIGHTKIT_COMPILED (the compiled mode: the heavy parts are
in src/nsightkit.cpp, compiled once per program, which is not measured here).
Standard library only.
"""

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CUDA_INCLUDE = Path("/usr/local/cuda/include")
BASELINE = "baseline: <nvtx3/nvtx3.hpp>"
RANGE_USE = "range.hpp + NSIGHTKIT_RANGE use"

# Targets from the redesign (g++ -O2): header -> (seconds, MB).
TARGETS = {"nsightkit.hpp": (1.5, 150.0), "range.hpp": (1.0, None)}


def tu_source(header):
    """The translation unit's text for one row of the table."""
    if header == BASELINE:
        return "#include <nvtx3/nvtx3.hpp>\n"
    if header == RANGE_USE:
        return ('#include <nsightkit/range.hpp>\n'
                'void nsightkit_compile_cost_use(int i) { NSIGHTKIT_RANGE("step {}", i); }\n')
    return f"#include <nsightkit/{header}>\n"


def compiler_command(kind, args, include_dir, source, obj, defines=()):
    common = ["-O2", "-std=c++17"] + [f"-D{d}" for d in defines] + [
        f"-I{include_dir}", f"-I{args.cuda_include}", "-c", str(source), "-o", str(obj)]
    if kind == "gxx":
        return [args.cxx, "-x", "c++"] + common
    if kind == "nvcc":
        return [args.nvcc, "-x", "cu", f"-arch={args.arch}"] + common
    raise ValueError(kind)


def run_measured(cmd):
    """Runs cmd; returns (exit code, wall s, user+sys s, peak RSS MB, stderr text)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        # wait4 gives this child's own rusage (it includes the processes it waited for), so
        # repetitions do not see each other's peak as RUSAGE_CHILDREN would.
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode(errors="replace")
    # ru_maxrss is in KiB on Linux.
    return proc.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024 / 1e6, text


def public_headers(include_dir):
    root = Path(include_dir) / "nsightkit"
    if not root.is_dir():
        sys.exit(f"compile_cost: {root} is not a directory (expected an include dir holding nsightkit/)")
    return sorted(p.name for p in root.glob("*.hpp"))


def tool_version(cmd):
    try:
        out = subprocess.run(cmd + ["--version"], capture_output=True, text=True, check=False).stdout
    except OSError as e:
        return f"unavailable ({e})"
    lines = [l for l in out.splitlines() if l.strip()]
    if not lines:
        return "unknown"
    # nvcc prints its release on the line before last.
    return lines[-2].strip() if "nvcc" in Path(cmd[0]).name else lines[0].strip()


def summarize(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure(args, trees, compilers):
    rows = {}  # (tree, compiler, header) -> {"wall": [...], "cpu": [...], "rss": [...], "error": str}
    plan = []
    for label, inc, defines in trees:
        headers = [BASELINE] + public_headers(inc) + [RANGE_USE]
        if args.header:
            headers = [h for h in headers if h == BASELINE or any(f in h for f in args.header)]
        for comp in compilers:
            for h in headers:
                plan.append((label, inc, defines, comp, h))
    with tempfile.TemporaryDirectory(prefix="nsk-compile-cost-") as tmp:
        tmp = Path(tmp)
        for rep in range(args.repeat):
            for i, (label, inc, defines, comp, h) in enumerate(plan):
                key = (label, comp, h)
                row = rows.setdefault(key, {"wall": [], "cpu": [], "rss": [], "error": None})
                if row["error"]:
                    continue
                src = tmp / f"tu{i}.{'cu' if comp == 'nvcc' else 'cpp'}"
                src.write_text(tu_source(h))
                cmd = compiler_command(comp, args, inc, src, tmp / f"tu{i}.o", defines)
                row["command"] = " ".join(shlex.quote(c) for c in cmd)
                rc, wall, cpu, rss, err = run_measured(cmd)
                if rc != 0:
                    first = next((l for l in err.splitlines() if "error" in l), err.strip()[:200])
                    row["error"] = f"exit {rc}: {first}"
                    print(f"  {label} {comp} {h}: FAILED {row['error']}", file=sys.stderr)
                    continue
                row["wall"].append(wall)
                row["cpu"].append(cpu)
                row["rss"].append(rss)
                if args.verbose:
                    print(f"  [{rep + 1}/{args.repeat}] {label:>14} {comp:>4} {h:<34} "
                          f"{wall:6.2f} s {rss:7.1f} MB", file=sys.stderr)
    results = []
    for (label, comp, h), row in rows.items():
        entry = {"tree": label, "compiler": comp, "header": h, "command": row.get("command"),
                 "error": row["error"], "runs": len(row["wall"])}
        if row["wall"] and not row["error"]:
            entry["wall_s"] = summarize(row["wall"])
            entry["cpu_s"] = summarize(row["cpu"])
            entry["peak_mb"] = summarize(row["rss"])
        results.append(entry)
    # Cost over the baseline of the same tree and compiler.
    base = {(r["tree"], r["compiler"]): r for r in results if r["header"] == BASELINE}
    for r in results:
        b = base.get((r["tree"], r["compiler"]))
        if b and "wall_s" in r and "wall_s" in b:
            r["over_baseline"] = {"wall_s": r["wall_s"]["median"] - b["wall_s"]["median"],
                                  "peak_mb": r["peak_mb"]["median"] - b["peak_mb"]["median"],
                                  "cpu_ratio": r["cpu_s"]["median"] / max(b["cpu_s"]["median"], 1e-9)}
    return results


def target_note(r):
    """The redesign's targets, judged on CPU time (user + sys: the steadier number on a shared
    machine, and what an idle machine's wall time approaches) and peak memory."""
    t = TARGETS.get(r["header"])
    if not t or r["compiler"] != "gxx" or "wall_s" not in r:
        return ""
    secs, mb = t
    parts = [f"{'met' if r['cpu_s']['median'] <= secs else 'MISSED'} ≤ {secs:g} s"]
    if mb is not None:
        parts.append(f"{'met' if r['peak_mb']['median'] <= mb else 'MISSED'} ≤ {mb:g} MB")
    return ", ".join(parts)


def markdown_table(results):
    lines = ["| tree | compiler | TU includes | wall s median (min–max) | CPU s median | "
             "peak MB median (min–max) | Δ wall s vs baseline | Δ MB vs baseline | CPU × baseline | "
             "target (g++ CPU s, MB) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        name = r["header"] if r["header"] in (BASELINE, RANGE_USE) else f"<nsightkit/{r['header']}>"
        comp = {"gxx": "g++", "nvcc": "nvcc"}[r["compiler"]]
        if "wall_s" not in r:
            lines.append(f"| {r['tree']} | {comp} | {name} | failed: {r['error']} | | | | | | |")
            continue
        w, c, m = r["wall_s"], r["cpu_s"], r["peak_mb"]
        ob = r.get("over_baseline")
        dw = f"{ob['wall_s']:+.2f}" if ob and r["header"] != BASELINE else ""
        dm = f"{ob['peak_mb']:+.0f}" if ob and r["header"] != BASELINE else ""
        cr = f"{ob['cpu_ratio']:.1f}" if ob and r["header"] != BASELINE else ""
        lines.append(f"| {r['tree']} | {comp} | {name} | {w['median']:.2f} ({w['min']:.2f}–{w['max']:.2f}) "
                     f"| {c['median']:.2f} | {m['median']:.0f} ({m['min']:.0f}–{m['max']:.0f}) "
                     f"| {dw} | {dm} | {cr} | {target_note(r)} |")
    return "\n".join(lines)


def time_trace(args, include_dir, out_dir):
    """clang++ -ftime-trace on a TU including nsightkit.hpp; prints where the front-end time goes."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    src = out_dir / "nsightkit_umbrella.cpp"
    src.write_text(tu_source("nsightkit.hpp"))
    obj = out_dir / "nsightkit_umbrella.o"
    cmd = [args.clang, "-x", "c++", "-O2", "-std=c++17", "-ftime-trace",
           "-ftime-trace-granularity=100", f"-I{include_dir}", f"-I{args.cuda_include}",
           "-c", str(src), "-o", str(obj)]
    print("$ " + " ".join(shlex.quote(c) for c in cmd))
    rc, wall, cpu, rss, err = run_measured(cmd)
    if rc != 0:
        sys.exit(f"compile_cost: clang++ failed (exit {rc}):\n{err}")
    trace_file = obj.with_suffix(".json")
    try:
        events = json.loads(trace_file.read_text())["traceEvents"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"compile_cost: cannot read the time trace {trace_file}: {e}")
    print(f"wall {wall:.2f} s, CPU {cpu:.2f} s, peak {rss:.0f} MB; trace: {trace_file}")
    totals = {e["name"]: e["dur"] / 1e6 for e in events
              if e.get("ph") == "X" and e.get("name", "").startswith("Total ")}
    print("\nPhase totals (s):")
    for name in ("Total ExecuteCompiler", "Total Frontend", "Total Source", "Total ParseClass",
                 "Total InstantiateClass", "Total InstantiateFunction", "Total PerformPendingInstantiations",
                 "Total CodeGen Function", "Total Backend", "Total OptModule"):
        if name in totals:
            print(f"  {name:<38} {totals[name]:6.2f}")
    # "Source" events nest: each is the inclusive time of parsing one #include. Report the
    # inclusive time per header (largest first), outermost occurrence only.
    sources = [e for e in events if e.get("ph") == "X" and e.get("name") == "Source"]
    per_file = {}
    for e in sources:
        f = e.get("args", {}).get("detail", "?")
        per_file[f] = per_file.get(f, 0.0) + e["dur"] / 1e6
    print("\nInclusive parse time per included file (s, top 25):")
    for f, s in sorted(per_file.items(), key=lambda kv: -kv[1])[:25]:
        print(f"  {s:6.3f}  {f}")
    # Instantiation and code generation, grouped by the first template/namespace word.
    for kind in ("InstantiateFunction", "InstantiateClass", "CodeGen Function", "OptFunction"):
        items = [e for e in events if e.get("ph") == "X" and e.get("name") == kind]
        if not items:
            continue
        agg = {}
        for e in items:
            d = e.get("args", {}).get("detail", "?")
            agg[d] = agg.get(d, 0.0) + e["dur"] / 1e6
        print(f"\n{kind} (s, top 10 of {len(items)} events over the granularity):")
        for d, s in sorted(agg.items(), key=lambda kv: -kv[1])[:10]:
            print(f"  {s:6.3f}  {d[:140]}")
    return 0


def parse_tree(text, defines=()):
    if "=" not in text:
        sys.exit(f"compile_cost: --tree wants LABEL=INCLUDE_DIR, got {text!r}")
    label, path = text.split("=", 1)
    path = Path(path).resolve()
    if not (path / "nsightkit").is_dir():
        sys.exit(f"compile_cost: --tree {label}: {path} holds no nsightkit/ folder")
    return label, path, tuple(defines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", default=[], metavar="LABEL=INCLUDE_DIR",
                    help="an include dir to measure (repeatable); default: this checkout's include/")
    ap.add_argument("--compiled-tree", action="append", default=[], metavar="LABEL=INCLUDE_DIR",
                    help="an include dir to measure with -DNSIGHTKIT_COMPILED (repeatable)")
    ap.add_argument("--compiler", action="append", choices=["gxx", "nvcc"], default=[],
                    help="compilers to use (repeatable); default: gxx and nvcc")
    ap.add_argument("--header", action="append", default=[],
                    help="only headers whose name contains this text (repeatable; baseline always runs)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--clang", default="clang++")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--cuda-include", default=str(DEFAULT_CUDA_INCLUDE))
    ap.add_argument("--json", metavar="FILE", help="write the results as JSON")
    ap.add_argument("--markdown", metavar="FILE", help="write the table as Markdown")
    ap.add_argument("--time-trace", metavar="OUT_DIR",
                    help="instead: one clang++ -ftime-trace compile of <nsightkit/nsightkit.hpp>")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every compile")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if not Path(args.cuda_include, "nvtx3", "nvtx3.hpp").is_file():
        ap.error(f"--cuda-include {args.cuda_include} holds no nvtx3/nvtx3.hpp")
    trees = [parse_tree(t) for t in args.tree]
    trees += [parse_tree(t, ["NSIGHTKIT_COMPILED"]) for t in args.compiled_tree]
    if not trees:
        trees = [("working tree", (REPO / "include").resolve(), ())]
    if args.time_trace:
        return time_trace(args, trees[0][1], args.time_trace)
    compilers = args.compiler or ["gxx", "nvcc"]

    info = {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": platform.node(), "cpus": os.cpu_count(),
        "load_average_at_start": os.getloadavg(),
        "g++": tool_version([args.cxx]) if "gxx" in compilers else None,
        "nvcc": tool_version([args.nvcc]) if "nvcc" in compilers else None,
        "repeat": args.repeat,
        "trees": {label: str(path) + "".join(f" -D{d}" for d in defines)
                  for label, path, defines in trees},
        "command_line": " ".join(shlex.quote(a) for a in sys.argv),
    }
    results = measure(args, trees, compilers)
    info["load_average_at_end"] = os.getloadavg()
    table = markdown_table(results)
    print(f"# compile cost ({info['date_utc']}, {info['cpus']} CPUs, load "
          f"{info['load_average_at_start'][0]:.1f} -> {info['load_average_at_end'][0]:.1f})")
    print(f"# g++: {info['g++']}; nvcc: {info['nvcc']}; {args.repeat} repetitions")
    print(table)
    if args.json:
        Path(args.json).write_text(json.dumps({"info": info, "results": results}, indent=2) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    return 1 if any(r["error"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
