#!/usr/bin/env bash
# `nsightkit profile` on an unmodified CUDA program annotated only with raw NVTX calls
# (nvtx_cuda_program.cu), judged against NVIDIA's records: CUPTI's kernel records joined to the
# NVTX ranges open at each launch by a minimal NVTX tool of its own, in another run of the same
# program (nvtx_judge.cpp), and Nsight Compute's per-kernel NVTX stacks; compare_nvtx_judge.py
# compares per path.
#   nvtx_tool.sh build DIR                       on a build machine (nvcc, CUPTI headers)
#   nvtx_tool.sh run DIR OUTDIR NSIGHTKIT        on the GPU machine; NSIGHTKIT is the command
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
case ${1:-} in
  build)
    mkdir -p "$2"
    nvcc -O2 -std=c++17 -arch="${CUDA_ARCH:-sm_90}" -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror \
      -o "$2/nvtx_cuda_program" "$here/nvtx_cuda_program.cu" -ldl
    g++ -O2 -std=c++17 -shared -fPIC -Wall -Wextra -Werror -I"$cuda/include" \
      -o "$2/libnvtx_judge.so" "$here/nvtx_judge.cpp" -L"$cuda/lib64" -lcupti
    ;;
  run)
    dir=$2
    out=$3
    nsk=$4
    mkdir -p "$out"
    export PATH="$cuda/bin:$PATH"
    export LD_LIBRARY_PATH="$cuda/targets/x86_64-linux/lib:$cuda/lib64:${LD_LIBRARY_PATH:-}"
    steps=${STEPS:-5}
    rc=0
    "$nsk" profile --report "table=$out/table.txt,json=$out/report.json,trace=$out/trace.json,gpu=cupti" \
      -- "$dir/nvtx_cuda_program" "$steps" >"$out/profile.log" 2>&1 || rc=1
    NSIGHTKIT_JUDGE_OUT="$out/judge.csv" NVTX_INJECTION64_PATH="$dir/libnvtx_judge.so" \
      "$dir/nvtx_cuda_program" "$steps" >"$out/judge.log" 2>&1 || rc=1
    ncu --clock-control none --cache-control none --nvtx --csv --metrics gpu__time_duration.sum \
      "$dir/nvtx_cuda_program" "$steps" >"$out/ncu.csv" 2>"$out/ncu.log" || rc=1
    python3 "$here/compare_nvtx_judge.py" --report "$out/report.json" --judge "$out/judge.csv" \
      --ncu "$out/ncu.csv" --markdown "$out/compare.md" >"$out/compare.log" 2>&1 || rc=1
    cat "$out/compare.log"
    exit $rc
    ;;
  *)
    echo "usage: nvtx_tool.sh build DIR | run DIR OUTDIR NSIGHTKIT" >&2
    exit 2
    ;;
esac
