#!/usr/bin/env bash
# Step time of a PyTorch ResNet-50 training loop (bench/pytorch_resnet50.py) or DETR-style
# inference loop (bench/pytorch_detr.py) with no tool, under `nsightkit profile`, and under
# torch.profiler, in interleaved rounds on a GPU machine.
#   bench/run_pytorch_benchmarks.sh NSIGHTKIT_COMMAND OUTDIR
# Environment: MODEL (resnet50, the default, or detr), ARGS (more arguments for the model's
# script, e.g. "--image 512"), PYTHON (default /opt/torch/.venv/bin/python), ROUNDS (3), BATCHES ("8 64"),
# STEPS (30), WARMUP (10), MODES ("bare hooks nsightkit torch_profiler"), FLOOR_LIB (the
# libnsightkit_cupti_floor.so of bench/, for the floor mode).
# Modes: bare (no annotation, no tool), hooks (NVTX ranges from module hooks, no tool: what the
# annotation itself costs), floor (hooks, with CUPTI collecting the activity kinds the report
# collects and nothing else: bench/cupti_floor.cpp; CUPTI's own cost), floor_node_hooks (floor,
# plus a no-op pre-hook on every autograd node of each step: what torch's hook API alone costs
# the backward ranges), nsightkit (hooks under
# nsightkit profile, CUPTI on), instrument (nsightkit.instrument(model): forward and backward
# ranges per module, under nsightkit profile, CUPTI on; PYTHONPATH must reach the package and
# PyPI's nvtx), instrument_forward (the same with forward ranges only), emit (PyTorch's
# emit_nvtx() under nsightkit profile), torch_profiler (no annotation; torch.profiler with CUDA
# activity around the timed steps, shapes/stack/memory off). Each run prints a JSON line; the
# summary (median per mode, ratios to `hooks` and `bare`) is OUTDIR/summary.md. The last
# nsightkit run of each batch keeps its table and summary JSON.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command=$1
out=$2
python=${PYTHON:-/opt/torch/.venv/bin/python}
rounds=${ROUNDS:-3}
batches=${BATCHES:-"8 64"}
modes=${MODES:-"bare hooks nsightkit torch_profiler"}
steps=${STEPS:-30}
warmup=${WARMUP:-10}
mkdir -p "$out"
results="$out/runs.jsonl"
: >"$results"
case ${MODEL:-resnet50} in
  resnet50) script="$here/pytorch_resnet50.py" ;;
  detr) script="$here/pytorch_detr.py" ;;
  *) echo "MODEL: ${MODEL} is neither resnet50 nor detr" >&2; exit 2 ;;
esac
read -r -a extra <<<"${ARGS:-}"
for round in $(seq "$rounds"); do
  for batch in $batches; do
    # Alternate the order per round, so drift on the host hits every mode alike.
    list=$modes
    if [ $((round % 2)) -eq 0 ]; then list=$(echo "$modes" | tr ' ' '\n' | tac | tr '\n' ' '); fi
    for mode in $list; do
      args=(--batch "$batch" --steps "$steps" --warmup "$warmup" ${extra[@]+"${extra[@]}"})
      report="table=$out/table-b$batch-$mode.txt,json=$out/summary-b$batch-$mode.json"
      log="$out/log-b$batch-$mode-r$round.txt"
      case $mode in
        bare) cmd=("$python" "$script" "${args[@]}" --annotate none) ;;
        hooks) cmd=("$python" "$script" "${args[@]}" --annotate hooks) ;;
        floor) cmd=(env "CUDA_INJECTION64_PATH=${FLOOR_LIB:?FLOOR_LIB names libnsightkit_cupti_floor.so}"
                    "$python" "$script" "${args[@]}" --annotate hooks) ;;
        floor_node_hooks) cmd=(env "CUDA_INJECTION64_PATH=${FLOOR_LIB:?FLOOR_LIB names libnsightkit_cupti_floor.so}"
                    "$python" "$script" "${args[@]}" --annotate hooks --node-prehooks) ;;
        nsightkit) cmd=("$command" profile --report "$report" -- "$python" "$script" "${args[@]}" --annotate hooks) ;;
        instrument) cmd=("$command" profile --report "$report" -- "$python" "$script" "${args[@]}" --annotate nsightkit) ;;
        instrument_forward) cmd=("$command" profile --report "$report" -- "$python" "$script" "${args[@]}" --annotate nsightkit_forward) ;;
        emit) cmd=("$command" profile --report "$report" -- "$python" "$script" "${args[@]}" --annotate emit_nvtx) ;;
        torch_profiler) cmd=("$python" "$script" "${args[@]}" --annotate none --torch-profiler) ;;
        *) echo "unknown mode $mode" >&2; exit 2 ;;
      esac
      if line=$("${cmd[@]}" 2>"$log" | tail -n 1); then
        echo "{\"round\": $round, \"mode\": \"$mode\", \"run\": $line}" >>"$results"
        echo "round $round batch $batch $mode: $line"
      else
        echo "round $round batch $batch $mode: FAILED (see $log)"
        tail -n 20 "$log"
      fi
    done
  done
done
"$python" - "$results" >"$out/summary.md" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault((r["run"]["batch"], r["mode"]), []).append(r["run"]["step_ms"])
print("| batch | mode | runs | median ms/step | min | max | / hooks | / bare | / floor |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
for (batch, mode), v in sorted(by.items()):
    med = statistics.median(v)
    hooks = by.get((batch, "hooks"))
    bare = by.get((batch, "bare"))
    rh = f"{med / statistics.median(hooks):.3f}" if hooks else "-"
    rb = f"{med / statistics.median(bare):.3f}" if bare else "-"
    floor = by.get((batch, "floor"))
    rf = f"{med / statistics.median(floor):.3f}" if floor else "-"
    print(f"| {batch} | {mode} | {len(v)} | {med:.2f} | {min(v):.2f} | {max(v):.2f} | {rh} | {rb} | {rf} |")
EOF
cat "$out/summary.md"
