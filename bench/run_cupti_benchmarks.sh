#!/usr/bin/env bash
# Runs bench_cupti once per collection mode, ROUNDS rounds (default 3) interleaved (none,
# activity, activity_api, activity_drv, activity_ts, cb_runtime, cb_driver, cb_both, nsightkit, none, ...), and
# prints microseconds per launch per mode with each mode's paired difference against kernel
# activity alone, and what the modes found (correlation ids, buffer threads, timestamp calls).
# usage: [ROUNDS=N] [MODES="a b ..."] [MIN_TIME=seconds] [CPUS=list] [BASELINE_BIN=path]
#        bench/run_cupti_benchmarks.sh <build dir> <output dir>
# CPUS (taskset's list, e.g. 2-5) keeps every process on the same cores, so rounds differ less.
# BASELINE_BIN: another bench_cupti (say, built from an earlier commit) whose nsightkit mode runs
# as mode "baseline" in the same rounds, so a change to nsightkit is measured against it.
# Mode "paired" (not in the default list) runs the paired_ benchmarks: within one process, blocks
# with nsightkit's callbacks off and on alternate, and each round prints on minus off.
set -euo pipefail
build=$1 out=$2
bin="$build/bench/bench_cupti"
mkdir -p "$out"
modes=${MODES:-none activity activity_api activity_drv activity_ts cb_runtime cb_driver cb_both nsightkit}
if [ -n "${BASELINE_BIN:-}" ]; then
  [ -x "$BASELINE_BIN" ] || { echo "BASELINE_BIN=$BASELINE_BIN is not an executable" >&2; exit 2; }
  case " $modes " in *" baseline "*) ;; *) modes="$modes baseline" ;; esac
else
  case " $modes " in *" baseline "*) echo "mode 'baseline' needs BASELINE_BIN" >&2; exit 2 ;; esac
fi
pin=()
[ -n "${CPUS:-}" ] && pin=(taskset -c "$CPUS")
for round in $(seq 1 "${ROUNDS:-3}"); do
  for mode in $modes; do
    run_bin=$bin run_mode=$mode filter='^(launch|gpu)_'
    [ "$mode" = baseline ] && run_bin=$BASELINE_BIN run_mode=nsightkit
    [ "$mode" = paired ] && filter='^paired_'
    NSK_CUPTI_MODE=$run_mode "${pin[@]}" "$run_bin" --benchmark_min_time="${MIN_TIME:-1.0}" \
      --benchmark_filter="$filter" \
      --benchmark_format=json --benchmark_out="$out/$mode.$round.json" \
      --benchmark_out_format=json >/dev/null 2>"$out/$mode.$round.err"
  done
done
for mode in $modes; do
  for what in correlation 'buffers completed' 'timestamp callbacks' 'driver api records'; do
    line=$(grep -h "^$what:" "$out/$mode.1.err" | tail -1 || true)
    [ -n "$line" ] && echo "$mode: $line"
  done
done
python3 - "$out" "${ROUNDS:-3}" $modes <<'PY'
import glob, json, os, statistics, sys
out, rounds = sys.argv[1], sys.argv[2]
modes = sys.argv[3:]
per = {}
paired = {}
for m in modes:
    files = glob.glob(os.path.join(out, f"{m}.*.json"))
    for f in sorted(files, key=lambda f: int(f.rsplit(".", 2)[-2])):  # by round
        for b in json.load(open(f))["benchmarks"]:
            if b.get("error_occurred"):
                sys.exit(f"{m}: {b['name']}: {b.get('error_message')}")
            if m == "paired":
                paired.setdefault(b["name"], []).append(b)
                continue
            per.setdefault(b["name"], {}).setdefault(m, []).append(b["real_time"] / 1000.0)
def quartiles(v):
    v = sorted(v)
    if len(v) < 4:
        return v[0], v[-1]
    q = statistics.quantiles(v, n=4)
    return q[0], q[2]
base = "activity" if "activity" in modes else None
for name, by in per.items():
    print(name.split("/")[0])
    for m in modes:
        if m not in by:
            continue
        v = by[m]
        line = f"  {m:<14}{statistics.median(v):8.2f} ({min(v):.2f}-{max(v):.2f})"
        if base and m != base and base in by:
            # Paired: the modes of one round ran back to back, so a round's difference is less
            # noisy than the difference of medians.
            d = [a - b for a, b in zip(v, by[base])]
            lo, hi = quartiles(d)
            line += f"   vs {base}: {statistics.median(d):+.2f} (quartiles {lo:+.2f} to {hi:+.2f})"
        if m == "nsightkit" and "baseline" in by:
            d = [a - b for a, b in zip(v, by["baseline"])]
            lo, hi = quartiles(d)
            line += f"   vs baseline: {statistics.median(d):+.2f} ({lo:+.2f} to {hi:+.2f})"
        print(line)
print(f"(microseconds per launch: median of {rounds} rounds, min-max in parentheses; 'vs "
      "activity': median over rounds of the mode minus kernel activity alone in the same round)")
for name, runs in paired.items():
    print(name.split("/")[0] + " (paired blocks in one process: nsightkit on minus callbacks off)")
    for r, b in enumerate(runs, 1):
        print(f"  round {r}: {int(b['pairs'])} pairs, off {b['off_us']:.2f}, on {b['on_us']:.2f}, "
              f"on - off {b['diff_us']:+.3f} (quartiles {b['diff_q1']:+.3f} to {b['diff_q3']:+.3f})")
    d = [b["diff_us"] for b in runs]
    print(f"  median over {len(d)} rounds: {statistics.median(d):+.3f} ({min(d):+.3f} to {max(d):+.3f})")
PY
