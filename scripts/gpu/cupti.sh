#!/usr/bin/env bash
# The CUPTI GPU source on a GPU machine, against Nsight Compute. Builds nothing (run-all.sh, or
# alone with OUT and NSIGHTKIT_GPU_BUILD set). Steps:
#   1. test_cupti_gpu (exact counts, busy vs summed kernel time, cuBLAS, copies, graphs, threads);
#   2. bench/run_cupti_benchmarks.sh: cost per launch of CUPTI collection and of nsightkit's;
#   3. for resnet_training (one training step) and detr_inference (one iteration), each captured
#      by the capture window: the report with gpu=cupti (with its trace) and with gpu=events,
#      then `ncu --nvtx --csv` of the same captured step (one row per kernel with its NVTX stack);
#      scripts/gpu/compare_cupti_ncu.py compares kernel counts and times per path.
# Files in $OUT/cupti: summary.txt, one log per step, *.json/*.csv reports, ncu-*.csv, compare-*.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_init cupti
dir=$LOG_DIR

# ---- 1. the GPU test ----
step --tail 15 test_cupti_gpu "$build/tests/test_cupti_gpu"

# ---- 2. cost per launch ----
# (CUPTI_SKIP_BENCH=1 leaves it out, for a run that only needs the comparisons below.)
if [ "${CUPTI_SKIP_BENCH:-0}" != 1 ]; then
  step --tail 12 bench_cupti bash "$root/bench/run_cupti_benchmarks.sh" "$build" "$dir/bench_cupti"
fi

# ---- 3. per path against Nsight Compute (CUPTI_SKIP_NCU=1 leaves it out) ----
resnet="$build/examples/resnet_training/resnet_training"
detr="$build/examples/detr_inference/detr_inference"
# cuDNN's autotuner (on by default) may pick other convolution algorithms under ncu, which
# serialises and slows kernels: fixed choices make both runs launch the same kernels.
resnet_args=(--device cuda --steps 8 --warmup 2 --batch "${RESNET_BATCH:-64}" --image-size 64
  --workers 2 --decode-us 0 --no-cudnn-benchmark)
detr_args=(--device cuda --warmup 2 --iterations 1 --quiet)
ncu_args=(--clock-control none --cache-control none --profile-from-start off --nvtx
  --metrics gpu__time_duration.sum)
apps="resnet detr"
[ "${CUPTI_SKIP_NCU:-0}" = 1 ] && apps=""
for app in $apps; do
  if [ "$app" = resnet ]; then
    exe=$resnet
    args=("${resnet_args[@]}")
    capture="wait=5,active=1"
  else
    exe=$detr
    args=("${detr_args[@]}")
    capture=""
  fi
  if [ ! -x "$exe" ]; then
    fail "$exe not built"
    continue
  fi
  for src in cupti events; do
    # The CUPTI run's trace holds CUPTI's record of each kernel (the comparison's --trace).
    trace=""
    [ "$src" = cupti ] && trace=",trace=$dir/$app-cupti.trace.json.gz"
    step --tail 4 "$app-$src" env ${capture:+NSIGHTKIT_CAPTURE=$capture} "$exe" "${args[@]}" \
      --report "window-only,table=$dir/$app-$src.txt,json=$dir/$app-$src.json,csv=$dir/$app-$src.csv,gpu=$src$trace"
  done
  if command -v ncu >/dev/null; then
    step --tail 3 --timeout 400 "$app-ncu" env ${capture:+NSIGHTKIT_CAPTURE=$capture} \
      ncu "${ncu_args[@]}" --csv --print-nvtx-rename none "$exe" "${args[@]}" --report off
    cp "$dir/$app-ncu.log" "$dir/ncu-$app.csv"
    if [ -f "$root/scripts/gpu/compare_cupti_ncu.py" ]; then
      step --tail 40 "$app-compare" python3 "$root/scripts/gpu/compare_cupti_ncu.py" \
        --report "$dir/$app-cupti.json" --events "$dir/$app-events.json" --ncu "$dir/ncu-$app.csv" \
        --trace "$dir/$app-cupti.trace.json.gz" --markdown "$dir/compare-$app.md"
    fi
  else
    fail "ncu not found"
  fi
done

# ---- 4. what the report costs on the examples' step time (CUPTI_SKIP_COST=1 leaves it out) ----
if [ "${CUPTI_SKIP_COST:-0}" = 1 ]; then gpu_finish; fi
# The same run with the report off, with CUPTI on every step, and with CUPTI in the report's
# window-only mode (mode "captured": collection only during the capture window's steps);
# COST_ROUNDS rounds (default 2) of COST_MODES (default "off all captured"; "floor" adds CUPTI's
# collection without nsightkit, "floor_cb" that plus empty callbacks on the calls the report
# watches, "cpu" the report with no GPU source), alternating; COST_RESNET_STEPS (default 60)
# resnet_training steps per run.
for round in $(seq 1 "${COST_ROUNDS:-2}"); do
  for mode in ${COST_MODES:-off all captured}; do
    # floor: the report off, CUPTI collecting the same activity kinds through an injection
    # library (bench/cupti_floor.cpp): what CUPTI itself costs, nsightkit's part taken out.
    inject=()
    case $mode in
      off) spec=off ;;
      floor | floor_cb)
        spec=off
        inject=(env "CUDA_INJECTION64_PATH=$build/bench/libnsightkit_cupti_floor.so")
        [ "$mode" = floor_cb ] && inject+=("NSIGHTKIT_CUPTI_FLOOR_CALLBACKS=1")
        ;;
      cpu) spec="table=$dir/cost-resnet-$mode.txt,gpu=off" ;;
      all) spec="table=$dir/cost-resnet-$mode.txt,gpu=cupti" ;;
      captured) spec="window-only,table=$dir/cost-resnet-$mode.txt,gpu=cupti" ;;
    esac
    step --tail 2 "cost-resnet-$mode-$round" "${inject[@]}" "$resnet" --device cuda \
      --steps "${COST_RESNET_STEPS:-60}" --warmup 10 --report "$spec"
    say "cost resnet $mode round $round: $(grep -h 'throughput:' "$dir/cost-resnet-$mode-$round.log" || true)"
    [ "${mode#floor}" != "$mode" ] && say "  $(grep -h 'cupti_floor:' "$dir/cost-resnet-$mode-$round.log" || echo 'cupti_floor: no records line: the injection did not run')"
    case $mode in
      off | floor | floor_cb) spec=off ;;
      cpu) spec="table=$dir/cost-detr-$mode.txt,gpu=off" ;;
      all) spec="table=$dir/cost-detr-$mode.txt,gpu=cupti" ;;
      captured) spec="window-only,table=$dir/cost-detr-$mode.txt,gpu=cupti" ;;
    esac
    step --tail 4 "cost-detr-$mode-$round" "${inject[@]}" "$detr" --device cuda --warmup 10 \
      --iterations 50 --quiet --report "$spec"
    say "cost detr $mode round $round: $(grep -h 'per batch of' "$dir/cost-detr-$mode-$round.log" || true)"
  done
done
gpu_finish
