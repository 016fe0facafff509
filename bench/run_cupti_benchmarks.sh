#!/usr/bin/env bash
# Runs bench_cupti once per collection mode, ROUNDS rounds (default 3) interleaved (none,
# activity, activity_api, cb_runtime, cb_driver, cb_both, nsightkit, none, ...), and prints
# microseconds per launch per mode with nsightkit's differences against kernel activity alone
# and against the callback floor (cb_both), and what the cb_ modes found about correlation ids.
# usage: [ROUNDS=N] bench/run_cupti_benchmarks.sh <build dir> <output dir>
set -euo pipefail
build=$1 out=$2
bin="$build/bench/bench_cupti"
mkdir -p "$out"
modes="none activity activity_api cb_runtime cb_driver cb_both nsightkit"
for round in $(seq 1 "${ROUNDS:-3}"); do
  for mode in $modes; do
    NSK_CUPTI_MODE=$mode "$bin" --benchmark_format=json --benchmark_out="$out/$mode.$round.json" \
      --benchmark_out_format=json >/dev/null 2>"$out/$mode.$round.err"
  done
done
for mode in cb_runtime cb_driver cb_both; do
  echo "$mode: $(grep -h '^correlation:' "$out/$mode.1.err" | tail -1)"
done
for mode in activity activity_api cb_runtime cb_driver cb_both; do
  echo "$mode: $(grep -h '^buffers completed:' "$out/$mode.1.err" | tail -1)"
done
python3 - "$out" "${ROUNDS:-3}" <<'PY'
import glob, json, os, statistics, sys
out, rounds = sys.argv[1], sys.argv[2]
modes = ["none", "activity", "activity_api", "cb_runtime", "cb_driver", "cb_both", "nsightkit"]
per = {}
for m in modes:
    files = glob.glob(os.path.join(out, f"{m}.*.json"))
    for f in sorted(files, key=lambda f: int(f.rsplit(".", 2)[-2])):  # by round
        for b in json.load(open(f))["benchmarks"]:
            if b.get("error_occurred"):
                sys.exit(f"{m}: {b['name']}: {b.get('error_message')}")
            per.setdefault(b["name"], {}).setdefault(m, []).append(b["real_time"] / 1000.0)
against = ["activity", "cb_driver", "cb_both"]
print(f"{'benchmark':<22}" + "".join(f"{m:>22}" for m in modes)
      + "".join(f"{'nsk-' + a:>15}" for a in against))
for name, by in per.items():
    med = {m: statistics.median(by[m]) for m in modes if m in by}
    rng = {m: (min(by[m]), max(by[m])) for m in modes if m in by}
    cells = "".join(f"{med[m]:.2f} ({rng[m][0]:.2f}-{rng[m][1]:.2f})".rjust(22) for m in modes)
    # Paired: the modes of one round ran back to back, so a round's difference is less noisy
    # than the difference of medians.
    paired = [statistics.median(n - a for n, a in zip(by["nsightkit"], by[x])) for x in against]
    print(f"{name.split('/')[0]:<22}{cells}" + "".join(f"{d:>+15.2f}" for d in paired))
print(f"(microseconds per launch: median of {rounds} rounds, min-max in parentheses; nsk-X: "
      "median over rounds of nsightkit minus X in the same round)")
PY
