#!/usr/bin/env python3
"""Compile cost of nsightkit's public headers: CPU time, wall time and peak memory per header.

For each public header <nsightkit/X.hpp> a translation unit that only includes it is compiled
(object code thrown away), plus the translation unit issue 33 sets targets for: <nsightkit/
nsightkit.hpp> with a formatted range, a ModuleScope and a CaptureWindow step (USE below). Each is
compiled in three configurations, against a baseline TU that includes only <nvtx3/nvtx3.hpp>:

  default      what a consumer of the installed package compiles with (CMake's nsightkit::nsightkit
               and pkg-config's nsightkit.pc alike): -DNSIGHTKIT_COMPILED; libnsightkit holds the
               engine and is compiled once per program, so it is not measured here
  disabled     the same with -DNSIGHTKIT_DISABLE
  header-only  a plain -I user: nsightkit's headers alone, every TU holding the engine

with g++ -O2, clang++ -O2 and nvcc -O2 (-x cu), all with -std=c++17, -I<include dir> and
-isystem <CUDA include dir> (NVTX3's headers, as CMake's CUDA::nvtx3 gives them). Every compile is
repeated and interleaved with all the others (so load on a shared machine hits them alike); the
table shows medians, and the ratio to the baseline also from the best (smallest) CPU times. CPU
time is user + sys of the compiler and every process it waited for (the steadier number on a
shared machine, and what an idle machine's wall time approaches); peak memory is the largest
resident set among them, from wait4()'s rusage, in MB (10^6 bytes).

Three floors are measured once per compiler, like the baseline (FLOORS below): <string> with
{fmt}'s light header (what a formatted range needs where it is written); the standard, CUDA and
{fmt} headers the public types need; and those with what a formatted range must do where it is
written ({fmt}'s compile-time check of the format string, its argument captured): what no
restructuring of nsightkit's headers can remove from the target translation unit.

usage:
  bench/compile_cost.py [--tree LABEL=INCLUDE_DIR ...] [--config default|disabled|header-only ...]
                        [--compiler gxx|clang|nvcc ...] [--header TEXT ...] [--repeat N]
                        [--json FILE] [--markdown FILE]
  bench/compile_cost.py --time-trace OUT_DIR [--tree LABEL=INCLUDE_DIR] [--config ...]
                        (one clang++ -ftime-trace compile of the USE translation unit)
  bench/compile_cost.py --instructions [--jobs N] [--tree ...] [--config ...] [--compiler ...]
                        [--header TEXT ...] [--markdown FILE] [--json FILE]
                        (instructions instead of times: each compile once under valgrind's
                        callgrind, every process the compiler starts counted; deterministic, so
                        independent of the load of a shared machine, and slow: nvcc takes minutes)

Several trees (e.g. the include dir of a `git worktree` at an older commit and the working tree)
are measured in one run. Standard library only.
"""

import argparse
import concurrent.futures
import json
import os
import platform
import re
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
USE = "nsightkit.hpp: range, ModuleScope, CaptureWindow"
# Floors, measured once per compiler like the baseline: what no header restructuring can remove.
# A formatted range needs {fmt}'s light header and std::string where it is written; the public
# types need std::function (callbacks and hooks, from the light header nsightkit uses:
# detail/function.hpp), std::optional, std::vector, std::string, std::atomic, std::chrono
# (ReportOptions), std::thread::id (ModuleInfo), std::shared_ptr (HookHandle), std::runtime_error
# (CudaError), std::pmr::memory_resource (the pinned resource) and the CUDA runtime's types; the
# target translation unit also checks a format string against its argument at compile time and
# captures the argument, which {fmt} does in the TU that writes the range (FLOOR_USE).
FMT_LIGHT = "#if __has_include(<fmt/base.h>)\n#include <fmt/base.h>\n#else\n#include <fmt/core.h>\n#endif\n"
# nsightkit's own light std::function header (it includes nothing else of nsightkit's but
# config.hpp), so the floor follows it rather than a copy of its rule; <functional> for a tree
# from before it.
FUNCTION_LIGHT = """#if __has_include(<nsightkit/detail/function.hpp>)
#include <nsightkit/detail/function.hpp>
#else
#include <functional>
#endif
"""
FLOOR_FMT = "floor: <string> + {fmt}'s core.h"
FLOOR_API = "floor: the headers the public types need"
FLOOR_USE = "floor: those + a checked formatted range"
FLOOR_API_TEXT = "".join(f"#include <{h}>\n" for h in (
    "atomic", "chrono", "cstdint", "memory", "memory_resource", "optional", "stdexcept", "string",
    "string_view", "thread", "vector")) + FUNCTION_LIGHT + FMT_LIGHT + \
    "#if __has_include(<cuda_runtime_api.h>)\n#include <cuda_runtime_api.h>\n#endif\n"
FLOORS = {
    FLOOR_FMT: "#include <string>\n" + FMT_LIGHT,
    FLOOR_API: FLOOR_API_TEXT,
    # What NSIGHTKIT_RANGE("step {}", i) must do where it is written, nothing of nsightkit's.
    FLOOR_USE: FLOOR_API_TEXT + """void nsightkit_floor_format(fmt::string_view, fmt::format_args) noexcept;
int nsightkit_floor_use(int i) {
  struct S : fmt::detail::compile_string {
    using char_type [[maybe_unused]] = char;
    constexpr operator fmt::string_view() const { return {"step {}", 7}; }
  };
  fmt::format_string<int&> const f{S{}};
  nsightkit_floor_format(f, fmt::make_format_args(i));
  return i;
}
""",
}

# The configurations and the macros each defines.
CONFIGS = {
    "default": ("NSIGHTKIT_COMPILED",),
    "disabled": ("NSIGHTKIT_COMPILED", "NSIGHTKIT_DISABLE"),
    "header-only": (),
}

# Issue 33's targets for the USE translation unit, as multiples of the baseline's CPU time and
# peak memory (None: no target), per configuration; every compiler.
TARGETS = {"default": (1.5, 2.0), "disabled": (1.2, None)}


def tu_source(header):
    """The translation unit's text for one row of the table."""
    if header == BASELINE:
        return "#include <nvtx3/nvtx3.hpp>\n"
    if header in FLOORS:
        return FLOORS[header]
    if header == USE:
        return """#include <nsightkit/nsightkit.hpp>
struct Layer {
  int forward(int x) { return x + 1; }
};
int nsightkit_compile_cost_use(int n) {
  nsightkit::CaptureWindow window{nsightkit::CaptureSchedule{}};
  int acc = 0;
  for (int i = 0; i < n; ++i) {
    auto step = window.step();
    NSIGHTKIT_RANGE("step {}", i);
    nsightkit::ModuleScope scope{"layer"};
    acc += Layer{}.forward(i);
  }
  return acc;
}
"""
    return f"#include <nsightkit/{header}>\n"


def compiler_command(kind, args, include_dir, source, obj, defines=()):
    common = ["-O2", "-std=c++17"] + [f"-D{d}" for d in defines] + [
        f"-I{include_dir}", "-isystem", str(args.cuda_include), "-c", str(source), "-o", str(obj)]
    if kind == "gxx":
        return [args.cxx, "-x", "c++"] + common
    if kind == "clang":
        return [args.clang, "-x", "c++"] + common
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


def make_plan(args, trees, configs, compilers):
    """(tree label, include dir, config, compiler, TU) for every compile of one round: the baseline
    and the floors once per tree and compiler (they do not depend on the configuration)."""
    plan = []
    for label, inc in trees:
        headers = public_headers(inc) + [USE]
        if args.header:
            headers = [h for h in headers if any(f in h for f in args.header)]
        for comp in compilers:
            plan.append((label, inc, "-", comp, BASELINE))
            for floor in FLOORS:
                plan.append((label, inc, "-", comp, floor))
            for config in configs:
                for h in headers:
                    plan.append((label, inc, config, comp, h))
    return plan


def measure(args, trees, configs, compilers):
    """Every (tree, config, compiler, TU) compiled args.repeat times, interleaved."""
    rows = {}  # (tree, config, compiler, header) -> {"wall": [...], "cpu": [...], "rss": [...], ...}
    plan = make_plan(args, trees, configs, compilers)
    total = len(plan) * args.repeat
    done = 0
    with tempfile.TemporaryDirectory(prefix="nsk-compile-cost-") as tmp:
        tmp = Path(tmp)
        for rep in range(args.repeat):
            for i, (label, inc, config, comp, h) in enumerate(plan):
                done += 1
                key = (label, config, comp, h)
                row = rows.setdefault(key, {"wall": [], "cpu": [], "rss": [], "error": None})
                if row["error"]:
                    continue
                src = tmp / f"tu{i}.{'cu' if comp == 'nvcc' else 'cpp'}"
                src.write_text(tu_source(h))
                cmd = compiler_command(comp, args, inc, src, tmp / f"tu{i}.o", CONFIGS.get(config, ()))
                row["command"] = " ".join(shlex.quote(c) for c in cmd)
                rc, wall, cpu, rss, err = run_measured(cmd)
                if rc != 0:
                    first = next((l for l in err.splitlines() if "error" in l), err.strip()[:200])
                    row["error"] = f"exit {rc}: {first}"
                    print(f"  {label} {config} {comp} {h}: FAILED {row['error']}", file=sys.stderr)
                    continue
                row["wall"].append(wall)
                row["cpu"].append(cpu)
                row["rss"].append(rss)
                if args.verbose:
                    print(f"  [{done}/{total}] {label} {config:>11} {comp:>5} {h:<50} "
                          f"{cpu:6.2f} s {rss:7.1f} MB", file=sys.stderr)
    results = []
    for (label, config, comp, h), row in rows.items():
        entry = {"tree": label, "config": config, "compiler": comp, "header": h,
                 "command": row.get("command"), "error": row["error"], "runs": len(row["wall"])}
        if row["wall"] and not row["error"]:
            entry["wall_s"] = summarize(row["wall"])
            entry["cpu_s"] = summarize(row["cpu"])
            entry["peak_mb"] = summarize(row["rss"])
        results.append(entry)
    # Cost as a multiple of the baseline of the same tree and compiler.
    base = {(r["tree"], r["compiler"]): r for r in results if r["header"] == BASELINE}
    for r in results:
        b = base.get((r["tree"], r["compiler"]))
        if b and "cpu_s" in r and "cpu_s" in b and r["header"] != BASELINE:
            r["x_baseline"] = {"cpu": r["cpu_s"]["median"] / max(b["cpu_s"]["median"], 1e-9),
                               "cpu_best": r["cpu_s"]["min"] / max(b["cpu_s"]["min"], 1e-9),
                               "peak_mb": r["peak_mb"]["median"] / max(b["peak_mb"]["median"], 1e-9)}
    return results


def target_note(r):
    """Issue 33's targets for the USE translation unit, judged on the medians."""
    t = TARGETS.get(r["config"])
    if r["header"] != USE or not t or "x_baseline" not in r:
        return ""
    cpu, mb = t
    x = r["x_baseline"]
    parts = [f"CPU {'met' if x['cpu'] <= cpu else 'MISSED'} ≤ {cpu:g}×"]
    if mb is not None:
        parts.append(f"MB {'met' if x['peak_mb'] <= mb else 'MISSED'} ≤ {mb:g}×")
    return ", ".join(parts)


def markdown_table(results, trees):
    names = {"gxx": "g++", "clang": "clang++", "nvcc": "nvcc"}
    with_tree = len(trees) > 1
    head = ("| " + ("tree | " if with_tree else "") + "config | compiler | TU includes | CPU s median "
            "(min–max) | wall s median | peak MB median | CPU × baseline | CPU × baseline, best-of | "
            "MB × baseline | target |")
    lines = [head, "|" + "---|" * (10 + with_tree)]
    order = {c: i for i, c in enumerate(["-", *CONFIGS])}
    comp_order = {"gxx": 0, "clang": 1, "nvcc": 2}
    key = lambda r: (r["tree"], comp_order.get(r["compiler"], 9), order.get(r["config"], 9),
                     r["header"] != BASELINE, r["header"] not in FLOORS, r["header"] != USE, r["header"])
    for r in sorted(results, key=key):
        plain = r["header"] in (BASELINE, USE) or r["header"] in FLOORS
        name = r["header"] if plain else f"<nsightkit/{r['header']}>"
        cells = ([r["tree"]] if with_tree else []) + [r["config"], names[r["compiler"]], name]
        if "cpu_s" not in r:
            lines.append("| " + " | ".join(cells + [f"failed: {r['error']}", "", "", "", "", "", ""]) + " |")
            continue
        c, w, m = r["cpu_s"], r["wall_s"], r["peak_mb"]
        x = r.get("x_baseline")
        cells += [f"{c['median']:.2f} ({c['min']:.2f}–{c['max']:.2f})", f"{w['median']:.2f}",
                  f"{m['median']:.0f}", f"{x['cpu']:.2f}" if x else "", f"{x['cpu_best']:.2f}" if x else "",
                  f"{x['peak_mb']:.2f}" if x else "",
                  target_note(r)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def time_trace(args, include_dir, defines, out_dir):
    """clang++ -ftime-trace on the USE translation unit; prints where the front-end time goes."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    src = out_dir / "nsightkit_use.cpp"
    src.write_text(tu_source(USE))
    obj = out_dir / "nsightkit_use.o"
    cmd = [args.clang, "-x", "c++", "-O2", "-std=c++17", "-ftime-trace",
           "-ftime-trace-granularity=100"] + [f"-D{d}" for d in defines] + [
           f"-I{include_dir}", "-isystem", str(args.cuda_include), "-c", str(src), "-o", str(obj)]
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


def count_instructions(args, cmd):
    """Runs cmd under callgrind; returns (exit code, millions of instructions executed by it and every
    process it started, the first error line)."""
    vg = [args.valgrind, "--tool=callgrind", "--trace-children=yes", "--cache-sim=no",
          "--callgrind-out-file=/dev/null"]
    proc = subprocess.run(vg + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          errors="replace", check=False)
    total = sum(int(m.group(1)) for m in re.finditer(r"^==\d+== Collected : (\d+)$", proc.stderr, re.M))
    first = next((l for l in proc.stderr.splitlines() if "error" in l and not l.startswith("==")), "")
    return proc.returncode, total / 1e6, first


def measure_instructions(args, trees, configs, compilers):
    """Every (tree, config, compiler, TU) compiled once under callgrind (args.jobs at a time)."""
    plan = make_plan(args, trees, configs, compilers)
    results = []
    with tempfile.TemporaryDirectory(prefix="nsk-compile-instr-") as tmp:
        tmp = Path(tmp)

        def one(i, item):
            label, inc, config, comp, h = item
            src = tmp / f"tu{i}.{'cu' if comp == 'nvcc' else 'cpp'}"
            src.write_text(tu_source(h))
            cmd = compiler_command(comp, args, inc, src, tmp / f"tu{i}.o", CONFIGS.get(config, ()))
            rc, minstr, first = count_instructions(args, cmd)
            entry = {"tree": label, "config": config, "compiler": comp, "header": h,
                     "command": " ".join(shlex.quote(c) for c in cmd), "error": None}
            if rc != 0:
                entry["error"] = f"exit {rc}: {first}"
                print(f"  {label} {config} {comp} {h}: FAILED {entry['error']}", file=sys.stderr)
            else:
                entry["minstr"] = minstr
            if args.verbose:
                print(f"  {label} {config:>11} {comp:>5} {h:<50} {minstr:9.0f} M", file=sys.stderr)
            return entry

        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(lambda a: one(*a), enumerate(plan)))
    base = {(r["tree"], r["compiler"]): r for r in results if r["header"] == BASELINE}
    for r in results:
        b = base.get((r["tree"], r["compiler"]))
        if b and "minstr" in r and "minstr" in b and r["header"] != BASELINE:
            r["x_baseline"] = r["minstr"] / max(b["minstr"], 1e-9)
    return results


def instructions_table(results, trees):
    names = {"gxx": "g++", "clang": "clang++", "nvcc": "nvcc"}
    with_tree = len(trees) > 1
    lines = ["| " + ("tree | " if with_tree else "") + "config | compiler | TU includes | "
             "million instructions | × baseline | target (CPU ratio, judged on instructions) |",
             "|" + "---|" * (6 + with_tree)]
    order = {c: i for i, c in enumerate(["-", *CONFIGS])}
    comp_order = {"gxx": 0, "clang": 1, "nvcc": 2}
    floors = list(FLOORS)
    key = lambda r: (r["tree"], comp_order.get(r["compiler"], 9), order.get(r["config"], 9),
                     r["header"] != BASELINE, floors.index(r["header"]) if r["header"] in FLOORS else 9,
                     r["header"] != USE, r["header"])
    for r in sorted(results, key=key):
        plain = r["header"] in (BASELINE, USE) or r["header"] in FLOORS
        name = r["header"] if plain else f"<nsightkit/{r['header']}>"
        cells = ([r["tree"]] if with_tree else []) + [r["config"], names[r["compiler"]], name]
        if "minstr" not in r:
            cells += [f"failed: {r['error']}", "", ""]
        else:
            x = r.get("x_baseline")
            note = ""
            t = TARGETS.get(r["config"])
            if r["header"] == USE and t and x is not None:
                note = f"{'met' if x <= t[0] else 'MISSED'} ≤ {t[0]:g}×"
            cells += [f"{r['minstr']:.0f}", f"{x:.2f}" if x is not None else "", note]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_tree(text):
    if "=" not in text:
        sys.exit(f"compile_cost: --tree wants LABEL=INCLUDE_DIR, got {text!r}")
    label, path = text.split("=", 1)
    path = Path(path).resolve()
    if not (path / "nsightkit").is_dir():
        sys.exit(f"compile_cost: --tree {label}: {path} holds no nsightkit/ folder")
    return label, path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", default=[], metavar="LABEL=INCLUDE_DIR",
                    help="an include dir to measure (repeatable); default: this checkout's include/")
    ap.add_argument("--config", action="append", choices=list(CONFIGS), default=[],
                    help="configurations to measure (repeatable); default: all three")
    ap.add_argument("--compiler", action="append", choices=["gxx", "clang", "nvcc"], default=[],
                    help="compilers to use (repeatable); default: gxx, clang and nvcc")
    ap.add_argument("--header", action="append", default=[],
                    help="only TUs whose name contains this text (repeatable; baseline always runs)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--clang", default="clang++")
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--cuda-include", default=str(DEFAULT_CUDA_INCLUDE))
    ap.add_argument("--json", metavar="FILE", help="write the results as JSON")
    ap.add_argument("--markdown", metavar="FILE", help="write the table as Markdown")
    ap.add_argument("--time-trace", metavar="OUT_DIR",
                    help="instead: one clang++ -ftime-trace compile of the USE TU (first --config)")
    ap.add_argument("--instructions", action="store_true",
                    help="instead: count instructions under valgrind's callgrind (each compile once)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="--instructions: compiles counted at a time (default 1)")
    ap.add_argument("--valgrind", default="valgrind")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every compile")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    if not Path(args.cuda_include, "nvtx3", "nvtx3.hpp").is_file():
        ap.error(f"--cuda-include {args.cuda_include} holds no nvtx3/nvtx3.hpp")
    trees = [parse_tree(t) for t in args.tree] or [("working tree", (REPO / "include").resolve())]
    configs = args.config or list(CONFIGS)
    if args.time_trace:
        return time_trace(args, trees[0][1], CONFIGS[configs[0]], args.time_trace)
    compilers = args.compiler or ["gxx", "clang", "nvcc"]

    info = {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": platform.node(), "cpus": os.cpu_count(),
        "load_average_at_start": os.getloadavg(),
        "g++": tool_version([args.cxx]) if "gxx" in compilers else None,
        "clang++": tool_version([args.clang]) if "clang" in compilers else None,
        "nvcc": tool_version([args.nvcc]) if "nvcc" in compilers else None,
        "repeat": args.repeat,
        "configs": {c: " ".join(f"-D{d}" for d in CONFIGS[c]) for c in configs},
        "trees": {label: str(path) for label, path in trees},
        "command_line": " ".join(shlex.quote(a) for a in sys.argv),
    }
    if args.instructions:
        info["valgrind"] = tool_version([args.valgrind])
        results = measure_instructions(args, trees, configs, compilers)
        table = instructions_table(results, trees)
    else:
        results = measure(args, trees, configs, compilers)
        table = markdown_table(results, trees)
    info["load_average_at_end"] = os.getloadavg()
    print(f"# compile cost ({info['date_utc']}, {info['cpus']} CPUs, load "
          f"{info['load_average_at_start'][0]:.1f} -> {info['load_average_at_end'][0]:.1f})")
    print(f"# g++: {info['g++']}; clang++: {info['clang++']}; nvcc: {info['nvcc']}; " +
          ("instructions (callgrind)" if args.instructions else f"{args.repeat} repetitions"))
    print(table)
    if args.json:
        Path(args.json).write_text(json.dumps({"info": info, "results": results}, indent=2) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    return 1 if any(r["error"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
