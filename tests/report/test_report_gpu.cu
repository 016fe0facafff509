// The report's GPU timing on a real device: kernels of known relative cost (spin kernels of 2 ms
// and 6 ms, timed by the GPU's global timer, so clocks do not matter) come out in the right ratio,
// nested ranges add up, the event pool reuses events, and the trace gets a GPU stream track.
#include "gpu/gpu_support.cuh"

#include <nsightkit/cuda_check.hpp>
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

using nsightkit::GpuRange;
using nsightkit::Report;
using nsightkit::StreamView;

namespace {
using nsk_gpu_test::spin;
using nsk_gpu_test::Stream;

nsightkit::ReportOptions quiet() {
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  return o;
}

constexpr long long ms = 1000000;
}  // namespace

TEST_CASE("GPU times of 2 ms and 6 ms kernels come out 1:3, and a parent holds both") {
  Stream stream;
  spin<<<1, 1, 0, stream.s>>>(1000);  // load the module before anything is timed
  NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(stream.s));
  Report::reset();
  REQUIRE(Report::enable(quiet()));
  for (int i = 0; i < 5; ++i) {
    GpuRange step{StreamView{stream.s}, "step"};
    {
      nsightkit::ScopedRange a{"short"};  // timed too: the stream is current inside `step`
      spin<<<1, 1, 0, stream.s>>>(2 * ms);
    }
    {
      nsightkit::ScopedRange b{"long"};
      spin<<<1, 1, 0, stream.s>>>(6 * ms);
    }
  }
  auto const snap = Report::snapshot();
  Report::disable();
  std::string const table = nsightkit::format_table(snap);
  INFO(table);
  auto const* step = snap.find("step");
  auto const* shorter = snap.find("step/short");
  auto const* longer = snap.find("step/long");
  REQUIRE((step && shorter && longer));
  REQUIRE(shorter->gpu.count == 5);
  REQUIRE(longer->gpu.count == 5);
  REQUIRE(snap.gpu.ranges_pending == 0);
  double const ratio =
      static_cast<double>(longer->gpu.total_ns) / static_cast<double>(shorter->gpu.total_ns);
  REQUIRE(ratio == Approx(3.0).epsilon(0.10));
  REQUIRE(shorter->gpu.mean_ns == Approx(2.0 * ms).epsilon(0.10));
  // The parent's GPU interval holds both kernels (plus launch gaps of microseconds).
  REQUIRE(static_cast<double>(step->gpu.total_ns) ==
          Approx(static_cast<double>(shorter->gpu.total_ns + longer->gpu.total_ns)).epsilon(0.10));
  // Launches are asynchronous: the CPU time of a range is far below its GPU time.
  REQUIRE(longer->cpu.mean_ns < longer->gpu.mean_ns / 2);
  Report::reset();
}

TEST_CASE("the event pool reuses events: no cudaEventCreate per range in steady state") {
  Stream stream;
  Report::reset();
  REQUIRE(Report::enable(quiet()));
  for (int i = 0; i < 1000; ++i) {
    GpuRange r{StreamView{stream.s}, "tiny"};
    spin<<<1, 1, 0, stream.s>>>(1000);
    if (i % 10 == 9) NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(stream.s));
  }
  auto const snap = Report::snapshot();
  Report::disable();
  REQUIRE(snap.find("tiny")->gpu.count == 1000);
  REQUIRE(snap.gpu.ranges_timed == 1000);
  INFO("events created: " << snap.gpu.events_created);
  REQUIRE(snap.gpu.events_created <= 64);  // at most ~2 per pair in flight + anchors, not 2000
  Report::reset();
}

TEST_CASE("the trace has a GPU stream track whose intervals lie inside their CPU ranges' time") {
  Stream stream;
  Report::reset();
  auto o = quiet();
  o.record_trace = true;
  REQUIRE(Report::enable(o));
  {
    GpuRange r{StreamView{stream.s}, "traced"};
    spin<<<1, 1, 0, stream.s>>>(ms);
  }
  NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(stream.s));
  std::string const trace = Report::trace_json();
  Report::disable();
  INFO(trace);
  REQUIRE(trace.find("\"cat\":\"nsightkit gpu\"") != std::string::npos);
  REQUIRE(trace.find("GPU stream") != std::string::npos);
  Report::reset();
}
