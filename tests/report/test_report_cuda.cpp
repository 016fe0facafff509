// GPU timing through the real CUDA driver (loaded at run time), runnable anywhere: where no device
// or driver is usable (this project's CI) it must fail soft — one message, the reason in the
// snapshot, CPU times intact; where a device exists, the same code yields GPU times. CurrentStream
// nests and restores.
#include <nsightkit/detail/report/engine.hpp>  // the engine's pieces, in either mode
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <string>

using nsightkit::CurrentStream;
using nsightkit::GpuRange;
using nsightkit::Report;
using nsightkit::StreamView;

namespace {
bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
}  // namespace

TEST_CASE("CurrentStream makes a stream current for its scope and restores the previous one") {
#if NSIGHTKIT_ENABLED
  auto const& ctx = nsightkit::detail::report::current_gpu;
  REQUIRE(ctx.events == nullptr);
  {
    CurrentStream outer{StreamView::per_thread()};
    REQUIRE(ctx.stream == static_cast<void*>(cudaStreamPerThread));
    REQUIRE(ctx.events == &nsightkit::detail::report::driver_event_api());
    {
      CurrentStream inner{StreamView::legacy()};
      REQUIRE(ctx.stream == static_cast<void*>(cudaStreamLegacy));
    }
    REQUIRE(ctx.stream == static_cast<void*>(cudaStreamPerThread));
  }
  REQUIRE(ctx.events == nullptr);
#else
  static_assert(std::is_empty_v<CurrentStream>);
  CurrentStream c{StreamView::per_thread()};
  (void)c;
#endif
}

TEST_CASE("GPU timing without a usable device fails soft - with one, ranges get GPU times") {
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  Report::reset();
  REQUIRE(Report::enable(o) == nsightkit::enabled);
  {
    CurrentStream on{StreamView::default_stream()};
    for (int i = 0; i < 3; ++i) {
      nsightkit::ScopedRange r{"k"};
    }
  }
  { GpuRange g{StreamView::default_stream(), "g{}", 1}; }
  auto const snap = Report::snapshot();
  Report::disable();
  Report::reset();
  if (!nsightkit::enabled) {
    REQUIRE(snap.paths.empty());
    return;
  }
  REQUIRE(snap.find("k")->cpu.count == 3);
  REQUIRE(snap.find("g1")->cpu.count == 1);
  if (have_device()) {
    REQUIRE(snap.gpu.error.empty());
    REQUIRE(snap.find("k")->gpu.count == 3);
    REQUIRE(snap.find("g1")->gpu.count == 1);
  } else {
    INFO(snap.gpu.error);
    REQUIRE(snap.gpu.error.rfind("no CUDA driver/device (", 0) == 0);
    REQUIRE(snap.find("k")->gpu.count == 0);
    REQUIRE(snap.gpu.ranges_timed == 0);
    REQUIRE(snap.gpu.events_created == 0);
  }
}
