// The report's default clock (detail/report_clock.hpp): the TSC calibrated against
// steady_clock where the kernel keeps time with it, else steady_clock. Whichever it is, it must
// read steady_clock's time line: anchored to it, at its rate, never going backwards.
#include <nsightkit/detail/report/engine.hpp>  // the engine's pieces, in either mode
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

#if NSIGHTKIT_ENABLED
namespace nd = nsightkit::detail::report;

TEST_CASE("the default clock is steady_clock's time line, at its rate") {
  nd::Tsc const& t = nd::process_tsc();
  INFO("TSC used: " << (t.usable ? "yes" : "no, " + t.why));
  REQUIRE((t.usable || !t.why.empty()));  // a reason whenever it is not used
  std::int64_t const s0 = nd::steady_now();
  std::int64_t const c0 = nd::clock_now(t);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::int64_t const c1 = nd::clock_now(t);
  std::int64_t const s1 = nd::steady_now();
  // Anchored: within 1 ms of steady_clock (calibration error ~1e-5 of the time since it ran).
  REQUIRE(std::llabs(c0 - s0) < 1'000'000);
  // Same rate: the clock's 50+ ms lie within steady_clock's, give or take 0.1 % and 20 us.
  std::int64_t const clock_elapsed = c1 - c0;
  std::int64_t const steady_elapsed = s1 - s0;
  REQUIRE(clock_elapsed >= 50'000'000 - 20'000);
  REQUIRE(clock_elapsed <= steady_elapsed + steady_elapsed / 1000 + 20'000);
}

TEST_CASE("the default clock never goes backwards on a thread, also across threads") {
  nd::Tsc const& t = nd::process_tsc();
  bool backwards = false;
  auto run = [&t](bool& out) {
    std::int64_t prev = nd::clock_now(t);
    for (int i = 0; i < 200000; ++i) {
      std::int64_t const now = nd::clock_now(t);
      if (now < prev) out = true;
      prev = now;
    }
  };
  bool other = false;
  std::thread th{[&] { run(other); }};
  run(backwards);
  th.join();
  REQUIRE_FALSE(backwards);
  REQUIRE_FALSE(other);
}

TEST_CASE("NSIGHTKIT_REPORT_CLOCK=steady keeps steady_clock, and says so") {
  ::setenv("NSIGHTKIT_REPORT_CLOCK", "steady", 1);
  nd::Tsc const t = nd::tsc_calibrate(nd::clock_choice());
  ::unsetenv("NSIGHTKIT_REPORT_CLOCK");
  REQUIRE_FALSE(t.usable);
  REQUIRE(t.why == "NSIGHTKIT_REPORT_CLOCK=steady");
  std::int64_t const s = nd::steady_now();
  REQUIRE(std::llabs(nd::clock_now(t) - s) < 1'000'000);
}

TEST_CASE("a range around a 20 ms sleep is reported as 20 ms and a little more") {
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  REQUIRE(nsightkit::Report::enable(o));
  {
    nsightkit::ScopedRange r{"sleep"};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto const snap = nsightkit::Report::snapshot();
  nsightkit::Report::disable();
  auto const* row = snap.find("sleep");
  REQUIRE(row != nullptr);
  REQUIRE(row->cpu.total_ns >= 20'000'000 - 20'000);
  REQUIRE(row->cpu.total_ns < 20'000'000 + 500'000'000);  // generous: a loaded CI machine
}
#else
TEST_CASE("disabled: the report records nothing") {
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  REQUIRE_FALSE(nsightkit::Report::enable(o));
}
#endif
