#!/usr/bin/env bash
# Data-parallel resnet_training on a lent multi-GPU machine (nvidia-h200-x2): NCCL all-reduce,
# per-rank reports and their merge, a straggler, and faults. Builds nothing (run by
# tools/gpu/run-all.sh parallel, or alone with OUT and NSIGHTKIT_GPU_BUILD set); a few minutes.
#   1. equivalence: 1 GPU with the global batch (--bn-groups 2) vs 2 ranks with half each, FP32
#      math and cuDNN's heuristic algorithms (no TF32, no benchmark choice): per-step losses;
#   2. scaling: images/s of 1 GPU and of 2 ranks at the same per-GPU batch, with the all-reduce
#      during the backward pass and after it (--no-overlap);
#   3. the merged report of a balanced run and of a run where rank 1 sleeps --slow-ms per step;
#   4. faults: a rank dying under the launcher; a rank dying without the launcher (the other
#      must end itself within --dist-timeout); a rank that never starts.
# Files in $OUT/parallel: summary.md, runs.log (every run's output), merged tables, traces.
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0): the device tool's rule for shared GPU hosts.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${NSIGHTKIT_GPU_BUILD:-$root/build-gpu}
OUT=${OUT:-$root/gpu-out}
dir="$OUT/parallel"
mkdir -p "$dir"
failures=0
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset NSIGHTKIT_CAPTURE NSIGHTKIT_REPORT NVTX_INJECTION64_PATH RANK WORLD_SIZE LOCAL_RANK
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exe=""
for d in "$build/examples/resnet_training" "$build/resnet_training"; do
  [ -z "$exe" ] && [ -x "$d/resnet_training" ] && exe="$d/resnet_training"
done
[ -z "$exe" ] && { echo "FAIL: resnet_training not built under $build"; exit 1; }
launch=(python3 "$root/tools/nsightkit_launch.py")
merge=(python3 "$root/tools/nsightkit_merge.py")
runs="$dir/runs.log"
: >"$runs"
summary="$dir/summary.md"

# NCCL: the toolkit's copy if the loader finds it, else the one in the Python packages.
if ! ldd "$exe" | grep -q 'libnccl.so.2 => /'; then
  nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
  [ -n "$nccl_lib" ] && export LD_LIBRARY_PATH="$nccl_lib:$LD_LIBRARY_PATH"
fi
{
  echo "# Data-parallel resnet_training ($(date -u +%Y-%m-%d))"
  echo
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | sed 's/^/    /'
  echo "    NCCL: $(ldd "$exe" | grep nccl)"
  nvidia-smi topo -m 2>/dev/null | head -4 | sed 's/^/    /'
  echo
} >"$summary"

run() {  # run NAME TIMEOUT CMD...: output to runs.log and $dir/NAME.log; returns its status
  local name=$1 limit=$2; shift 2
  echo "===== $name: $*" >>"$runs"
  local t0 t1 rc secs
  t0=$(date +%s%N)
  timeout "$limit" "$@" >"$dir/$name.log" 2>&1
  rc=$?
  t1=$(date +%s%N)
  secs=$(( (t1 - t0) / 1000000 ))
  secs="$((secs / 1000)).$(printf '%03d' $((secs % 1000)))"
  cat "$dir/$name.log" >>"$runs"
  echo "===== $name: exit $rc after $secs s" >>"$runs"
  echo "$rc $secs" >"$dir/$name.rc"
  return $rc
}
ips() { grep -o 'throughput: [0-9.]* images/s' "$dir/$1.log" | grep -o '[0-9.]*' | head -1; }

STEPS=${PAR_STEPS:-60}
WARMUP=${PAR_WARMUP:-10}
common=(--device cuda --steps "$STEPS" --warmup "$WARMUP" --image-size 64 --workers 6 --decode-us 50)

# ---- 1. equivalence
exact=(--no-tf32 --no-cudnn-benchmark --report off)
run eq_single 300 "$exe" "${common[@]}" "${exact[@]}" --batch 256 --bn-groups 2 --metrics "$dir/eq_single.json" || ((failures++))
run eq_dp 300 "${launch[@]}" --nproc 2 -- "$exe" "${common[@]}" "${exact[@]}" --batch 128 --metrics "$dir/eq_dp.json" || ((failures++))
{
  echo "## 1. Loss: 1 GPU (batch 256, --bn-groups 2) vs 2 ranks (batch 128 each)"
  echo
  python3 - "$dir/eq_single.json" "$dir/eq_dp.rank0.json" "$dir/eq_dp.rank1.json" <<'EOF'
import json, sys
try:
    a, b, c = (json.load(open(p)) for p in sys.argv[1:4])
except Exception as e:
    print(f"    could not read the metrics: {e}"); sys.exit(0)
la, lb, lc = a["loss"], b["loss"], c["loss"]
d = max(abs(x - y) for x, y in zip(la, lb))
rel = max(abs(x - y) / abs(x) for x, y in zip(la, lb))
print(f"    steps {len(la)}; loss first {la[0]:.6f} / {lb[0]:.6f}, last {la[-1]:.6f} / {lb[-1]:.6f}")
print(f"    max |loss(1 GPU) - loss(2 ranks)| over all steps: {d:.3g} (relative {rel:.3g})")
print(f"    rank 0 and rank 1 report the same (all-reduced) loss: {la and lb == lc}")
print("    step: 1 GPU | 2 ranks")
for i in range(0, len(la), max(1, len(la) // 10)):
    print(f"    {i:4d}: {la[i]:.6f} | {lb[i]:.6f}")
EOF
  echo
} >>"$summary"

# ---- 2. scaling (TF32 and cuDNN's benchmark choice on: the fast configuration)
run sc_1gpu 300 "$exe" "${common[@]}" --batch 128 --report off || ((failures++))
run sc_2gpu 300 "${launch[@]}" --nproc 2 -- "$exe" "${common[@]}" --batch 128 --report off || ((failures++))
run sc_2gpu_nooverlap 300 "${launch[@]}" --nproc 2 -- "$exe" "${common[@]}" --batch 128 --report off --no-overlap || ((failures++))
run sc_1gpu_256 300 "$exe" "${common[@]}" --batch 256 --report off || ((failures++))
{
  echo "## 2. Scaling (images/s; $STEPS steps after $WARMUP warm-up)"
  echo
  echo "| run | per-GPU batch | global batch | images/s |"
  echo "|---|---:|---:|---:|"
  echo "| 1 GPU | 128 | 128 | $(ips sc_1gpu) |"
  echo "| 1 GPU | 256 | 256 | $(ips sc_1gpu_256) |"
  echo "| 2 GPUs, all-reduce during backward | 128 | 256 | $(ips sc_2gpu) |"
  echo "| 2 GPUs, all-reduce after backward (--no-overlap) | 128 | 256 | $(ips sc_2gpu_nooverlap) |"
  echo
  grep -h '^\[rank 0\] parallel:\|^\[rank 0\]           [0-9]' "$dir/sc_2gpu.log" | sed 's/^/    /'
  echo
} >>"$summary"

# ---- 3. merged reports: balanced, then rank 1 sleeping 20 ms per step
for kind in balanced straggler; do
  extra=()
  [ "$kind" = straggler ] && extra=(--slow-rank 1 --slow-ms 20)
  mkdir -p "$dir/$kind"
  run "rep_$kind" 300 "${launch[@]}" --nproc 2 -- "$exe" "${common[@]}" --batch 128 "${extra[@]}" \
    --report "table=$dir/$kind/table.txt,json=$dir/$kind/summary.json,trace=$dir/$kind/trace.json" || ((failures++))
  run "merge_$kind" 120 "${merge[@]}" "$dir/$kind" --trace-out "$dir/$kind/merged-trace.json" \
    --json-out "$dir/$kind/merged.json" --table-out "$dir/$kind/merged.txt" || ((failures++))
  "${merge[@]}" "$dir/$kind" --gpu --top 40 --sort total --table-out "$dir/$kind/merged-gpu.txt" >/dev/null 2>&1
  {
    echo "## 3. Merged report: $kind run ${extra[*]}"
    echo
    echo '```'
    head -30 "$dir/$kind/merged.txt" 2>/dev/null
    echo "[...]"
    sed -n '/^stragglers/,$p' "$dir/$kind/merged.txt" 2>/dev/null
    echo '```'
    echo
    echo "rank 0's breakdown:"
    grep -A12 "Where the time went" "$dir/rep_$kind.log" | grep '^\[rank 0\]' | sed 's/^/    /'
    echo
  } >>"$summary"
done

# ---- 4. faults
run fault_launcher 120 "${launch[@]}" --nproc 2 --grace 5 -- "$exe" "${common[@]}" --batch 128 --report off \
  --die-rank 1 --die-step 20 --dist-timeout 20
[ "$(cut -d' ' -f1 "$dir/fault_launcher.rc")" = 0 ] && ((failures++))
# Without the launcher: nobody stops rank 0; it must end itself (NCCL watchdog).
rdv=$(mktemp -d)
(
  export WORLD_SIZE=2 NSIGHTKIT_RENDEZVOUS=$rdv
  RANK=1 LOCAL_RANK=1 "$exe" "${common[@]}" --batch 128 --report off --die-rank 1 --die-step 20 \
    --dist-timeout 15 >"$dir/fault_manual_rank1.log" 2>&1 &
  export RANK=0 LOCAL_RANK=0
  run fault_manual_rank0 120 "$exe" "${common[@]}" --batch 128 --report off \
    --die-rank 1 --die-step 20 --dist-timeout 15
  wait
)
[ "$(cut -d' ' -f1 "$dir/fault_manual_rank0.rc")" = 0 ] && ((failures++))
rdv=$(mktemp -d)
(
  export WORLD_SIZE=2 NSIGHTKIT_RENDEZVOUS=$rdv RANK=1 LOCAL_RANK=1  # rank 0 never starts
  run fault_nostart 120 "$exe" "${common[@]}" --batch 128 --report off --dist-timeout 10
)
[ "$(cut -d' ' -f1 "$dir/fault_nostart.rc")" = 0 ] && ((failures++))
{
  echo "## 4. Faults (exit code, seconds; the last lines of output)"
  for f in fault_launcher fault_manual_rank0 fault_nostart; do
    echo
    echo "### $f: exit $(cut -d' ' -f1 "$dir/$f.rc") after $(cut -d' ' -f2 "$dir/$f.rc") s"
    echo '```'
    grep -v '^\[rank [01]\] step\|^step' "$dir/$f.log" | tail -8
    echo '```'
  done
} >>"$summary"
cat "$summary"
exit "$failures"
