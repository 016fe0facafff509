#!/usr/bin/env bash
# DETR inference on a GPU machine. Builds nothing: expects the build directory (NSIGHTKIT_GPU_BUILD,
# default build-gpu, with examples/detr_inference built) and OUT. The RT-DETR latency workflow
# (a per-module breakdown, then Nsight Compute on the heaviest modules), made runnable:
#   1. the example's tests: CPU unit tests, the CPU report check, and the GPU/CPU agreement test
#   2. one configuration (default: base model, batch 8, 640x640, 6+6 layers, 100 queries, fp32;
#      DETR_ARGS adds options), 10 warm-up + 20 captured iterations: per-image latency and the
#      per-module breakdown from nsightkit's report (table, JSON, CSV; GPU time per module)
#   3. the three heaviest top-level modules of that run (by GPU time; DETR_NCU_MODULES="a b/c ..."
#      picks others), each under
#        ncu --clock-control none --profile-from-start off --nvtx --nvtx-include "nsightkit@<path>/"
#            --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum --csv
#      on one captured iteration (2 warm-up iterations before it)
#   4. examples/detr_inference/ncu/detr_ncu.py: DRAM bytes read + written and duration per module,
#      summed over its kernels, next to the report's GPU time.
# Logs: $OUT/detr/. About 2-3 minutes on an H100. Exit status: the number of failed steps.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_init detr
out=$LOG_DIR
exe="$build/examples/detr_inference/detr_inference"
detr_ncu=(python3 "$root/examples/detr_inference/ncu/detr_ncu.py")
if [ ! -x "$exe" ]; then
  fail "$exe not built (examples/CMakeLists.txt needs add_subdirectory(detr_inference); nvcc + cuDNN needed)"
  gpu_finish
fi
read -r -a extra <<<"${DETR_ARGS:-}"

echo "== 1. tests"
step --tail 4 ctest ctest --test-dir "$build" -R '^detr' --output-on-failure
grep -E 'max \|difference\|' "$out/ctest.log" || true

echo "== 2. breakdown run"
step --tail 0 run "$exe" --device cuda --warmup 10 --iterations 20 "${extra[@]}" \
  --report "table=$out/table.txt,json=$out/report.json,csv=$out/report.csv"
cat "$out/run.log"
if [ "$STEP_OK" -eq 0 ]; then gpu_finish; fi
head -n 60 "$out/table.txt"

echo "== 3. ncu on the heaviest modules"
need_ncu || gpu_finish
ncu --version >"$out/ncu-version.txt" 2>&1
if [ -n "${DETR_NCU_MODULES:-}" ]; then
  read -r -a modules <<<"$DETR_NCU_MODULES"
else
  step --tail 0 pick "${detr_ncu[@]}" pick --report "$out/report.json" --top 3
  mapfile -t modules <"$out/pick.log"
  [ "$STEP_OK" -eq 1 ] || modules=()
fi
echo "modules: ${modules[*]}"
pairs=()
for m in "${modules[@]}"; do
  name=ncu_${m//\//_}
  filter="nsightkit@$m/"
  log="$out/$name.csv"
  step --tail 0 "$name" ncu --clock-control none --profile-from-start off --nvtx --nvtx-include "$filter" \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
    --csv --print-units base --log-file "$log" \
    "$exe" --device cuda --warmup 2 --iterations 1 --quiet --report off "${extra[@]}"
  echo "    $(grep -c '"gpu__time_duration.sum"' "$log" 2>/dev/null || true) kernels for $filter"
  pairs+=(--module "$m=$log")
done

echo "== 4. per-module DRAM bytes and duration"
step --tail 0 ncu-modules "${detr_ncu[@]}" summarize --report "$out/report.json" "${pairs[@]}" \
  --markdown "$out/ncu-modules.md"
cat "$out/ncu-modules.log"
gpu_finish
