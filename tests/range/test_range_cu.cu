// Ranges compiled by nvcc, around a kernel launch site. Host code only runs here: no GPU needed.
#include "support.hpp"

#include <nsightkit/nsightkit.hpp>

#include <cuda_runtime_api.h>

using nsightkit::testing::EventKind;
using nsightkit::testing::Recorder;

__global__ void scale(float* x, float a, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] *= a;
}

namespace {
void launch_site() {
  NSIGHTKIT_FUNC_RANGE();
  nsightkit::ScopedRange r{"kernel {}", 1};
  NSIGHTKIT_RANGE("macro {}", 2);
}
}  // namespace

TEST_CASE("ranges and macros compile and emit under nvcc") {
  Recorder rec;
  launch_site();
  REQUIRE(rec.lines() == nsk_test::expect({"push nsightkit launch_site", "push nsightkit kernel 1",
                                           "push nsightkit macro 2", "pop nsightkit",
                                           "pop nsightkit", "pop nsightkit"}));
}

TEST_CASE("streams and devices are named through NVTX's CUDA runtime extension") {
  Recorder rec;
  auto const fake = reinterpret_cast<cudaStream_t>(static_cast<std::uintptr_t>(0x1000));
  nsightkit::name_stream(fake, "copy stream");
  nsightkit::name_cuda_device(0, "gpu0");
  std::vector<std::string> names;
  for (auto const& e : rec.events()) {
    if (e.kind == EventKind::name_cuda_stream) {
      CHECK(e.object == 0x1000u);
      names.push_back(e.message);
    }
    if (e.kind == EventKind::name_cuda_device) names.push_back(e.message);
  }
  REQUIRE(names == nsk_test::expect({"copy stream", "gpu0"}));
}
