// Memory per thread is bounded by the number of distinct paths it records, not by the number of
// ranges (docs/report.md, "Memory is bounded per thread"): one thread records 10^8 ranges of three
// paths at depths 1 and 2, and the process's peak resident memory stops growing once every path
// has passed the exact-sample limit. Its ctest label is "cpu", so the ThreadSanitizer suite does
// not build it.
#include "sanitizers.hpp"

#include <nsightkit/module.hpp>
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <cstdint>

#include <sys/resource.h>

namespace {

#if defined(__OPTIMIZE__) && !defined(NSK_TEST_ASAN) && !defined(NSK_TEST_TSAN_OR_MSAN)
constexpr std::uint64_t ranges = 100'000'000;
#else
// Unoptimized or sanitized builds run ranges 10-50x slower; 10^6 still pass every path's
// exact-sample limit hundreds of times over.
constexpr std::uint64_t ranges = 1'000'000;
#endif
constexpr std::uint64_t ranges_per_iteration = 4;
constexpr std::uint64_t iterations = ranges / ranges_per_iteration;

/// The most resident memory the process has used so far, in KiB.
long peak_rss_kib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

void record(std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) {
    {
      nsightkit::ScopedRange forward{"forward"};
      { nsightkit::ModuleScope layer{"layer"}; }
      { nsightkit::ModuleScope layer{"layer"}; }
    }
    nsightkit::ScopedRange backward{"backward"};
  }
}

}  // namespace

TEST_CASE("one thread records 10^8 ranges: peak memory bounded by its paths, counts exact") {
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  nsightkit::Report::reset();
  REQUIRE(nsightkit::Report::enable(o) == nsightkit::enabled);

  // Warm-up: every path exists and holds its exact samples (1024 by default); from here on a
  // range may only update counters and histogram buckets that already exist.
  std::uint64_t const warm_up = iterations / 8;
  record(warm_up);
  long const warm_kib = peak_rss_kib();
  record(iterations - warm_up);
  long const end_kib = peak_rss_kib();

  auto const snap = nsightkit::Report::snapshot();
  nsightkit::Report::disable();
  nsightkit::Report::reset();
  INFO("peak resident memory after warm-up " << warm_kib << " KiB, at the end " << end_kib
                                             << " KiB");
  // The documented bound for 3 paths is paths x (samples x 8 B + ~15 KB), under 100 KB, all of
  // it allocated during the warm-up; the slack is for the allocator and the C++ runtime.
  REQUIRE(end_kib - warm_kib < 1024);
  if constexpr (!nsightkit::enabled) {
    REQUIRE(snap.paths.empty());
    return;
  }
  REQUIRE(snap.paths.size() == 3);
  REQUIRE(snap.find("forward")->cpu.count == iterations);
  REQUIRE(snap.find("forward/layer")->cpu.count == 2 * iterations);
  REQUIRE(snap.find("backward")->cpu.count == iterations);
  // Past the exact-sample limit: the percentiles come from the histogram.
  REQUIRE_FALSE(snap.find("forward/layer")->cpu.exact);
  REQUIRE(snap.threads.size() == 1);
  REQUIRE(snap.threads[0].ranges == ranges);
}
