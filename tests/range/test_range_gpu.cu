// Foundation on a real device: ranges around kernel launches, named streams, CudaError.
#include "support.hpp"

#include <nsightkit/nsightkit.hpp>

#include <vector>

using nsightkit::testing::Recorder;

namespace {
__global__ void add_one(int* x, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] += 1;
}
}  // namespace

TEST_CASE("ranges around kernels on a named stream, with correct results") {
  Recorder rec;
  cudaStream_t stream{};
  NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  nsightkit::name_stream(stream, "compute");
  int const n = 1 << 16;
  int* d = nullptr;
  NSIGHTKIT_CUDA_CHECK(cudaMalloc(&d, n * sizeof(int)));
  NSIGHTKIT_CUDA_CHECK(cudaMemsetAsync(d, 0, n * sizeof(int), stream));
  for (int step = 0; step < 3; ++step) {
    nsightkit::ScopedRange r{"step {}", step};
    add_one<<<(n + 255) / 256, 256, 0, stream>>>(d, n);
    NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
  }
  std::vector<int> h(n);
  NSIGHTKIT_CUDA_CHECK(
      cudaMemcpyAsync(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost, stream));
  NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (int v : h) REQUIRE(v == 3);
  NSIGHTKIT_CUDA_CHECK(cudaFree(d));
  NSIGHTKIT_CUDA_CHECK(cudaStreamDestroy(stream));
  REQUIRE(rec.lines() ==
          nsk_test::expect({"push nsightkit step 0", "pop nsightkit", "push nsightkit step 1",
                            "pop nsightkit", "push nsightkit step 2", "pop nsightkit"}));
}

TEST_CASE("a real CUDA failure on a device is a CudaError") {
  int count = 0;
  NSIGHTKIT_CUDA_CHECK(cudaGetDeviceCount(&count));
  REQUIRE_THROWS_AS(NSIGHTKIT_CUDA_CHECK(cudaSetDevice(count + 5)), nsightkit::CudaError);
  // The error was cleared: the next call succeeds.
  REQUIRE_NOTHROW(NSIGHTKIT_CUDA_CHECK(cudaSetDevice(0)));
}
