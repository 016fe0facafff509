#!/usr/bin/env bash
# DETR inference (issue 9) on the lent GPU machine. Builds nothing: expects the build directory
# carried (NSIGHTKIT_GPU_BUILD, default build-gpu, with examples/detr_inference built) and OUT.
# The workflow of seed 000 (RT-DETR), made runnable:
#   1. the example's tests: CPU unit tests, the CPU report check, and the GPU/CPU agreement test
#   2. one configuration (default: base model, batch 8, 640x640, 6+6 layers, 100 queries, fp32;
#      DETR_ARGS adds options), 10 warm-up + 20 captured iterations: per-image latency and the
#      per-module breakdown from nsightkit's report (table, JSON, CSV; GPU time per module)
#   3. the three heaviest top-level modules of that run (by GPU time; DETR_NCU_MODULES="a b/c ..."
#      picks others), each under
#        ncu --clock-control none --profile-from-start off --nvtx --nvtx-include "nsightkit@<path>/"
#            --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum --csv
#      on one captured iteration (2 warm-up iterations before it)
#   4. detr_ncu.py: DRAM bytes read + written and duration per module, summed over its kernels
#      (the analysis seed 000 did by hand with a calculator), next to the report's GPU time.
# Logs: $OUT/detr/. About 2-3 minutes on an H100. Exit status 1 when a step fails.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${NSIGHTKIT_GPU_BUILD:-$root/build-gpu}
: "${OUT:?set OUT to the output directory}"
out="$OUT/detr"
mkdir -p "$out"
export LD_LIBRARY_PATH="$build/carry-lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! command -v ncu >/dev/null; then
  ncu_dir=$(ls -d /opt/nvidia/nsight-compute/*/ /usr/local/cuda/nsight-compute-*/ 2>/dev/null | tail -1)
  [ -n "$ncu_dir" ] && export PATH="$ncu_dir:$PATH"
fi
exe="$build/examples/detr_inference/detr_inference"
status=0
if [ ! -x "$exe" ]; then
  echo "MISSING $exe (examples/CMakeLists.txt needs add_subdirectory(detr_inference); nvcc + cuDNN needed)"
  exit 1
fi
# Environment that would change what is measured or profiled.
unset NSIGHTKIT_REPORT NSIGHTKIT_CAPTURE NVTX_INJECTION64_PATH
read -r -a extra <<<"${DETR_ARGS:-}"

echo "== 1. tests"
ctest --test-dir "$build" -R '^detr' --output-on-failure >"$out/ctest.txt" 2>&1 || status=1
tail -4 "$out/ctest.txt"
grep -E 'max \|difference\|' -A0 "$out/ctest.txt" || true

echo "== 2. breakdown run"
"$exe" --device cuda --warmup 10 --iterations 20 "${extra[@]}" \
  --report "table=$out/table.txt,json=$out/report.json,csv=$out/report.csv" >"$out/run.txt" 2>&1
rc=$?
cat "$out/run.txt"
[ $rc -eq 0 ] || { echo "FAIL: detr_inference exited $rc"; exit 1; }
head -60 "$out/table.txt"

echo "== 3. ncu on the heaviest modules"
if ! command -v ncu >/dev/null; then
  echo "MISSING ncu"; exit 1
fi
ncu --version >"$out/ncu-version.txt" 2>&1
if [ -n "${DETR_NCU_MODULES:-}" ]; then
  read -r -a modules <<<"$DETR_NCU_MODULES"
else
  mapfile -t modules < <(python3 "$root/tools/gpu/detr_ncu.py" pick --report "$out/report.json" --top 3)
fi
echo "modules: ${modules[*]}"
pairs=()
for m in "${modules[@]}"; do
  name=${m//\//_}
  filter="nsightkit@$m/"
  log="$out/ncu_$name.csv"
  echo "-- $filter"
  start=$(date +%s)
  ncu --clock-control none --profile-from-start off --nvtx --nvtx-include "$filter" \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
    --csv --print-units base --log-file "$log" \
    "$exe" --device cuda --warmup 2 --iterations 1 --quiet --report off "${extra[@]}" \
    >"$out/ncu_$name.app.txt" 2>&1
  rc=$?
  echo "ncu exited $rc after $(($(date +%s) - start)) s: $(grep -c '"gpu__time_duration.sum"' "$log" 2>/dev/null) kernels"
  [ $rc -eq 0 ] || status=1
  pairs+=(--module "$m=$log")
done

echo "== 4. per-module DRAM bytes and duration"
python3 "$root/tools/gpu/detr_ncu.py" summarize --report "$out/report.json" "${pairs[@]}" \
  --markdown "$out/ncu-modules.md" 2>&1 | tee "$out/ncu-modules.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
exit $status
