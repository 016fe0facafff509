#!/usr/bin/env bash
# One kernel's duration by CUPTI's concurrent-kernel records, CUPTI's serialised-kernel records and
# Nsight Compute's gpu__time_duration (kernel_durations.cu): why per-path times from CUPTI and
# from ncu differ by a constant per kernel.
#   kernel_durations.sh build DIR        on a build machine (nvcc, CUPTI headers)
#   kernel_durations.sh run DIR OUTDIR   on the GPU machine (ncu on PATH or in the toolkit)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case ${1:-} in
  build)
    mkdir -p "$2"
    nvcc -O2 -arch="${CUDA_ARCH:-sm_90}" -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror \
      -o "$2/kernel_durations" "$here/kernel_durations.cu" -lcupti
    ;;
  run)
    exe=$2/kernel_durations
    out=$3
    mkdir -p "$out"
    export PATH="/usr/local/cuda/bin:$PATH"
    export LD_LIBRARY_PATH="/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
    for round in 1 2; do
      for mode in concurrent serial; do
        "$exe" $mode >"$out/$mode.$round.csv"
        "$exe" $mode sync >"$out/$mode-sync.$round.csv"
      done
    done
    "$exe" none >"$out/none.csv"
    ncu --csv --clock-control none --cache-control none --metrics gpu__time_duration.sum \
      "$exe" none >"$out/ncu.csv" 2>"$out/ncu.log"
    python3 "$here/kernel_durations.py" "$out"
    ;;
  *)
    echo "usage: $0 build DIR | run DIR OUTDIR" >&2
    exit 2
    ;;
esac
