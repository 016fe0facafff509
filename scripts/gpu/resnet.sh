#!/usr/bin/env bash
# resnet_training on a GPU machine: the input-pipeline optimisation sequence of the example's
# README, one configuration at a time, then Nsight Compute on one block's kernels. Builds nothing
# (run by scripts/gpu/run-all.sh, or alone with OUT and NSIGHTKIT_GPU_BUILD set); about 3 minutes.
#   1. test_resnet_cuda: CUDA vs CPU backend, and every input pipeline training the same run;
#   2. the sequence, each for RESNET_STEPS steps after RESNET_WARMUP warm-up steps, same data and
#      model, every image costing RESNET_DECODE_US of loader CPU time ("decoding"):
#        baseline  --workers 0 --pageable --no-prefetch --layout nchw
#        workers   --workers RESNET_WORKERS (the rest as before)
#        pinned    + --pinned            (page-locked batches from nsightkit's PinnedMemoryPool)
#        prefetch  + --prefetch          (nsightkit::StreamPrefetcher on a copy stream)
#        nhwc      + --layout nhwc       (channels-last images, activations and filters)
#      each printing images/s and the report's per-step breakdown (data, h2d, forward, backward,
#      optimizer, sync; CPU and GPU ms); the table goes to $OUT/resnet/summary.md;
#   3. ncu --nvtx --nvtx-include "nsightkit@stage2/block0/" on one captured step (the capture
#      window + --profile-from-start off): the kernels of that one block, forward and backward,
#      in NCHW and in NHWC (cuDNN's nchwToNhwc/nhwcToNchw transposes counted).
# Files in $OUT/resnet: summary.md (machine, table, ncu kernel lists), runs.log (every step's
# full output, report tables included), a log per step (test_resnet_cuda.log, run-<config>.log,
# ncu-<layout>.log), ncu.log (both ncu runs). Exit status: the number of failed steps.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_init resnet summary.md # say/fail lines go to the Markdown summary
dir=$LOG_DIR
summary=$SUMMARY

exe=${RESNET_EXE:-}
test_exe=${RESNET_TEST_EXE:-}
for d in "$build/examples/resnet_training" "$build/resnet_training"; do
  if [ -z "$exe" ] && [ -x "$d/resnet_training" ]; then exe="$d/resnet_training"; fi
  if [ -z "$test_exe" ] && [ -x "$d/test_resnet_cuda" ]; then test_exe="$d/test_resnet_cuda"; fi
done
if [ -z "$exe" ]; then
  fail "resnet_training not built under $build (examples/CMakeLists.txt needs add_subdirectory(resnet_training))"
  gpu_finish
fi

STEPS=${RESNET_STEPS:-150}
WARMUP=${RESNET_WARMUP:-20}
WORKERS=${RESNET_WORKERS:-6}
DECODE=${RESNET_DECODE_US:-200}
BATCH=${RESNET_BATCH:-128}
SIZE=${RESNET_IMAGE_SIZE:-64}
common=(--device cuda --steps "$STEPS" --warmup "$WARMUP" --batch "$BATCH" --image-size "$SIZE"
  --decode-us "$DECODE")

tmp=$(mktemp -d) # report/metrics JSON of each run (the summary below holds what matters)
{
  echo "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1 || true)"
  echo "host: $(nproc) CPUs; $(date -u +%Y-%m-%dT%H:%MZ); exe: $exe"
  echo
} | tee "$summary"

# ---- 1. the GPU test ----
if [ -n "$test_exe" ]; then
  echo "== test_resnet_cuda"
  step --tail 0 test_resnet_cuda "$test_exe" --durations yes
  { grep -E "^(nchw|nhwc|pinned)|test cases|assertions" "$dir/test_resnet_cuda.log" || true; } | tail -n 24
else
  fail "test_resnet_cuda not built under $build"
fi

# ---- 2. the sequence ----
declare -a names=(baseline workers pinned prefetch nhwc)
declare -A flags=(
  [baseline]="--workers 0 --pageable --no-prefetch --layout nchw"
  [workers]="--workers $WORKERS --pageable --no-prefetch --layout nchw"
  [pinned]="--workers $WORKERS --pinned --no-prefetch --layout nchw"
  [prefetch]="--workers $WORKERS --pinned --prefetch --layout nchw"
  [nhwc]="--workers $WORKERS --pinned --prefetch --layout nhwc"
)
{
  echo "| configuration | flags | images/s | data | h2d | forward | backward | optimizer | sync |"
  echo "|---|---|---|---|---|---|---|---|---|"
} >>"$summary"
cell() { # cell NAME LINE: "cpu / gpu" ms of one range from a breakdown_ms line
  local v
  v=$(echo "$2" | tr ' ' '\n' | { grep "^$1=" || true; } | cut -d= -f2)
  echo "${v%/*} / ${v#*/}"
}
for n in "${names[@]}"; do
  read -r -a config <<<"${flags[$n]}"
  echo "== $n: $exe ${common[*]} ${flags[$n]}"
  step --tail 0 "run-$n" "$exe" "${common[@]}" "${config[@]}" \
    --report "table=stdout,json=$tmp/$n-report.json" --metrics "$tmp/$n-metrics.json"
  log="$dir/run-$n.log"
  if [ "$STEP_OK" -eq 0 ]; then
    tail -n 5 "$log"
    continue
  fi
  ips=$({ grep '^throughput:' "$log" || true; } | awk '{print $2}')
  bd=$(grep '^breakdown_ms' "$log" || true)
  grep -E '^(loss|accuracy|throughput|captured):' "$log" || true
  echo "$bd"
  echo "| $n | \`${flags[$n]}\` | $ips | $(cell data "$bd") | $(cell h2d "$bd") | $(cell forward "$bd") | $(cell backward "$bd") | $(cell optimizer "$bd") | $(cell sync "$bd") |" >>"$summary"
done
{
  echo
  echo "Each cell: CPU ms / GPU ms per step (GPU: time on the compute stream; '-' = not timed)."
  echo "Common flags: ${common[*]}"
  echo
} >>"$summary"

# ---- 3. Nsight Compute: one block's kernels in one captured step, both layouts ----
filter='nsightkit@stage2/block0/'
# Per-kernel lines from ncu's --print-summary per-kernel: average duration x invocations, name.
kernels() {
  awk '/Invocations [0-9]+/ { inv = $NF; name = $0;
         sub(/ \([0-9]+, [0-9]+, [0-9]+\)x\([0-9]+, [0-9]+, [0-9]+\).*/, "", name); sub(/^ +/, "", name);
         if (length(name) > 110) name = substr(name, 1, 107) "..." }
       /gpu__time_duration.sum/ { v = $NF; if ($2 == "ns") v /= 1000; if ($2 == "ms") v *= 1000;
         printf "    %8.1f us x %-2s %s\n", v, inv, name; total += v * inv }
       END { printf "    total %.1f us of GPU time\n", total }' "$1"
}
: >"$dir/ncu.log"
if need_ncu; then
  for layout in nchw nhwc; do
    echo "== ncu --nvtx-include \"$filter\", --layout $layout, step 5 only (NSIGHTKIT_CAPTURE=wait=5,active=1)" |
      tee -a "$summary"
    step --tail 0 "ncu-$layout" env NSIGHTKIT_CAPTURE="wait=5,active=1" ncu --clock-control none \
      --profile-from-start off --nvtx --nvtx-include "$filter" \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
      --print-summary per-kernel \
      "$exe" --device cuda --steps 8 --warmup 2 --batch "$BATCH" --image-size "$SIZE" --workers 2 \
      --decode-us 0 --layout "$layout" --report off
    one="$dir/ncu-$layout.log"
    cat "$one" >>"$dir/ncu.log"
    profiled=$(grep -c '==PROF== Profiling' "$one" || true)
    transposes=$({ grep -E '==PROF== Profiling' "$one" || true; } | { grep -cE 'nchwToNhwc|nhwcToNchw' || true; })
    echo "  ncu exit $STEP_RC: $profiled kernels profiled, $transposes of them layout transposes (nchwToNhwc/nhwcToNchw)" |
      tee -a "$summary"
    kernels "$one" | tee -a "$summary"
    if [ "$STEP_OK" -eq 1 ] && [ "$profiled" -eq 0 ]; then fail "ncu-$layout: no kernel profiled"; fi
  done
fi

echo "== summary"
cat "$summary"
rm -rf "$tmp"
gpu_finish
