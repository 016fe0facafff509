// Session: a report using a fresh FakeCupti (fake_cupti_source.hpp) as its CUPTI source, for one
// Catch2 test.
#pragma once

#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include "fake_cupti_source.hpp"

#if NSIGHTKIT_ENABLED
namespace nsightkit_test {

/// A report using a fresh fake as its CUPTI source, for one test.
struct Session {
  explicit Session(bool captured = false, nsightkit::AdviceMode advice = nsightkit::AdviceMode::on,
                   nsightkit::AdviceThresholds thresholds = {}) {
    fake = new FakeCupti{};
    all_fakes.push_back(fake);
    nr::cupti_provider.store(&provide_fake);
    nsightkit::Report::disable();
    nsightkit::Report::reset();
    nsightkit::ReportOptions o;
    o.table.clear();
    o.at_exit = false;
    o.gpu_source = nsightkit::GpuSourceKind::cupti;
    o.captured_only = captured;
    o.advice = advice;
    o.advice_thresholds = thresholds;
    REQUIRE(nsightkit::Report::enable(o));
    nr::launch_cursor = nr::LaunchCursor{};
  }
  ~Session() {
    nsightkit::Report::disable();
    nsightkit::Report::reset();
    nr::cupti_provider.store(nullptr);
  }
  Session(Session const&) = delete;
  Session& operator=(Session const&) = delete;
};

}  // namespace nsightkit_test
#endif
