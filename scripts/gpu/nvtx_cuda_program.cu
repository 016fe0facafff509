// An unmodified CUDA program annotated only with raw NVTX calls (the C API's push/pop and nvtx3's
// scoped_range, NVTX's default domain), for checking `nsightkit profile` against NVIDIA's own
// records (scripts/gpu/nvtx_tool.sh). It knows nothing of nsightkit. Deterministic: every run
// launches the same kernels in the same ranges, with durations set by spin lengths.
//
//   nvtx_cuda_program [steps]
#include <cuda_runtime.h>
#include <nvtx3/nvtx3.hpp>

#include <cstdio>
#include <cstdlib>

namespace {

__global__ void spin(long long cycles) {
  long long const t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

__global__ void scale(float* x, int n, float a) {
  int const i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] *= a;
}

void check(cudaError_t e, char const* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "nvtx_cuda_program: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// About 1.9 GHz on an H100/H200: cycles for `us` microseconds.
long long cycles(int us) { return static_cast<long long>(us) * 1900; }

void layer(char const* name, int kernels, int us, cudaStream_t s, float* x, int n) {
  nvtx3::scoped_range r{name};
  for (int k = 0; k < kernels; ++k) {
    spin<<<1, 32, 0, s>>>(cycles(us));
    scale<<<(n + 255) / 256, 256, 0, s>>>(x, n, 1.0001f);
  }
  check(cudaGetLastError(), name);
}

}  // namespace

int main(int argc, char** argv) {
  int const steps = argc > 1 ? std::atoi(argv[1]) : 5;
  int const n = 1 << 22;
  cudaStream_t s{};
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  float* x = nullptr;
  check(cudaMalloc(&x, sizeof(float) * n), "cudaMalloc");
  check(cudaMemsetAsync(x, 0, sizeof(float) * n, s), "cudaMemsetAsync");
  float* host = nullptr;
  check(cudaMallocHost(&host, sizeof(float) * n), "cudaMallocHost");
  for (int step = 0; step < steps; ++step) {
    nvtxRangePushA("train_step");
    {
      nvtx3::scoped_range fwd{"forward"};
      layer("embed", 2, 150, s, x, n);
      for (int b = 0; b < 3; ++b) {
        nvtxRangePushA("block");
        layer("attention", 3, 120, s, x, n);
        layer("mlp", 2, 200, s, x, n);
        nvtxRangePop();
      }
    }
    nvtxRangePushA("backward");
    layer("grads", 6, 180, s, x, n);
    nvtxRangePop();
    {
      nvtx3::scoped_range opt{"optimizer"};
      check(cudaMemcpyAsync(host, x, sizeof(float) * n, cudaMemcpyDeviceToHost, s), "D2H");
      scale<<<(n + 255) / 256, 256, 0, s>>>(x, n, 0.999f);
      check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    }
    nvtxRangePop();
  }
  spin<<<1, 32, 0, s>>>(cycles(50));  // outside every range
  check(cudaStreamSynchronize(s), "final sync");
  check(cudaFreeHost(host), "cudaFreeHost");
  check(cudaFree(x), "cudaFree");
  check(cudaStreamDestroy(s), "cudaStreamDestroy");
  std::printf("nvtx_cuda_program: %d steps\n", steps);
  return 0;
}
