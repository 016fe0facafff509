#!/usr/bin/env bash
# Data-parallel resnet_training on a machine with two GPUs: 2 ranks started by MPICH's mpiexec
# (from its PyPI wheel, carried in the build: scripts/gpu/mpi.sh), NCCL bootstrapped over MPI,
# the ranks' reports merged on rank 0 (nsightkit::mpi) and offline, a straggler, and faults.
# Builds nothing (run by scripts/gpu/run-all.sh parallel, or alone with OUT and
# NSIGHTKIT_GPU_BUILD set; the build made against the wheel, see mpi.sh prepare); a few minutes.
#   1. equivalence: 1 GPU with the global batch (--bn-groups 2) vs 2 ranks with half each, FP32
#      math and cuDNN's heuristic algorithms (no TF32, no benchmark choice): per-step losses;
#   2. scaling: images/s of 1 GPU and of 2 ranks at the same per-GPU batch, with the all-reduce
#      during the backward pass and after it (--no-overlap);
#   3. the merged report of a balanced run and of a run where rank 1 sleeps --slow-ms per step:
#      rank 0's (in-process) and `nsightkit merge`'s of the per-rank files, which agree;
#   4. faults: a rank exiting abruptly (mpiexec ends the job); a rank stalling (rank 0's
#      NCCL watchdog ends the job after --dist-timeout). Each must fail, in bounded time;
#   5. one rank against Nsight Compute: one captured training step of the 2-rank run, the report
#      with gpu=cupti on both ranks, then the same step with rank 0 under `ncu --nvtx` (rank 1
#      not profiled); scripts/gpu/compare_cupti_ncu.py compares rank 0's per-path kernel counts,
#      summed kernel time and GPU busy time with ncu's.
# PAR_STEPS_RUN (default "1 2 3 4 5") picks the steps to run.
# Files in $OUT/parallel: summary.md, runs.log (every run's output), a log per run, merged
# tables, traces. NVLink multicast stays off (NCCL_NVLS_ENABLE=0, passed on by mpiexec), as
# shared GPU hosts require.
# Exit status: the number of failed steps.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_init parallel summary.md # say/fail lines go to the Markdown summary
dir=$LOG_DIR
summary=$SUMMARY
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset RANK WORLD_SIZE LOCAL_RANK
exe=""
for d in "$build/examples/resnet_training" "$build/resnet_training"; do
  if [ -z "$exe" ] && [ -x "$d/resnet_training" ]; then exe="$d/resnet_training"; fi
done
if [ -z "$exe" ]; then
  fail "resnet_training not built under $build"
  gpu_finish
fi
MPIEXEC=""
if ! mpich_env=$(bash "$root/scripts/gpu/mpi.sh" env "$build"); then
  fail "no MPICH wheel in $build/carry-mpich (scripts/gpu/mpi.sh prepare)"
  gpu_finish
fi
eval "$mpich_env"
if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -lt 2 ]; then
  fail "fewer than 2 GPUs: data-parallel runs need two"
  gpu_finish
fi
ranks2=("$MPIEXEC" -n 2)
if [ ! -x "$build/tools/nsightkit/nsightkit" ]; then
  fail "the nsightkit command is not built under $build (tools/nsightkit)"
  gpu_finish
fi
merge=("$build/tools/nsightkit/nsightkit" merge)

# NCCL is found by gpu_init (lib.sh).
{
  echo "# Data-parallel resnet_training ($(date -u +%Y-%m-%d))"
  echo
  { nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader || true; } | sed 's/^/    /'
  echo "    NCCL: $(ldd "$exe" | grep nccl || true)"
  echo "    MPI: $(ldd "$exe" | grep libmpi || true) ($("$MPIEXEC" --version 2>&1 | grep -m1 -i version || true))"
  { nvidia-smi topo -m 2>/dev/null || true; } | head -n 4 | sed 's/^/    /'
  echo
} >"$summary"

ips() { { grep -o 'throughput: [0-9.]* images/s' "$dir/$1.log" || true; } | { grep -o '[0-9.]*' || true; } | head -n 1; }
rc_of() { cut -d' ' -f1 "$dir/$1.rc"; }
secs_of() { cut -d' ' -f2 "$dir/$1.rc"; }

STEPS=${PAR_STEPS:-60}
WARMUP=${PAR_WARMUP:-10}
common=(--device cuda --steps "$STEPS" --warmup "$WARMUP" --image-size 64 --workers 6 --decode-us 50)
run_steps=" ${PAR_STEPS_RUN:-1 2 3 4 5} "
wanted() { [[ "$run_steps" == *" $1 "* ]]; }

if wanted 1; then

# ---- 1. equivalence
exact=(--no-tf32 --no-cudnn-benchmark --report off)
step --tail 0 --timeout 300 eq_single "$exe" "${common[@]}" "${exact[@]}" --batch 256 --bn-groups 2 \
  --metrics "$dir/eq_single.json"
step --tail 0 --timeout 300 eq_dp "${ranks2[@]}" "$exe" "${common[@]}" "${exact[@]}" --batch 128 \
  --metrics "$dir/eq_dp.json"
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

fi

# ---- 2. scaling (TF32 and cuDNN's benchmark choice on: the fast configuration)
if wanted 2; then
step --tail 0 --timeout 300 sc_1gpu "$exe" "${common[@]}" --batch 128 --report off
step --tail 0 --timeout 300 sc_2gpu "${ranks2[@]}" "$exe" "${common[@]}" --batch 128 --report off
step --tail 0 --timeout 300 sc_2gpu_nooverlap "${ranks2[@]}" "$exe" "${common[@]}" --batch 128 \
  --report off --no-overlap
step --tail 0 --timeout 300 sc_1gpu_256 "$exe" "${common[@]}" --batch 256 --report off
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
  { grep -h -A1 '^parallel:' "$dir/sc_2gpu.log" || true; } | sed 's/^/    /'
  echo
} >>"$summary"

fi

# ---- 3. merged reports: balanced, then rank 1 sleeping 20 ms per step. Rank 0 writes the merged
# table, summary and trace (".merged"); the offline merge of the per-rank files must agree.
kinds=()
if wanted 3; then kinds=(balanced straggler); fi
for kind in "${kinds[@]}"; do
  extra=()
  if [ "$kind" = straggler ]; then extra=(--slow-rank 1 --slow-ms 20); fi
  mkdir -p "$dir/$kind" "$dir/$kind-offline"
  step --tail 0 --timeout 300 "rep_$kind" "${ranks2[@]}" "$exe" "${common[@]}" --batch 128 \
    "${extra[@]}" --report "table=$dir/$kind/table.txt,json=$dir/$kind/summary.json,trace=$dir/$kind/trace.json"
  step --tail 0 --timeout 120 "merge_$kind" "${merge[@]}" "$dir/$kind/summary.rank0.json" \
    "$dir/$kind/summary.rank1.json" "$dir/$kind/trace.rank0.json" "$dir/$kind/trace.rank1.json" \
    --trace "$dir/$kind-offline/trace.json" --json "$dir/$kind-offline/summary.json" \
    -o "$dir/$kind-offline/table.txt"
  if ! cmp -s "$dir/$kind/table.merged.txt" "$dir/$kind-offline/table.txt"; then
    fail "$kind: rank 0's merged table differs from nsightkit merge's (diff in $dir/$kind.table.diff)"
    diff "$dir/$kind/table.merged.txt" "$dir/$kind-offline/table.txt" >"$dir/$kind.table.diff" || true
  fi
  # The GPU table is extra: recorded, not judged.
  step --quiet --expect any "merge_gpu_$kind" "${merge[@]}" "$dir/$kind/summary.rank0.json" \
    "$dir/$kind/summary.rank1.json" --gpu --top 40 --sort total -o "$dir/$kind/merged-gpu.txt"
  {
    echo "## 3. Merged report: $kind run ${extra[*]}"
    echo
    echo '```'
    head -n 30 "$dir/$kind/table.merged.txt" 2>/dev/null || true
    echo "[...]"
    sed -n '/^time in collectives/,$p' "$dir/$kind/table.merged.txt" 2>/dev/null || true
    echo '```'
    echo
    echo "clock offsets measured over MPI (otherData of the merged trace):"
    # (A backslash inside an f-string's braces is a syntax error before Python 3.12.)
    python3 - "$dir/$kind/trace.merged.json" <<'EOF' || echo "    (no clock offsets: the merged trace could not be read)"
import json, sys
for s in json.load(open(sys.argv[1]))["otherData"]["sources"]:
    print("    rank {}: shift {} ns, measured offset {} +- {} ns".format(
        s["rank"], s["shift_ns"], s["measured_offset_ns"], s["offset_uncertainty_ns"]))
EOF
    echo
    echo "rank 0's breakdown:"
    { grep -A12 "Where the time went" "$dir/rep_$kind.log" || true; } | sed 's/^/    /'
    echo
  } >>"$summary"
done

# ---- 4. faults: each of these runs must fail, and end well before its step timeout
if wanted 4; then
step --tail 0 --timeout 120 --expect nonzero fault_die "${ranks2[@]}" "$exe" "${common[@]}" --batch 128 \
  --report off --die-rank 1 --die-step 20 --dist-timeout 20
# Rank 1 sleeps in every forward pass far longer than --dist-timeout: rank 0's GPU waits in the
# all-reduce, its NCCL watchdog gives up, and it ends the job (MPI_Abort).
step --tail 0 --timeout 120 --expect nonzero fault_stall "${ranks2[@]}" "$exe" "${common[@]}" --batch 128 \
  --report off --slow-rank 1 --slow-ms 300000 --dist-timeout 15
{
  echo "## 4. Faults (exit code, seconds; the last lines of output)"
  for f in fault_die fault_stall; do
    echo
    echo "### $f: exit $(rc_of "$f") after $(secs_of "$f") s"
    echo '```'
    { grep -v '^step' "$dir/$f.log" || true; } | tail -n 8
    echo '```'
  done
} >>"$summary"
fi

# ---- 5. rank 0 against Nsight Compute. Both runs capture step 6 (5 skipped) with fixed cuDNN
# algorithms, so both launch the same kernels; under ncu rank 0 runs each kernel alone, so the
# NCCL timeout is raised for rank 1's all-reduce that waits for it.
if wanted 5; then
  if command -v ncu >/dev/null; then
    mkdir -p "$dir/ncu"
    one=(--device cuda --steps 8 --warmup 2 --batch 128 --image-size 64 --workers 6 --decode-us 50
      --no-cudnn-benchmark --dist-timeout 900)
    ncu_args=(--clock-control none --cache-control none --profile-from-start off --nvtx
      --metrics gpu__time_duration.sum --csv --print-nvtx-rename none --log-file "$dir/ncu/ncu-rank0.csv")
    step --tail 0 --timeout 300 ncu_cupti env NSIGHTKIT_CAPTURE=wait=5,active=1 "${ranks2[@]}" "$exe" \
      "${one[@]}" --report "window-only,json=$dir/ncu/cupti.json,table=$dir/ncu/cupti.txt,gpu=cupti"
    step --tail 5 --timeout 900 ncu_rank0 env NSIGHTKIT_CAPTURE=wait=5,active=1 "$MPIEXEC" \
      -n 1 ncu "${ncu_args[@]}" "$exe" "${one[@]}" --report off : -n 1 "$exe" "${one[@]}" --report off
    # (Where this ncu prints its CSV to the terminal instead of --log-file, the step's log has it.)
    if ! grep -qs gpu__time_duration "$dir/ncu/ncu-rank0.csv"; then cp "$dir/ncu_rank0.log" "$dir/ncu/ncu-rank0.csv"; fi
    step --tail 40 --expect any ncu_compare python3 "$root/scripts/gpu/compare_cupti_ncu.py" \
      --report "$dir/ncu/cupti.rank0.json" --ncu "$dir/ncu/ncu-rank0.csv" --markdown "$dir/ncu/compare-rank0.md"
    {
      echo "## 5. Rank 0 of the 2-rank run against ncu --nvtx (one captured step)"
      echo
      cat "$dir/ncu/compare-rank0.md" 2>/dev/null || echo "    (no comparison: see ncu_rank0.log)"
      echo
    } >>"$summary"
  else
    fail "ncu not found: step 5 not run"
  fi
fi
cat "$summary"
gpu_finish
