// Module hooks on a real device: a module tree launching kernels, per-module GPU timing from hooks
// with CUDA events, kernel launches attributed to module paths, instrument() around an H2D fetch.
#include "support.hpp"

#include <nsightkit/cuda_check.hpp>
#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace nsk = nsightkit;
using nsightkit::testing::Recorder;
using nsk::Hooked;
using nsk::ModuleInfo;
using Lines = std::vector<std::string>;

namespace {

__global__ void scale_kernel(float* x, int n, float s) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] *= s;
}
__global__ void add_kernel(float* x, float const* y, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] += y[i];
}

/// Kernel launches per module path (the path current when the kernel was launched).
std::map<std::string, int>* launches = nullptr;

void count_launch() {
  if (launches != nullptr) ++(*launches)[std::string{nsk::current_module_path()}];
}

constexpr int n = 1 << 14;
constexpr unsigned blocks = (n + 255) / 256;

struct Scale {
  float s;
  cudaStream_t stream;
  void forward(float* x) const {
    scale_kernel<<<blocks, 256, 0, stream>>>(x, n, s);
    NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
    count_launch();
  }
};

/// y = x; y = 3 * (2 * y); x += y  -> x * 7
struct Residual {
  cudaStream_t stream;
  float* scratch;
  Hooked<Scale> scale1{"scale1", 2.0f, stream};
  Hooked<Scale> scale2{"scale2", 3.0f, stream};
  void forward(float* x) {
    NSIGHTKIT_CUDA_CHECK(
        cudaMemcpyAsync(scratch, x, n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    scale1(scratch);
    scale2(scratch);
    add_kernel<<<blocks, 256, 0, stream>>>(x, scratch, n);
    NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
    count_launch();
  }
};

struct Net {
  cudaStream_t stream;
  float* scratch;
  Hooked<Residual> block0{"0", stream, scratch};
  Hooked<Residual> block1{"1", stream, scratch};
  void forward(float* x) {
    nsk::ModuleScope scope{"net"};
    block0(x);
    block1(x);
  }
};

struct Device {
  cudaStream_t stream{};
  float* x = nullptr;
  float* scratch = nullptr;
  Device() {
    NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    NSIGHTKIT_CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
    NSIGHTKIT_CUDA_CHECK(cudaMalloc(&scratch, n * sizeof(float)));
  }
  ~Device() {
    (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaFree(x));
    (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaFree(scratch));
    (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream));
  }
  Device(Device const&) = delete;
  Device& operator=(Device const&) = delete;
  void fill(float v) {
    std::vector<float> h(n, v);
    NSIGHTKIT_CUDA_CHECK(
        cudaMemcpyAsync(x, h.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
    NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  std::vector<float> read() {
    std::vector<float> h(n);
    NSIGHTKIT_CUDA_CHECK(
        cudaMemcpyAsync(h.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
    return h;
  }
};

}  // namespace

TEST_CASE("a module tree around kernels: correct results, nested module ranges") {
  Device dev;
  Net net{dev.stream, dev.scratch};
  dev.fill(1.0f);
  Recorder rec;
  net.forward(dev.x);
  for (float v : dev.read()) REQUIRE(v == 49.0f);  // two residual blocks: x * 7 * 7
  Lines const one_block{"push nsightkit scale1", "pop nsightkit", "push nsightkit scale2",
                        "pop nsightkit"};
  Lines expected{"push nsightkit net", "push nsightkit 0"};
  expected.insert(expected.end(), one_block.begin(), one_block.end());
  expected.insert(expected.end(), {"pop nsightkit", "push nsightkit 1"});
  expected.insert(expected.end(), one_block.begin(), one_block.end());
  expected.insert(expected.end(), {"pop nsightkit", "pop nsightkit"});
  REQUIRE(rec.lines() == nsk_test::expect(expected));
}

TEST_CASE("kernel launches are attributed to the module path that launched them") {
  Device dev;
  Net net{dev.stream, dev.scratch};
  dev.fill(1.0f);
  std::map<std::string, int> counts;
  launches = &counts;
  net.forward(dev.x);
  net.forward(dev.x);
  launches = nullptr;
  NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(dev.stream));
  if (nsk::enabled) {
    CHECK(counts == std::map<std::string, int>{{"net/0", 2},
                                               {"net/0/scale1", 2},
                                               {"net/0/scale2", 2},
                                               {"net/1", 2},
                                               {"net/1/scale1", 2},
                                               {"net/1/scale2", 2}});
  } else {
    CHECK(counts == std::map<std::string, int>{{"", 12}});
  }
}

TEST_CASE("hooks time each module on the GPU with CUDA events") {
  Device dev;
  Net net{dev.stream, dev.scratch};
  dev.fill(1.0f);
  struct Timing {
    cudaEvent_t start{};
    cudaEvent_t stop{};
  };
  std::map<std::string, std::vector<Timing>> timings;
  std::vector<cudaEvent_t> events;
  auto make_event = [&] {
    cudaEvent_t e{};
    NSIGHTKIT_CUDA_CHECK(cudaEventCreate(&e));
    events.push_back(e);
    return e;
  };
  {
    auto pre = nsk::add_pre_hook([&](ModuleInfo const& m) {
      Timing t{make_event(), make_event()};
      NSIGHTKIT_CUDA_CHECK(cudaEventRecord(t.start, dev.stream));
      timings[std::string{m.path}].push_back(t);
    });
    auto post = nsk::add_post_hook([&](ModuleInfo const& m) {
      NSIGHTKIT_CUDA_CHECK(cudaEventRecord(timings[std::string{m.path}].back().stop, dev.stream));
    });
    net.forward(dev.x);
  }
  NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(dev.stream));
  if (nsk::enabled) {
    REQUIRE(timings.size() == 7u);  // net, 0, 0/scale1, 0/scale2, 1, 1/scale1, 1/scale2
    for (auto const& [path, ts] : timings) {
      REQUIRE(ts.size() == 1u);
      float ms = -1.0f;
      NSIGHTKIT_CUDA_CHECK(cudaEventElapsedTime(&ms, ts[0].start, ts[0].stop));
      INFO(path);
      CHECK(ms >= 0.0f);
    }
  } else {
    CHECK(timings.empty());
  }
  for (cudaEvent_t e : events) NSIGHTKIT_CUDA_CHECK(cudaEventDestroy(e));
}

TEST_CASE("instrument wraps a host-to-device fetch and keeps its result") {
  Device dev;
  Recorder rec;
  std::vector<float> host(n, 5.0f);
  auto fetch = nsk::instrument(
      [&](float* dst) {
        NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(dst, host.data(), n * sizeof(float),
                                             cudaMemcpyHostToDevice, dev.stream));
        return cudaStreamSynchronize(dev.stream);
      },
      "fetch");
  REQUIRE(fetch(dev.x) == cudaSuccess);
  for (float v : dev.read()) REQUIRE(v == 5.0f);
  REQUIRE(rec.lines() == nsk_test::expect({"push nsightkit fetch", "pop nsightkit"}));
}
