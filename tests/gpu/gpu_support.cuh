// Helpers shared by the GPU tests (one translation unit per test program includes it): a kernel
// that runs for a known time whatever the clocks, and an owned non-blocking stream.
#pragma once

#include <nsightkit/cuda_check.hpp>

#include <cuda_runtime_api.h>

namespace nsk_gpu_test {

/// Spins for `ns` nanoseconds of the GPU's global timer (not cycles: clocks do not matter).
__global__ void spin(long long ns) {
  unsigned long long start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    unsigned long long now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (static_cast<long long>(now - start) >= ns) break;
  }
}

/// A non-blocking stream, destroyed with the object.
struct Stream {
  cudaStream_t s{};
  Stream() { NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { (void)cudaStreamDestroy(s); }
  Stream(Stream const&) = delete;
  Stream& operator=(Stream const&) = delete;
};

}  // namespace nsk_gpu_test
