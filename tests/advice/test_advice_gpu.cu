// The report's advice on a real device (CUPTI source): small programs that each commit one
// mistake on purpose — a CPU-only data range while the GPU idles, a copy from pageable memory, a
// copy serialized with the kernels, a device synchronization inside a module, the legacy default
// stream beside a non-blocking one, launch-bound and graph-candidate bursts — each get the
// matching advice naming the module where it happens; the same programs done right do not. Spin
// kernels wait on the GPU's global timer, so their lengths do not depend on clocks.
#include "gpu/gpu_support.cuh"

#include <nsightkit/capture.hpp>
#include <nsightkit/cuda_check.hpp>
#include <nsightkit/cupti.hpp>
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using nsightkit::Advice;
using nsightkit::Report;
using nsightkit::ReportSnapshot;
using nsightkit::ScopedRange;

namespace {
using nsk_gpu_test::spin;
using nsk_gpu_test::Stream;

__global__ void tiny() {}

constexpr long long us = 1000;
constexpr int steps = 4;

/// A fresh report measuring with CUPTI, every finding shown.
struct Session {
  Session() {
    REQUIRE(nsightkit::cupti_unavailable_reason().empty());
    tiny<<<1, 1>>>();  // load the module and the context before the report starts
    spin<<<1, 1>>>(1);
    NSIGHTKIT_CUDA_CHECK(cudaDeviceSynchronize());
    nsightkit::ReportOptions o;
    o.table.clear();
    o.at_exit = false;
    o.gpu_source = nsightkit::GpuSourceKind::cupti;
    o.advice = nsightkit::AdviceMode::all;
    Report::disable();
    Report::reset();
    REQUIRE(Report::enable(o));
  }
  ~Session() {
    Report::disable();
    Report::reset();
  }
  Session(Session const&) = delete;
  Session& operator=(Session const&) = delete;
};

template <class Body>
void run_steps(Body body) {
  nsightkit::CaptureOptions co;
  co.backends = nsightkit::CaptureBackend::nvtx_range;
  nsightkit::CaptureWindow window{nsightkit::CaptureSchedule{0, 0, steps}, co};
  for (int i = 0; i < steps; ++i) {
    auto step = window.step();
    body(i);
  }
}

/// The finding of `rule`, or null.
Advice const* find(ReportSnapshot const& s, char const* rule) {
  for (Advice const& a : s.advice) {
    if (a.rule == rule) return &a;
  }
  return nullptr;
}

/// The finding of `rule`, which must exist and name `path` first.
Advice const& expect(ReportSnapshot const& s, char const* rule, char const* path) {
  INFO(nsightkit::format_table(s));
  Advice const* a = find(s, rule);
  REQUIRE(a != nullptr);
  REQUIRE_FALSE(a->paths.empty());
  REQUIRE(a->paths.front() == path);
  return *a;
}

void busy_wait(std::chrono::microseconds d) {
  auto const end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}
}  // namespace

TEST_CASE("data loaded on the training thread while the GPU idles: gpu-waits-for-cpu names it") {
  Stream a;
  Session session;
  run_steps([&](int) {
    {
      ScopedRange load{"load_batch"};
      std::this_thread::sleep_for(std::chrono::milliseconds(4));
    }
    ScopedRange fwd{"forward"};
    spin<<<1, 1, 0, a.s>>>(500 * us);
    NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(a.s));
  });
  auto const s = Report::snapshot();
  Advice const& adv = expect(s, "gpu-waits-for-cpu", "load_batch");
  REQUIRE(adv.cost_ns >= 4'000'000);
  REQUIRE(adv.severity == "high");
}

TEST_CASE("a copy from pageable memory is named with its module; from pinned memory it is not") {
  std::size_t const bytes = std::size_t{16} << 20;
  void* dev = nullptr;
  NSIGHTKIT_CUDA_CHECK(cudaMalloc(&dev, bytes));
  std::vector<char> pageable(bytes, 1);
  void* pinned = nullptr;
  NSIGHTKIT_CUDA_CHECK(cudaMallocHost(&pinned, bytes));
  Stream a;
  for (bool use_pinned : {false, true}) {
    Session session;
    run_steps([&](int) {
      ScopedRange data{"data"};
      ScopedRange upload{"upload"};
      NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(dev, use_pinned ? pinned : pageable.data(), bytes,
                                           cudaMemcpyHostToDevice, a.s));
      NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(a.s));
    });
    auto const s = Report::snapshot();
    INFO("pinned: " << use_pinned);
    INFO(nsightkit::format_table(s));
    REQUIRE(s.find("data/upload")->work.h2d.count == steps);
    if (use_pinned) {
      REQUIRE(find(s, "pageable-copies") == nullptr);
    } else {
      Advice const& adv = expect(s, "pageable-copies", "data/upload");
      REQUIRE(adv.cost_ns > 0);
      REQUIRE(adv.evidence.find("4 pageable host to device copies, 67 MB") != std::string::npos);
    }
  }
  NSIGHTKIT_CUDA_CHECK(cudaFreeHost(pinned));
  NSIGHTKIT_CUDA_CHECK(cudaFree(dev));
}

TEST_CASE(
    "copies serialized with the kernels on one stream: copy-overlap names the copying module") {
  std::size_t const bytes = std::size_t{32} << 20;
  void* dev = nullptr;
  void* host = nullptr;
  NSIGHTKIT_CUDA_CHECK(cudaMalloc(&dev, bytes));
  NSIGHTKIT_CUDA_CHECK(cudaMallocHost(&host, bytes));
  Stream a;
  {
    Session session;
    run_steps([&](int) {
      {
        ScopedRange next{"next_batch"};
        NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, a.s));
      }
      ScopedRange fwd{"forward"};
      spin<<<1, 1, 0, a.s>>>(2000 * us);
      NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(a.s));
    });
    auto const s = Report::snapshot();
    Advice const& adv = expect(s, "copy-overlap", "next_batch");
    REQUIRE(adv.cost_ns > 0);
    REQUIRE(s.gpu.devices.at(0).copy_overlap_ns < s.gpu.devices.at(0).copy_busy_ns / 10);
  }
  {  // the fix: the copy on a stream of its own, beside the kernel
    Stream copy;
    Session session;
    run_steps([&](int) {
      ScopedRange fwd{"forward"};
      spin<<<1, 1, 0, a.s>>>(4000 * us);
      {
        ScopedRange next{"next_batch"};
        NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, copy.s));
      }
      NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(copy.s));
      NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(a.s));
    });
    auto const s = Report::snapshot();
    INFO(nsightkit::format_table(s));
    REQUIRE(find(s, "copy-overlap") == nullptr);
  }
  NSIGHTKIT_CUDA_CHECK(cudaFreeHost(host));
  NSIGHTKIT_CUDA_CHECK(cudaFree(dev));
}

TEST_CASE("a device synchronization inside a module: host-sync names it and the time blocked") {
  Stream a;
  Session session;
  run_steps([&](int) {
    ScopedRange model{"model"};
    {
      ScopedRange fwd{"forward"};
      spin<<<1, 1, 0, a.s>>>(1000 * us);
    }
    ScopedRange loss{"loss"};
    NSIGHTKIT_CUDA_CHECK(cudaDeviceSynchronize());
  });
  auto const s = Report::snapshot();
  Advice const& adv = expect(s, "host-sync", "model/loss");
  REQUIRE(adv.cost_ns >= 500'000);  // most of the 1 ms kernel is waited for in each step
  REQUIRE(adv.evidence.find("cudaDeviceSynchronize") != std::string::npos);
  auto const& w = s.find("model/loss")->work;
  REQUIRE(w.sync_calls == steps);
  REQUIRE(w.sync_api == "cudaDeviceSynchronize");
  REQUIRE(s.find("model/forward")->work.sync_calls == 0);
}

TEST_CASE("the legacy default stream beside a non-blocking stream: legacy-stream names it") {
  Stream side;
  Session session;
  run_steps([&](int) {
    {
      ScopedRange fwd{"forward"};
      spin<<<1, 1>>>(100 * us);  // stream 0: the legacy default stream
    }
    {
      ScopedRange aux{"aux"};
      spin<<<1, 1, 0, side.s>>>(100 * us);
    }
    NSIGHTKIT_CUDA_CHECK(cudaDeviceSynchronize());
  });
  auto const s = Report::snapshot();
  expect(s, "legacy-stream", "forward");
  REQUIRE(s.find("forward")->work.legacy_stream_work == steps);
  REQUIRE(s.find("aux")->work.legacy_stream_work == 0);
}

TEST_CASE(
    "kernels shorter than the gaps between their launches: launch-bound, or a graph "
    "candidate when there are many") {
  Stream a;
  for (int kernels : {8, 40}) {
    Session session;
    run_steps([&](int) {
      ScopedRange block{"block"};
      for (int k = 0; k < kernels; ++k) {
        tiny<<<1, 1, 0, a.s>>>();
        busy_wait(std::chrono::microseconds(30));  // host work between launches
      }
      NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(a.s));
    });
    auto const s = Report::snapshot();
    INFO("kernels per call: " << kernels);
    Advice const& adv = expect(s, kernels < 20 ? "launch-bound" : "graph-candidate", "block");
    REQUIRE(find(s, kernels < 20 ? "graph-candidate" : "launch-bound") == nullptr);
    // The gaps are at least the 30 us of host work each.
    REQUIRE(adv.cost_ns >= (kernels - 1) * 20 * us);
  }
}
