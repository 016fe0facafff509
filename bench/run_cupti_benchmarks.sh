#!/usr/bin/env bash
# Runs bench_cupti once per collection mode, three rounds interleaved (none, activity,
# activity_api, nsightkit, none, ...), and prints microseconds per launch per mode with the
# differences against no CUPTI and against kernel activity alone.
# usage: bench/run_cupti_benchmarks.sh <build dir> <output dir>
set -euo pipefail
build=$1 out=$2
bin="$build/bench/bench_cupti"
mkdir -p "$out"
for round in 1 2 3; do
  for mode in none activity activity_api nsightkit; do
    NSK_CUPTI_MODE=$mode "$bin" --benchmark_format=json --benchmark_out="$out/$mode.$round.json" \
      --benchmark_out_format=json >/dev/null
  done
done
python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
modes = ["none", "activity", "activity_api", "nsightkit"]
per = {}
for m in modes:
    for f in sorted(glob.glob(os.path.join(out, f"{m}.*.json"))):
        for b in json.load(open(f))["benchmarks"]:
            if b.get("error_occurred"):
                sys.exit(f"{m}: {b['name']}: {b.get('error_message')}")
            per.setdefault(b["name"], {}).setdefault(m, []).append(b["real_time"] / 1000.0)
print(f"{'benchmark':<40}" + "".join(f"{m:>22}" for m in modes) + f"{'nsk-activity':>14}")
for name, by in per.items():
    med = {m: statistics.median(by[m]) for m in modes if m in by}
    rng = {m: (min(by[m]), max(by[m])) for m in modes if m in by}
    cells = "".join(f"{med[m]:.2f} ({rng[m][0]:.2f}-{rng[m][1]:.2f})".rjust(22) for m in modes)
    print(f"{name.split('/')[0]:<40}{cells}{med['nsightkit'] - med['activity']:>+14.2f}")
print("(microseconds per launch: median of 3 rounds, min-max in parentheses)")
PY
