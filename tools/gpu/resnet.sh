#!/usr/bin/env bash
# resnet_training on the GPU machine: seed 001's optimisation sequence, one configuration at a
# time, then Nsight Compute on one block's kernels. Builds nothing (run by tools/gpu/run-all.sh,
# or alone with OUT and NSIGHTKIT_GPU_BUILD set); about 3 minutes.
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
# Files in $OUT/resnet: summary.md (machine, table, ncu kernel lists), runs.log (every run's
# full output, report tables included), test_resnet_cuda.log, ncu.log.
# Exit status: the number of failed steps.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${NSIGHTKIT_GPU_BUILD:-$root/build-gpu}
OUT=${OUT:-$root/gpu-out}
dir="$OUT/resnet"
mkdir -p "$dir"
failures=0

exe=${RESNET_EXE:-}
test_exe=${RESNET_TEST_EXE:-}
for d in "$build/examples/resnet_training" "$build/resnet_training"; do
  [ -z "$exe" ] && [ -x "$d/resnet_training" ] && exe="$d/resnet_training"
  [ -z "$test_exe" ] && [ -x "$d/test_resnet_cuda" ] && test_exe="$d/test_resnet_cuda"
done
if [ -z "$exe" ]; then
  echo "FAIL: resnet_training not built under $build (examples/CMakeLists.txt needs add_subdirectory(resnet_training))"
  exit 1
fi
if ! command -v ncu >/dev/null; then
  ncu_dir=$(ls -d /opt/nvidia/nsight-compute/*/ /usr/local/cuda/nsight-compute-*/ 2>/dev/null | tail -1)
  [ -n "$ncu_dir" ] && export PATH="$ncu_dir:$PATH"
fi
unset NSIGHTKIT_CAPTURE NSIGHTKIT_REPORT NVTX_INJECTION64_PATH
# cuBLAS and the CUDA runtime live in the toolkit's lib64 there (cuDNN in the system's lib dir).
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

STEPS=${RESNET_STEPS:-150}
WARMUP=${RESNET_WARMUP:-20}
WORKERS=${RESNET_WORKERS:-6}
DECODE=${RESNET_DECODE_US:-200}
BATCH=${RESNET_BATCH:-128}
SIZE=${RESNET_IMAGE_SIZE:-64}
common=(--device cuda --steps "$STEPS" --warmup "$WARMUP" --batch "$BATCH" --image-size "$SIZE"
        --decode-us "$DECODE")

tmp=$(mktemp -d)  # report/metrics JSON of each run (the summary below holds what matters)
runs="$dir/runs.log"
: >"$runs"
summary="$dir/summary.md"
{
  echo "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
  echo "host: $(nproc) CPUs; $(date -u +%Y-%m-%dT%H:%MZ); exe: $exe"
  echo
} | tee "$summary"

# ---- 1. the GPU test ----
if [ -n "$test_exe" ]; then
  echo "== test_resnet_cuda"
  "$test_exe" --durations yes >"$dir/test_resnet_cuda.log" 2>&1
  rc=$?
  grep -E "^(nchw|nhwc|pinned)|test cases|assertions" "$dir/test_resnet_cuda.log" | tail -24
  [ $rc -eq 0 ] || { echo "FAIL test_resnet_cuda rc=$rc"; failures=$((failures + 1)); }
else
  echo "MISSING test_resnet_cuda"; failures=$((failures + 1))
fi

# ---- 2. seed 001's sequence ----
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
cell() {  # cell NAME LINE: "cpu / gpu" ms of one range from a breakdown_ms line
  local v
  v=$(echo "$2" | tr ' ' '\n' | grep "^$1=" | cut -d= -f2)
  echo "${v%/*} / ${v#*/}"
}
for n in "${names[@]}"; do
  # shellcheck disable=SC2086
  echo "== $n: $exe ${common[*]} ${flags[$n]}" | tee -a "$runs"
  "$exe" "${common[@]}" ${flags[$n]} --report "table=stdout,json=$tmp/$n-report.json" \
    --metrics "$tmp/$n-metrics.json" >"$tmp/$n.log" 2>&1
  rc=$?
  cat "$tmp/$n.log" >>"$runs"
  if [ $rc -ne 0 ]; then
    echo "FAIL $n rc=$rc"; tail -5 "$tmp/$n.log"; failures=$((failures + 1)); continue
  fi
  ips=$(grep '^throughput:' "$tmp/$n.log" | awk '{print $2}')
  bd=$(grep '^breakdown_ms' "$tmp/$n.log")
  grep -E '^(loss|accuracy|throughput|captured):' "$tmp/$n.log"
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
ncu_log="$dir/ncu.log"
: >"$ncu_log"
# Per-kernel lines from ncu's --print-summary per-kernel: average duration x invocations, name.
kernels() {
  awk '/Invocations [0-9]+/ { inv = $NF; name = $0;
         sub(/ \([0-9]+, [0-9]+, [0-9]+\)x\([0-9]+, [0-9]+, [0-9]+\).*/, "", name); sub(/^ +/, "", name);
         if (length(name) > 110) name = substr(name, 1, 107) "..." }
       /gpu__time_duration.sum/ { v = $NF; if ($2 == "ns") v /= 1000; if ($2 == "ms") v *= 1000;
         printf "    %8.1f us x %-2s %s\n", v, inv, name; total += v * inv }
       END { printf "    total %.1f us of GPU time\n", total }' "$1"
}
if command -v ncu >/dev/null; then
  for layout in nchw nhwc; do
    one="$tmp/ncu-$layout.log"
    echo "== ncu --nvtx-include \"$filter\", --layout $layout, step 5 only (NSIGHTKIT_CAPTURE=wait=5,active=1)" |
      tee -a "$summary"
    NSIGHTKIT_CAPTURE="wait=5,active=1" ncu --clock-control none --profile-from-start off --nvtx \
      --nvtx-include "$filter" \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
      --print-summary per-kernel \
      "$exe" --device cuda --steps 8 --warmup 2 --batch "$BATCH" --image-size "$SIZE" --workers 2 \
      --decode-us 0 --layout "$layout" --report off >"$one" 2>&1
    rc=$?
    cat "$one" >>"$ncu_log"
    profiled=$(grep -c '==PROF== Profiling' "$one")
    transposes=$(grep -E '==PROF== Profiling' "$one" | grep -cE 'nchwToNhwc|nhwcToNchw')
    echo "  ncu exit $rc: $profiled kernels profiled, $transposes of them layout transposes (nchwToNhwc/nhwcToNchw)" |
      tee -a "$summary"
    kernels "$one" | tee -a "$summary"
    if [ $rc -ne 0 ] || [ "$profiled" -eq 0 ]; then failures=$((failures + 1)); fi
  done
else
  echo "MISSING ncu"; failures=$((failures + 1))
fi

echo "== summary"
cat "$summary"
rm -rf "$tmp"
echo "resnet: $failures failed step(s); logs in $dir (summary.md, runs.log, test_resnet_cuda.log, ncu.log)"
exit "$failures"
