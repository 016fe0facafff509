#!/usr/bin/env bash
# Tracy's zone beside nsightkit's range, one process per case (issue 37; bench/bench_tracy.cpp).
# usage: bench/run_tracy_benchmarks.sh <build dir> <output dir>
#   <build dir>: a build configured with -DNSIGHTKIT_TRACY_DIR=<Tracy source tree> (bench/tracy.cmake)
#   holding bench/bench_tracy_zone and bench/bench_tracy_nsightkit; they need only glibc and
#   libstdc++, so a build made elsewhere runs here as it is.
# Environment: CORE (default: the last CPU) pins each 1-thread process; CPUS8 (default: CORE) pins
# the 8-thread processes (CPUS8=2-9 gives each thread its own core where there are enough);
# ROUNDS (7), RANGES (2000000 per thread per round), REPEAT (1): the whole list of cases run REPEAT
# times in turn, each case's best kept, so that a host whose speed drifts during the run (a
# shared cloud host) drifts for every case alike.
# Every thread's time is its own CPU time, so threads sharing one core are not charged for each
# other. nsightkit's report runs CPU only (NSIGHTKIT_REPORT=table=FILE,gpu=off), set at start-up so
# that it is also the NVTX tool of the program (raw NVTX and nvtx3 ranges reach it); each table's
# range count is checked against the ranges recorded. Two more rows per depth say where a
# ScopedRange's time goes (the report reached directly, without the NVTX call its own tool ignores;
# and also without clock reads). Prints a markdown table; rows in results.tsv.
set -euo pipefail
build=$1 out=$2
mkdir -p "$out"
zone=$build/bench/bench_tracy_zone nsk=$build/bench/bench_tracy_nsightkit
ncpu=$(nproc)
CORE=${CORE:-$((ncpu - 1))} CPUS8=${CPUS8:-$CORE} ROUNDS=${ROUNDS:-7} RANGES=${RANGES:-2000000}
REPEAT=${REPEAT:-1}
tsv=$out/results.tsv
: >"$tsv"
{
  echo "host: $(uname -n) $(uname -r), $ncpu CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
  echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo '?');" \
    "CPU flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -ow 'constant_tsc\|nonstop_tsc\|tsc_known_freq' | tr '\n' ' ')"
  echo "date: $(date -u +%FT%TZ); load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "1 thread on CPU $CORE, 8 threads on CPUs $CPUS8; $ROUNDS rounds of $RANGES ranges per thread; the list run $REPEAT times"
} | tee "$out/host.txt"

# run LABEL THREADS REPORT PROGRAM CASE; REPORT: on (NSIGHTKIT_REPORT at start-up), off, or api
# (the program enables the report itself after NVTX started without a tool: bench_tracy.cpp)
run() {
  local label=$1 threads=$2 report=$3 prog=$4 case=$5 cpus line table="" rss
  if [ "$threads" = 1 ]; then cpus=$CORE; else cpus=$CPUS8; fi
  local envs=(env -u NVTX_INJECTION64_PATH -u NSIGHTKIT_REPORT -u NSIGHTKIT_REPORT_CLOCK ${CLOCK:+NSIGHTKIT_REPORT_CLOCK=$CLOCK})
  if [ "$report" = on ]; then
    table=$out/$case-$threads.table.txt
    rm -f "$table"
    envs+=("NSIGHTKIT_REPORT=table=$table,gpu=off")
  elif [ "$report" = api ]; then
    table=$out/$case-$threads.table.txt
    rm -f "$table"
    envs+=("NSK_BENCH_TABLE=$table")
  fi
  local timed=()
  [ -x /usr/bin/time ] && timed=(/usr/bin/time -f '%M' -o "$out/rss.txt")
  echo - >"$out/rss.txt"
  line=$("${envs[@]}" ${timed[@]+"${timed[@]}"} taskset -c "$cpus" \
         "$prog" "$case" "$threads" "$ROUNDS" "$RANGES" 2>"$out/$case-$threads${CLOCK:+-$CLOCK}.stderr")
  rss=$(tail -n1 "$out/rss.txt")
  local check=-
  if [ -n "$table" ]; then
    local depth=1 per counted
    case $case in *_d3) depth=3 ;; esac
    per=$(( (RANGES + depth - 1) / depth * depth ))
    counted=$(head -n1 "$table" | sed -n 's/.* \([0-9]*\) ranges.*/\1/p')
    if [ "$counted" = "$((per * threads * ROUNDS))" ]; then check=exact; else check="MISMATCH:$counted"; fi
  fi
  printf '%s\t%s\t%s\t%s\n' "$label" "$line" "$check" "$rss" | tee -a "$tsv"
}

for _ in $(seq "$REPEAT"); do
for t in 1 8; do
  run "rdtsc (one read)" $t off "$nsk" rdtsc
  run "steady_clock::now()" $t off "$nsk" steady_clock
  run "Tracy ZoneScopedN, no server" $t off "$zone" tracy_zone_d1
  run "Tracy, 3 nested zones, per zone" $t off "$zone" tracy_zone_d3
  for d in 1 3; do
    run "ScopedRange, report on" $t on "$nsk" scoped_range_d$d
    run "ModuleScope, report on" $t on "$nsk" module_scope_d$d
    run "nvtxRangePushA/Pop, report's NVTX tool" $t on "$nsk" nvtx_push_pop_d$d
    run "nvtx3::scoped_range, report's NVTX tool" $t on "$nsk" nvtx3_scoped_d$d
  done
  run "ScopedRange, report off" $t off "$nsk" scoped_range_d1
  run "ModuleScope, report off" $t off "$nsk" module_scope_d1
  run "nvtxRangePushA/Pop, no tool" $t off "$nsk" nvtx_push_pop_d1
  run "nvtx3::scoped_range, no tool" $t off "$nsk" nvtx3_scoped_d1
  # Where a ScopedRange's time goes: without the NVTX call the report's own tool ignores, and
  # also without the clock reads (a clock that reads nothing).
  for d in 1 3; do
    run "ScopedRange, report only direct (no NVTX call)" $t api "$nsk" scoped_range_direct_d$d
    run "ScopedRange, direct, clock reading nothing" $t api "$nsk" scoped_range_noclock_d$d
  done
  # The report's clock: the TSC where the kernel keeps time with it (the default), or steady_clock.
  CLOCK=steady run "ScopedRange, report only direct, NSIGHTKIT_REPORT_CLOCK=steady" $t api "$nsk" scoped_range_direct_d1
  CLOCK=tsc run "ScopedRange, report only direct, NSIGHTKIT_REPORT_CLOCK=tsc" $t api "$nsk" scoped_range_direct_d1
done
done

python3 - "$tsv" <<'PY'
import sys
rows = {}
order = []
for line in open(sys.argv[1]):
    label, case, threads, cpu, wall, median, check, rss = line.rstrip("\n").split("\t")
    key = (label, case)
    if key not in rows:
        rows[key] = {}
        order.append(key)
    new = (float(cpu), float(median), check, int(rss) if rss.isdigit() else None)
    old = rows[key].get(int(threads))
    if old is not None:  # a repeat: the best time; a count that was not exact stays in sight
        best = min(old, new)
        checks = [c for c in (old[2], new[2]) if c.startswith("MISMATCH")]
        new = (best[0], best[1], checks[0] if checks else best[2], best[3])
    rows[key][int(threads)] = new
tracy = {d: rows.get(("Tracy ZoneScopedN, no server" if d == 1 else "Tracy, 3 nested zones, per zone",
                      "tracy_zone_d%d" % d), {}) for d in (1, 3)}
print("| | depth | 1 thread: ns per range | 8 threads: ns per range per thread | ratio to Tracy, 1 thread | ratio to Tracy, 8 threads | counts | max RSS (MiB, 1 / 8 threads) |")
print("|---|---|---|---|---|---|---|---|")
for label, case in order:
    depth = 3 if case.endswith("_d3") else 1
    r = rows[(label, case)]
    cells = []
    for t in (1, 8):
        cells.append("%.1f (median %.1f)" % (r[t][0], r[t][1]) if t in r else "-")
    ratios = []
    for t in (1, 8):
        base = tracy[depth].get(t)
        on = not case.startswith(("rdtsc", "steady", "tracy")) and "off" not in label and "no tool" not in label
        ratios.append("%.2fx" % (r[t][0] / base[0]) if on and base and t in r else "")
    checks = "/".join(sorted({r[t][2] for t in r} - {"-"})) or ""
    rss = " / ".join("-" if r[t][3] is None else "%.0f" % (r[t][3] / 1024) for t in (1, 8) if t in r)
    print("| %s | %d | %s | %s | %s | %s | %s | %s |" % (label, depth, cells[0], cells[1], ratios[0], ratios[1], checks, rss))
PY
