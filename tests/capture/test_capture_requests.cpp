// Captures requested while the program runs (nsightkit::request_capture(), which the report's
// trigger signal and file call): an on-demand window captures its next warm-up and active steps
// per request, a window inside a cycle of its own takes the request after it, requests made
// between two steps are one, and the report learns when a requested capture stops. Under
// NSIGHTKIT_DISABLE a request does nothing and the code's schedule alone decides.
#include "support.hpp"

#include <nsightkit/capture.hpp>
#include <nsightkit/detail/capture_state.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace nsk = nsightkit;
using Catch::Matchers::Contains;
using nsk::CaptureEvent;
using nsk::CaptureOptions;
using nsk::CapturePhase;
using nsk::CaptureSchedule;
using nsk::CaptureWindow;

namespace {

constexpr bool on = nsk::enabled;

struct Backend final : nsk::ProfilerBackend {
  std::vector<std::string> calls;
  std::int64_t step{-1};
  std::string start() override { return log("start"); }
  std::string synchronize() override { return {}; }
  std::string stop() override { return log("stop"); }
  std::string log(char const* what) {
    calls.push_back(std::string{what} + " " + std::to_string(step));
    return {};
  }
};

CaptureOptions options_for(Backend& b) {
  CaptureOptions o;
  o.profiler = &b;
  o.environment_variable = nullptr;
  o.backends = nsk::CaptureBackend::cuda_profiler;
  return o;
}

char letter(CapturePhase p) {
  switch (p) {
    case CapturePhase::skip: return 'S';
    case CapturePhase::wait: return 'W';
    case CapturePhase::warmup: return 'U';
    case CapturePhase::active: return 'A';
    case CapturePhase::done: return 'D';
    case CapturePhase::off: return 'O';
  }
  return '?';
}

std::string steps(CaptureWindow& w, Backend& b, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    b.step = w.next_step();
    auto s = w.step();
    out += letter(s.phase());
  }
  return out;
}

std::vector<std::string> when_on(std::vector<std::string> v) {
  return on ? v : std::vector<std::string>{};
}

}  // namespace

TEST_CASE("an on-demand window waits, then captures warm-up and active steps per request") {
  Backend b;
  CaptureWindow w{CaptureSchedule::requested(1, 2), options_for(b)};
  std::vector<std::string> events;
  w.on_start([&](CaptureEvent const& e) {
    events.push_back("start " + std::to_string(e.first_step) + "-" + std::to_string(e.last_step) +
                     " cycle " + std::to_string(e.cycle) + (e.requested ? " requested" : ""));
  });
  w.on_stop([&](CaptureEvent const& e) {
    events.push_back("stop " + std::to_string(e.last_step) + (e.complete ? " complete" : ""));
  });
  CHECK(steps(w, b, 3) == "WWW");
  std::uint64_t const stops = nsk::detail::capture_state.requested_stops.load();
  nsk::request_capture();
  nsk::request_capture();  // two requests between two steps are one capture
  CHECK(steps(w, b, 5) == (on ? "UAAWW" : "WWWWW"));
  CHECK(nsk::detail::capture_state.requested_stops.load() - stops == (on ? 1u : 0u));
  nsk::request_capture();
  CHECK(steps(w, b, 4) == (on ? "UAAW" : "WWWW"));
  CHECK(b.calls == when_on({"start 4", "stop 5", "start 9", "stop 10"}));
  CHECK(events == when_on({"start 4-5 cycle 0 requested", "stop 5 complete",
                           "start 9-10 cycle 1 requested", "stop 10 complete"}));
  CHECK(nsk::detail::capture_state.requested_stops.load() - stops == (on ? 2u : 0u));
}

TEST_CASE("a request made inside a cycle of the window's schedule is taken after it") {
  Backend b;
  CaptureWindow w{CaptureSchedule{1, 1, 2}, options_for(b)};  // W U A A, then done
  CHECK(steps(w, b, 2) == "WU");
  nsk::request_capture();
  CHECK(steps(w, b, 2) == "AA");  // the schedule's own window runs as it would have
  CHECK(steps(w, b, 4) == (on ? "UAAD" : "DDDD"));  // then the request: warm-up 1, active 2
  CHECK(b.calls == when_on({"start 2", "stop 3", "start 5", "stop 6"}));
}

TEST_CASE("a window counts while it can capture - a request with no window changes nothing") {
  int const before = nsk::detail::capture_state.windows.load();
  {
    Backend b;
    CaptureWindow w{CaptureSchedule::requested(0, 1), options_for(b)};
    CHECK(nsk::detail::capture_state.windows.load() - before == (on ? 1 : 0));
    w.close();
    CHECK(nsk::detail::capture_state.windows.load() == before);
    nsk::request_capture();
    CHECK(steps(w, b, 2) == "OO");  // a closed window takes no request
  }
  CHECK(nsk::detail::capture_state.windows.load() == before);
  Backend b;
  nsk::request_capture();  // made before the window exists: not this window's
  CaptureWindow w{CaptureSchedule::requested(0, 1), options_for(b)};
  CHECK(steps(w, b, 2) == "WW");
}

TEST_CASE("phase_of() tells the phases of the latest requested capture") {
  Backend b;
  CaptureWindow w{CaptureSchedule::requested(1, 1), options_for(b)};
  CHECK(steps(w, b, 1) == "W");
  nsk::request_capture();
  CHECK(steps(w, b, 1) == (on ? "U" : "W"));
  CHECK(w.phase_of(2) == (on ? CapturePhase::active : CapturePhase::wait));
  CHECK(w.phase_of(3) == CapturePhase::wait);
  CHECK(w.schedule().phase_of(2) == CapturePhase::wait);  // the schedule alone
}

TEST_CASE("NSIGHTKIT_CAPTURE's on-demand item") {
  std::string err;
  auto const s = CaptureSchedule::parse("on-demand, warmup=2, active=5", &err);
  REQUIRE(s);
  CHECK(*s == CaptureSchedule::requested(2, 5));
  CHECK(s->phase_of(0) == CapturePhase::wait);
  CHECK(s->phase_of(1000) == CapturePhase::wait);
  CHECK_FALSE(CaptureSchedule::parse("on-demand,wait=3,active=1", &err));
  CHECK_THAT(err, Contains("give warmup and active, not wait or repeat"));
  CHECK_FALSE(CaptureSchedule::parse("on-demand,on-demand,active=1", &err));
  CHECK_THAT(err, Contains("given twice"));
  CHECK_FALSE(CaptureSchedule::parse("on-demand", &err));
  CHECK_THAT(err, Contains("'active' is missing"));
  CHECK_FALSE(CaptureSchedule::parse("ondemand,active=1", &err));
  CHECK_THAT(err, Contains("is not key=value (or on-demand)"));
}
