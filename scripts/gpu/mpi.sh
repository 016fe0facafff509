#!/usr/bin/env bash
# MPI on the GPU machines, which have none installed: MPICH from its PyPI wheel ("mpich", about
# 13 MB: libmpi.so.12, Hydra's mpiexec, mpi.h), carried inside the build directory and unpacked
# on the GPU machine. No pip, compiler or network is needed there.
#
# On the development machine, before scripts/gpu/prepare-build.sh:
#   scripts/gpu/mpi.sh prepare [build dir]
#     downloads the wheel with pip into <build>/carry-mpich/ (carried with the build: the device
#     call names the build directory in `carry`) and unpacks it into <build>-mpich/ (not carried)
#     to build against; prints the line that builds the GPU tree with it:
#       scripts/gpu/prepare-build.sh <build> -DMPI_HOME=<build>-mpich/... -DMPI_CXX_SKIP_MPICXX=ON
#     (the programs find libmpi.so.12 on the GPU machine through LD_LIBRARY_PATH, set below).
#
# On the GPU machine (scripts/gpu/run-all.sh mpi, or alone with OUT and NSIGHTKIT_GPU_BUILD):
#   scripts/gpu/mpi.sh
#     unpacks the carried wheel into <build>/mpich and, with its mpiexec:
#     1. tests/mpi/test_mpi.py --case merge and --case faults: the nsightkit::mpi checks of CI
#        (the merged table, summary, CSV and trace against the per-rank files and the offline
#        merge; a rank that throws, stalls or dies ends the job), under MPICH instead of Open MPI;
#     2. resnet_training on the CPU backend, 1 process vs 2 ranks: the same losses.
#     The GPU runs (2 ranks on 2 GPUs, NCCL bootstrapped over MPI) are scripts/gpu/parallel.sh.
#   scripts/gpu/mpi.sh env [build dir]
#     unpacks the wheel if needed and prints the shell lines that set MPIEXEC, PATH and
#     LD_LIBRARY_PATH (parallel.sh: eval "$(bash scripts/gpu/mpi.sh env "$build")").
# Exit status: the number of failed steps.

MPICH_VERSION=${MPICH_VERSION:-5.0.2}

# mpich_setup BUILD: MPICH from BUILD/carry-mpich/*.whl, unpacked into BUILD/mpich once; sets
# MPIEXEC and puts its bin/ and lib/ first on PATH and LD_LIBRARY_PATH. Returns 1, saying why,
# when there is no wheel.
mpich_setup() {
  local b=$1 wheel data
  wheel=$(find "$b/carry-mpich" -maxdepth 1 -name 'mpich-*.whl' 2>/dev/null | sort | tail -n 1 || true)
  if [ -z "$wheel" ]; then
    echo "mpi.sh: no MPICH wheel in $b/carry-mpich (run scripts/gpu/mpi.sh prepare $b on the development machine)" >&2
    return 1
  fi
  if [ ! -x "$b/mpich/bin/mpiexec" ]; then
    rm -rf "$b/mpich.tmp"
    python3 -m zipfile -e "$wheel" "$b/mpich.tmp" || return 1
    data=$(find "$b/mpich.tmp" -maxdepth 2 -path '*/mpich-*.data/data' | head -n 1)
    rm -rf "$b/mpich"
    mv "$data" "$b/mpich"
    rm -rf "$b/mpich.tmp"
    chmod +x "$b"/mpich/bin/*  # zip archives do not keep the execute bits
  fi
  MPIEXEC="$b/mpich/bin/mpiexec"
  export PATH="$b/mpich/bin:$PATH"
  # lib/mpich: the libfabric and UCX it was built with, before any older system copy
  export LD_LIBRARY_PATH="$b/mpich/lib:$b/mpich/lib/mpich${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # Hydra on one host: local processes, no ssh.
  export HYDRA_LAUNCHER=fork
  return 0
}

set -euo pipefail

if [ "${1:-}" = env ]; then
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  mpich_setup "${2:-${NSIGHTKIT_GPU_BUILD:-$root/build-gpu}}" >&2
  printf 'MPIEXEC=%q\nexport PATH=%q\nexport LD_LIBRARY_PATH=%q\nexport HYDRA_LAUNCHER=fork\n' \
    "$MPIEXEC" "$PATH" "$LD_LIBRARY_PATH"
  exit 0
fi

if [ "${1:-}" = prepare ]; then
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  build=$(mkdir -p "${2:-$root/build-gpu}" && cd "${2:-$root/build-gpu}" && pwd)
  mkdir -p "$build/carry-mpich"
  rm -f "$build"/carry-mpich/*.whl
  python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform manylinux_2_28_x86_64 "mpich==$MPICH_VERSION" -d "$build/carry-mpich"
  wheel=$(find "$build/carry-mpich" -maxdepth 1 -name 'mpich-*.whl' | head -n 1)
  unpacked="$build-mpich"
  rm -rf "$unpacked"
  python3 -m zipfile -e "$wheel" "$unpacked"
  data=$(find "$unpacked" -maxdepth 2 -path '*/mpich-*.data/data' | head -n 1)
  chmod +x "$data"/bin/*
  echo "MPICH $MPICH_VERSION: $(du -h "$wheel" | cut -f1) carried in $build/carry-mpich, unpacked in $data"
  echo "build the GPU tree against it:"
  echo "  scripts/gpu/prepare-build.sh $build -DMPI_HOME=$data -DMPI_CXX_SKIP_MPICXX=ON"
  exit 0
fi

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_init mpi
if ! mpich_setup "$build"; then
  fail "no MPICH wheel in $build/carry-mpich"
  gpu_finish
fi
say "MPICH: $("$MPIEXEC" --version 2>&1 | grep -m1 -i 'version' || echo '?') ($MPIEXEC)"

demo="$build/tests/mpi_report_demo"
if [ -x "$demo" ]; then
  for c in merge faults; do
    step --timeout 300 "test_mpi_$c" python3 "$root/tests/mpi/test_mpi.py" --case "$c" --demo "$demo" \
      --mpiexec "$MPIEXEC" --np-flag=-n --python "$root/python" --checker "$root/tests/check_trace.py" \
      --workdir "$LOG_DIR/test_mpi_$c"
  done
else
  fail "$demo not built (the build found no MPI: was it configured with the MPI_HOME mpi.sh prepare printed?)"
fi

exe="$build/examples/resnet_training/resnet_training"
if [ -x "$exe" ]; then
  cpu=(--device cpu --steps 12 --warmup 2 --workers 1 --report off)
  step --tail 5 resnet_cpu_1 "$exe" "${cpu[@]}" --batch 16 --bn-groups 2 --metrics "$LOG_DIR/cpu1.json"
  step --tail 5 --timeout 300 resnet_cpu_2 "$MPIEXEC" -n 2 "$exe" "${cpu[@]}" --batch 8 --metrics "$LOG_DIR/cpu2.json"
  if ! python3 - "$LOG_DIR/cpu1.json" "$LOG_DIR/cpu2.rank0.json" "$LOG_DIR/cpu2.rank1.json" <<'EOF'; then
import json, sys
a, b, c = (json.load(open(p))["loss"] for p in sys.argv[1:4])
d = max(abs(x - y) for x, y in zip(a, b))
print(f"1 process vs 2 ranks (CPU backend, MPICH): max loss difference {d:.3g}; ranks agree: {b == c}")
sys.exit(0 if d < 1e-4 and b == c and len(a) == len(b) == 12 else 1)
EOF
    fail "resnet_training: 2 ranks over MPICH do not train as 1 process"
  fi
else
  fail "$exe not built"
fi
gpu_finish
