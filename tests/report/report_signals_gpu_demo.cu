// A CUDA program with the CUPTI source that runs until a signal ends it
// (tests/report/test_report_signals_gpu.cu): steps of three kernels inside ranges; "ready" on
// stdout once GPU work was launched. Its report comes from NSIGHTKIT_REPORT.
#include "gpu/gpu_support.cuh"

#include <nsightkit/cupti.hpp>
#include <nsightkit/report.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>

int main() {
  nsk_gpu_test::Stream stream;
  for (int step = 0;; ++step) {
    {
      nsightkit::ScopedRange s{"step"};
      nsightkit::ScopedRange k{"kernels"};
      for (int i = 0; i < 3; ++i) nsk_gpu_test::spin<<<1, 1, 0, stream.s>>>(100'000);
      NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(stream.s));
    }
    if (step == 20) {
      std::printf("ready\n");
      std::fflush(stdout);
    }
  }
}
