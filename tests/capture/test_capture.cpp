// CaptureWindow: schedules, backend call sequences, NVTX emissions, callbacks, environment
// parsing, early ends, exit(), threads. Passes in enabled and NSIGHTKIT_DISABLE builds: there,
// phases and step numbers stay, every side effect (backend, NVTX, callbacks, environment) is gone.
#include "support.hpp"

#include <nsightkit/capture.hpp>
#include <nsightkit/detail/cuda_driver.hpp>
#include <nsightkit/detail/process.hpp>  // environment_checked
#include <nsightkit/detail/sinks.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__unix__)
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace nsk = nsightkit;
using Catch::Matchers::Contains;
using nsightkit::testing::EventKind;
using nsightkit::testing::Recorder;
using nsk::CaptureBackend;
using nsk::CaptureEvent;
using nsk::CaptureOptions;
using nsk::CapturePhase;
using nsk::CaptureSchedule;
using nsk::CaptureWindow;
using nsk_test::expect;
using Lines = std::vector<std::string>;

namespace {

constexpr bool on = nsk::enabled;

/// Sets (or unsets, with nullptr) an environment variable for a scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(char const* name, char const* value) : name_{name} {
    if (char const* old = std::getenv(name)) old_ = std::string{old};
    set(value);
  }
  ~ScopedEnv() { set(old_ ? old_->c_str() : nullptr); }
  ScopedEnv(ScopedEnv const&) = delete;
  ScopedEnv& operator=(ScopedEnv const&) = delete;

 private:
  void set(char const* value) {
    if (value != nullptr)
      ::setenv(name_, value, 1);
    else
      ::unsetenv(name_);
  }
  char const* name_;
  std::optional<std::string> old_;
};

/// Records each call as "<call> <step>", the step being whatever the test loop set in `step`.
struct RecordingBackend final : nsk::ProfilerBackend {
  std::vector<std::string> calls;
  std::int64_t step{-1};
  std::string fail_start;  ///< returned by start() when not empty
  std::string fail_stop;   ///< returned by stop() when not empty
  bool throw_on_start{false};
  std::function<void(std::string const&)> also;  ///< called with the bare call name

  std::string start() override { return log("start", fail_start); }
  std::string synchronize() override { return log("sync", {}); }
  std::string stop() override { return log("stop", fail_stop); }

 private:
  std::string log(char const* what, std::string result) {
    calls.push_back(std::string{what} + " " + std::to_string(step));
    if (also) also(what);
    if (throw_on_start && std::string{what} == "start") throw std::runtime_error("boom");
    return result;
  }
};

/// Options wired to a recording backend and a diagnostics list.
CaptureOptions options_for(RecordingBackend& b, std::vector<std::string>& diagnostics) {
  CaptureOptions o;
  o.profiler = &b;
  o.diagnostics = [&diagnostics](std::string const& m) { diagnostics.push_back(m); };
  return o;
}

/// One letter per phase: S skip, W wait, U warmup, A active, D done, O off.
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

/// Runs `n` steps, telling the backend which step is current; returns the steps' phase letters.
std::string run_steps(CaptureWindow& w, RecordingBackend& b, std::int64_t n) {
  std::string letters;
  for (std::int64_t i = 0; i < n; ++i) {
    b.step = w.next_step();
    auto s = w.step();
    REQUIRE(s.number() == b.step);
    letters += letter(s.phase());
  }
  return letters;
}

/// Phase letters straight from a schedule.
std::string letters_of(CaptureSchedule const& s, std::int64_t n) {
  std::string out;
  for (std::int64_t i = 0; i < n; ++i) out += letter(s.phase_of(i));
  return out;
}

Lines when_on(Lines l) { return on ? l : Lines{}; }

std::string describe(CaptureEvent const& e) {
  return std::to_string(e.first_step) + "-" + std::to_string(e.last_step) + " cycle " +
         std::to_string(e.cycle) + (e.complete ? " complete" : "");
}

}  // namespace

TEST_CASE("capture types: a step and a window are neither copyable nor movable") {
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<nsk::CaptureStep>);
  STATIC_REQUIRE_FALSE(std::is_move_constructible_v<nsk::CaptureStep>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<CaptureWindow>);
  STATIC_REQUIRE_FALSE(std::is_move_constructible_v<CaptureWindow>);
  STATIC_REQUIRE(std::is_nothrow_destructible_v<nsk::CaptureStep>);
  STATIC_REQUIRE(std::is_nothrow_destructible_v<CaptureWindow>);
  // The schedule is usable at compile time.
  constexpr CaptureSchedule s{5, 2, 3};
  STATIC_REQUIRE(s.phase_of(4) == CapturePhase::wait);
  STATIC_REQUIRE(s.phase_of(5) == CapturePhase::warmup);
  STATIC_REQUIRE(s.phase_of(7) == CapturePhase::active);
  STATIC_REQUIRE(s.phase_of(10) == CapturePhase::done);
  STATIC_REQUIRE(s.starts_window(7));
  STATIC_REQUIRE(s.ends_window(9));
  STATIC_REQUIRE_FALSE(s.ends_window(8));
  CHECK(std::string{nsk::to_string(CapturePhase::warmup)} == "warmup");
  CHECK(std::string{nsk::to_string(CapturePhase::off)} == "off");
}

namespace {
struct PhaseCase {
  char const* name;
  CaptureSchedule schedule;
  char const* phases;  ///< one letter per step: S skip, W wait, U warmup, A active, D done
  std::vector<std::pair<std::int64_t, std::int64_t>> windows;  ///< (first, last) active steps
};
}  // namespace

TEST_CASE("phase of every step with backend calls and callbacks for many schedules") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  std::vector<PhaseCase> const cases{
      {"wait=5,warmup=2,active=3", {5, 2, 3}, "WWWWWUUAAADDDDDDDDDD", {{7, 9}}},
      {"defaults: active=1", {}, "ADDD", {{0, 0}}},
      {"active=1 only", {0, 0, 1}, "ADDDDDDDDD", {{0, 0}}},
      {"repeat=2", {1, 1, 2, 2}, "WUAAWUAADDDD", {{2, 3}, {6, 7}}},
      {"repeat=0 (forever)", {2, 0, 1, 0}, "WWAWWAWWAWWA", {{2, 2}, {5, 5}, {8, 8}, {11, 11}}},
      {"skip_first=3", {1, 1, 1, 1, 3}, "SSSWUADDD", {{5, 5}}},
      {"back-to-back windows", {0, 0, 3, 0}, "AAAAAAAAA", {{0, 2}, {3, 5}, {6, 8}}},
      {"warmup only, skip 1, repeat 3",
       {0, 2, 2, 3, 1},
       "SUUAAUUAAUUAADD",
       {{3, 4}, {7, 8}, {11, 12}}},
      {"skip 2, repeat 2", {3, 0, 2, 2, 2}, "SSWWWAAWWWAADDD", {{5, 6}, {10, 11}}},
      {"alternating", {0, 1, 1, 0}, "UAUAUAUA", {{1, 1}, {3, 3}, {5, 5}, {7, 7}}},
      {"ends mid-window", {2, 0, 5}, "WWAAA", {{2, 4}}},
  };
  for (auto const& c : cases) {
    INFO(c.name);
    auto const n = static_cast<std::int64_t>(std::string{c.phases}.size());
    CHECK(letters_of(c.schedule, n) == c.phases);

    RecordingBackend b;
    std::vector<std::string> diagnostics;
    std::vector<std::string> started;
    std::vector<std::string> stopped;
    {
      CaptureWindow w{c.schedule, options_for(b, diagnostics)};
      w.on_start([&](CaptureEvent const& e) { started.push_back(describe(e)); });
      w.on_stop([&](CaptureEvent const& e) { stopped.push_back(describe(e)); });
      for (std::int64_t i = 0; i < n; ++i) CHECK(w.phase_of(i) == c.schedule.phase_of(i));
      CHECK(run_steps(w, b, n) == c.phases);
      CHECK(w.next_step() == n);
    }
    Lines calls;
    Lines starts;
    Lines stops;
    std::int64_t cycle = 0;
    for (auto const& [first, last] : c.windows) {
      calls.push_back("start " + std::to_string(first));
      calls.push_back("sync " + std::to_string(last));
      calls.push_back("stop " + std::to_string(last));
      std::int64_t const planned = first + c.schedule.active - 1;
      starts.push_back(describe(CaptureEvent{first, planned, cycle, false}));
      bool const complete = last == planned;
      stops.push_back(describe(CaptureEvent{first, last, cycle, complete}));
      ++cycle;
    }
    // "ends mid-window": the window's destructor stopped it after step 4, incomplete.
    CHECK(b.calls == when_on(calls));
    CHECK(started == when_on(starts));
    CHECK(stopped == when_on(stops));
    CHECK(diagnostics.empty());
  }
}

TEST_CASE("a schedule's window edges and cycles") {
  CaptureSchedule const s{1, 1, 2, 0, 2};  // S S | W U A A | W U A A | ...
  CHECK(s.cycle_length() == 4);
  CHECK(s.cycle_of(0) == -1);
  CHECK(s.cycle_of(2) == 0);
  CHECK(s.cycle_of(6) == 1);
  CHECK(s.starts_window(4));
  CHECK_FALSE(s.starts_window(5));
  CHECK(s.ends_window(5));
  CHECK(s.starts_window(8));
  CHECK(s.ends_window(9));
  CHECK(s.phase_of(-1) == CapturePhase::skip);
  // Far steps do not overflow.
  CaptureSchedule const forever{0, 0, 1, 0};
  CHECK(forever.phase_of(std::numeric_limits<std::int64_t>::max()) == CapturePhase::active);
}

TEST_CASE("window edges interleave with NVTX in a fixed order") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  Recorder rec;
  RecordingBackend b;
  std::vector<std::string> diagnostics;
  // Every backend call and callback is noted with the number of NVTX lines recorded so far,
  // then merged into the NVTX sequence.
  std::vector<std::pair<std::size_t, std::string>> notes;
  b.also = [&](std::string const& call) {
    notes.emplace_back(rec.lines().size(), "profiler " + call);
  };
  {
    CaptureWindow w{CaptureSchedule{1, 1, 1}, options_for(b, diagnostics)};
    w.on_start([&](CaptureEvent const& e) {
      notes.emplace_back(rec.lines().size(), "on_start " + describe(e));
    });
    w.on_stop([&](CaptureEvent const& e) {
      notes.emplace_back(rec.lines().size(), "on_stop " + describe(e));
    });
    run_steps(w, b, 4);
  }
  Lines const nvtx = rec.lines();
  Lines merged;
  std::size_t next = 0;
  for (std::size_t i = 0; i <= nvtx.size(); ++i) {
    while (next < notes.size() && notes[next].first == i) merged.push_back(notes[next++].second);
    if (i < nvtx.size()) merged.push_back(nvtx[i]);
  }
  CHECK(merged ==
        expect({"push nsightkit step 0", "pop nsightkit",  // wait
                "push nsightkit step 1", "pop nsightkit",  // warmup
                "profiler start", "start nsightkit capture", "on_start 2-2 cycle 0",
                "push nsightkit step 2", "pop nsightkit",  // active
                "profiler sync", "end nsightkit", "profiler stop", "on_stop 2-2 cycle 0 complete",
                "push nsightkit step 3", "pop nsightkit"}));  // done
  CHECK(rec.open_ranges() == 0);
  CHECK(diagnostics.empty());
}

TEST_CASE("step ranges carry the step category and the window range is a registered string") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  Recorder rec;
  RecordingBackend b;
  std::vector<std::string> diagnostics;
  {
    CaptureWindow w{CaptureSchedule{0, 1, 2}, options_for(b, diagnostics)};
    run_steps(w, b, 3);
  }
  std::size_t step_pushes = 0;
  std::size_t window_starts = 0;
  for (auto const& e : rec.range_events()) {
    if (e.kind == EventKind::push) {
      CHECK(e.category == nsk::detail::step_category_id);
      CHECK_FALSE(e.registered);  // "step N" names are unique per step: not registered
      ++step_pushes;
    }
    if (e.kind == EventKind::start) {
      CHECK(e.message == "capture");
      CHECK(e.registered);  // what nsys -p capture@nsightkit needs by default
      CHECK(e.category == 0u);
      ++window_starts;
    }
  }
  CHECK(step_pushes == (on ? 3u : 0u));
  CHECK(window_starts == (on ? 1u : 0u));
  // (The category's name, "nsightkit step", is given to the tool once per process, by whichever
  // step range is emitted first while a tool listens; see test_range for category naming.)
}

namespace {
/// An in-process consumer, like the report: sees step ranges and window ranges.
class StepSink final : public nsk::detail::RangeSink {
 public:
  Lines seen;
  void on_push(nsk::detail::RangeBegin const& b) noexcept override {
    seen.push_back(
        std::string{nsk::detail::is_step_range(*b.attributes) ? "step-range " : "range "} +
        std::string{b.name} + (nsk::detail::capture_active() ? " (captured)" : ""));
  }
  void on_pop(char const*) noexcept override {
    seen.push_back(nsk::detail::capture_active() ? "pop (captured)" : "pop");
  }
  void on_start(std::uint64_t, nsk::detail::RangeBegin const& b) noexcept override {
    seen.push_back("start " + std::string{b.name} + " active_windows=" +
                   std::to_string(nsk::detail::capture_state.active_windows.load()));
  }
  void on_end(std::uint64_t) noexcept override { seen.push_back("end"); }
};
}  // namespace

TEST_CASE("in-process sinks see the step ranges (with category) and the window range") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  StepSink sink;
  REQUIRE(nsk::detail::add_sink(&sink));
  RecordingBackend b;
  std::vector<std::string> diagnostics;
  {
    CaptureWindow w{CaptureSchedule{1, 0, 1}, options_for(b, diagnostics)};
    run_steps(w, b, 3);
  }
  REQUIRE(nsk::detail::remove_sink(&sink));
  // A consumer reading capture_active() at a step's push and pop sees the step as captured
  // exactly when it is; the window range begins just before the window counts as active.
  CHECK(sink.seen == when_on({"step-range step 0", "pop", "start capture active_windows=0",
                              "step-range step 1 (captured)", "pop (captured)", "end",
                              "step-range step 2", "pop"}));
}

TEST_CASE("the capture state follows the window: active_windows and last_step") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  auto& state = nsk::detail::capture_state;
  int const base = state.active_windows.load();
  REQUIRE(base == 0);
  RecordingBackend b1;
  RecordingBackend b2;
  std::vector<std::string> diagnostics;
  CaptureWindow w1{CaptureSchedule{1, 0, 2}, options_for(b1, diagnostics)};
  CaptureWindow w2{CaptureSchedule{2, 0, 2}, options_for(b2, diagnostics)};
  std::vector<int> active;
  std::vector<std::int64_t> last;
  // An outer and an inner loop (one step of each per iteration): w1 is active at steps 1-2,
  // w2 at steps 2-3, so both are open during iteration 2.
  for (int i = 0; i < 5; ++i) {
    auto outer = w1.step();
    auto inner = w2.step();
    active.push_back(state.active_windows.load());
    last.push_back(state.last_step.load());
    CHECK(nsk::detail::capture_active() == (on && i >= 1 && i <= 3));
  }
  CHECK(state.active_windows.load() == 0);
  if constexpr (on) {
    CHECK(active == std::vector<int>{0, 1, 2, 1, 0});
    CHECK(last == std::vector<std::int64_t>{0, 1, 2, 3, 4});  // the most recent step begun
  } else {
    CHECK(active == std::vector<int>(5, 0));
  }
}

namespace {
std::string* listened = nullptr;
/// One letter per edge: armed, started, stopped (x), disarmed.
void listen(nsk::detail::CaptureEdge edge) noexcept {
  listened->push_back("asxd"[static_cast<int>(edge)]);
}

/// Records the capture listener's calls while alive; restores the previous listener.
struct ListenerProbe {
  std::string calls;
  nsk::detail::CaptureListener previous;
  ListenerProbe() : previous{nsk::detail::capture_state.listener.exchange(&listen)} {
    listened = &calls;
  }
  ~ListenerProbe() {
    nsk::detail::capture_state.listener.store(previous);
    listened = nullptr;
  }
  ListenerProbe(ListenerProbe const&) = delete;
  ListenerProbe& operator=(ListenerProbe const&) = delete;
};
}  // namespace

TEST_CASE("a window is armed during its warm-up steps, so collection can start before them") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  auto& state = nsk::detail::capture_state;
  REQUIRE(state.armed_windows.load() == 0);
  RecordingBackend b;
  std::vector<std::string> diagnostics;
  ListenerProbe probe;
  SECTION("wait, warm-up, active, twice: armed in each warm-up, then active") {
    CaptureWindow w{CaptureSchedule{1, 2, 1, 2}, options_for(b, diagnostics)};
    std::vector<int> armed;
    std::vector<bool> wanted;
    for (int i = 0; i < 9; ++i) {  // cycles: steps 0-3 and 4-7 (wait, warmup x2, active); 8 done
      auto step = w.step();
      armed.push_back(state.armed_windows.load());
      wanted.push_back(nsk::detail::capture_wanted());
      CHECK_FALSE((nsk::detail::capture_active() && state.armed_windows.load() != 0));
    }
    CHECK(state.armed_windows.load() == 0);
    if constexpr (on) {
      CHECK(armed == std::vector<int>{0, 1, 1, 0, 0, 1, 1, 0, 0});
      CHECK(wanted == std::vector<bool>{false, true, true, true, false, true, true, true, false});
      CHECK(probe.calls == "asxasx");  // armed, started, stopped: once per cycle
    } else {
      CHECK(armed == std::vector<int>(9, 0));
      CHECK(probe.calls.empty());
    }
  }
  SECTION("closed during its warm-up: disarmed, and the listener is told") {
    CaptureWindow w{CaptureSchedule{0, 3, 1}, options_for(b, diagnostics)};
    { auto step = w.step(); }
    CHECK(state.armed_windows.load() == (on ? 1 : 0));
    w.close();
    CHECK(state.armed_windows.load() == 0);
    CHECK_FALSE(nsk::detail::capture_wanted());
    if constexpr (on) CHECK(probe.calls == "ad");
    { auto step = w.step(); }  // closed: off, never armed again
    CHECK(state.armed_windows.load() == 0);
  }
  SECTION("destroyed during its warm-up: disarmed") {
    {
      CaptureWindow w{CaptureSchedule{0, 2, 1}, options_for(b, diagnostics)};
      auto step = w.step();
      CHECK(state.armed_windows.load() == (on ? 1 : 0));
    }
    CHECK(state.armed_windows.load() == 0);
    if constexpr (on) CHECK(probe.calls == "ad");
  }
  SECTION("no warm-up steps: never armed") {
    CaptureWindow w{CaptureSchedule{1, 0, 1}, options_for(b, diagnostics)};
    for (int i = 0; i < 3; ++i) {
      auto step = w.step();
      CHECK(state.armed_windows.load() == 0);
    }
    if constexpr (on) CHECK(probe.calls == "sx");
  }
  CHECK(diagnostics.empty());
}

TEST_CASE(
    "backend choice: NVTX only or profiler only or no synchronization or a custom range name") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  Recorder rec;
  struct Case {
    char const* name;
    CaptureBackend backends;
    bool sync;
    Lines calls;
    bool window_range;
  };
  std::vector<Case> const cases{
      {"all", CaptureBackend::all, true, {"start 1", "sync 1", "stop 1"}, true},
      {"nvtx only (still synchronizes)", CaptureBackend::nvtx_range, true, {"sync 1"}, true},
      {"nvtx only, no sync", CaptureBackend::nvtx_range, false, {}, true},
      {"profiler only",
       CaptureBackend::cuda_profiler,
       true,
       {"start 1", "sync 1", "stop 1"},
       false},
      {"profiler, no sync", CaptureBackend::cuda_profiler, false, {"start 1", "stop 1"}, false},
      {"none: callbacks only", CaptureBackend::none, false, {}, false},
  };
  for (auto const& c : cases) {
    INFO(c.name);
    rec.clear();
    RecordingBackend b;
    std::vector<std::string> diagnostics;
    int callbacks = 0;
    {
      CaptureOptions o = options_for(b, diagnostics);
      o.backends = c.backends;
      o.synchronize_before_stop = c.sync;
      CaptureWindow w{CaptureSchedule{1, 0, 1}, o};
      w.on_start([&](CaptureEvent const&) { ++callbacks; });
      w.on_stop([&](CaptureEvent const&) { ++callbacks; });
      run_steps(w, b, 3);
    }
    CHECK(b.calls == when_on(c.calls));
    CHECK(callbacks == (on ? 2 : 0));
    Lines window_lines;
    for (auto const& l : rec.lines()) {
      if (l.rfind("start", 0) == 0 || l.rfind("end", 0) == 0) window_lines.push_back(l);
    }
    CHECK(window_lines ==
          when_on(c.window_range ? Lines{"start nsightkit capture", "end nsightkit"} : Lines{}));
  }
  rec.clear();
  {
    RecordingBackend b;
    std::vector<std::string> diagnostics;
    CaptureOptions o = options_for(b, diagnostics);
    o.nvtx_range_name = "profile me";
    CaptureWindow w{CaptureSchedule{0, 0, 1}, o};
    run_steps(w, b, 1);
  }
  CHECK(rec.lines() == expect({"start nsightkit profile me", "push nsightkit step 0",
                               "pop nsightkit", "end nsightkit"}));
}

TEST_CASE("NSIGHTKIT_CAPTURE replaces the code's schedule") {
  struct Good {
    char const* text;
    CaptureSchedule schedule;
  };
  constexpr auto max = std::numeric_limits<std::int64_t>::max();
  std::vector<Good> const cases{
      {"wait=10,warmup=2,active=3,repeat=1", {10, 2, 3, 1, 0}},
      {"wait=10,warmup=2,active=3,repeat=1,skip_first=4", {10, 2, 3, 1, 4}},
      {" wait = 1 , active=2 ", {1, 0, 2, 1, 0}},
      {"active=3", {0, 0, 3, 1, 0}},
      {"repeat=2,active=1,warmup=1,wait=0,skip_first=0", {0, 1, 1, 2, 0}},
      {"active=1,repeat=0", {0, 0, 1, 0, 0}},
      {"wait=00010,active=1", {10, 0, 1, 1, 0}},
      {"active=9223372036854775807", {0, 0, max, 1, 0}},
  };
  CaptureSchedule const code{5, 2, 3};
  for (auto const& c : cases) {
    INFO(c.text);
    std::string err;
    auto parsed = CaptureSchedule::parse(c.text, &err);
    REQUIRE(parsed.has_value());
    CHECK(*parsed == c.schedule);
    CHECK(err.empty());

    ScopedEnv env{"NSIGHTKIT_CAPTURE", c.text};
    RecordingBackend b;
    std::vector<std::string> diagnostics;
    CaptureWindow w{code, options_for(b, diagnostics)};
    CHECK(w.schedule() == (on ? c.schedule : code));
    CHECK(w.schedule_from_environment() == on);
    CHECK_FALSE(w.off());
    CHECK(diagnostics.empty());
    for (std::int64_t i = 0; i < 30; ++i) CHECK(w.phase_of(i) == w.schedule().phase_of(i));
  }
}

TEST_CASE(
    "NSIGHTKIT_CAPTURE from the issue (wait=10 warmup=2 active=3 repeat=1) captures steps 12-14") {
  ScopedEnv env{"NSIGHTKIT_CAPTURE", "wait=10,warmup=2,active=3,repeat=1"};
  RecordingBackend b;
  std::vector<std::string> diagnostics;
  {
    CaptureWindow w{CaptureSchedule{5, 2, 3}, options_for(b, diagnostics)};
    std::string const phases = run_steps(w, b, 20);
    CHECK(phases == (on ? "WWWWWWWWWWUUAAADDDDD" : "WWWWWUUAAADDDDDDDDDD"));
  }
  CHECK(b.calls == when_on({"start 12", "sync 14", "stop 14"}));
}

TEST_CASE(
    "NSIGHTKIT_CAPTURE=off switches capture off and unset or empty keeps the code's schedule") {
  for (char const* text : {"off", "OFF", "none", "0", "  off  ", "Off"}) {
    INFO(text);
    ScopedEnv env{"NSIGHTKIT_CAPTURE", text};
    Recorder rec;
    RecordingBackend b;
    std::vector<std::string> diagnostics;
    int callbacks = 0;
    {
      CaptureWindow w{CaptureSchedule{0, 0, 2}, options_for(b, diagnostics)};
      w.on_start([&](CaptureEvent const&) { ++callbacks; });
      CHECK(w.off() == on);
      CHECK(w.phase_of(0) == (on ? CapturePhase::off : CapturePhase::active));
      CHECK(run_steps(w, b, 3) == (on ? "OOO" : "AAD"));
    }
    CHECK(b.calls.empty());
    CHECK(callbacks == 0);
    CHECK(diagnostics.empty());
    // Steps keep their ranges: only the capture is off.
    CHECK(rec.lines() == expect({"push nsightkit step 0", "pop nsightkit", "push nsightkit step 1",
                                 "pop nsightkit", "push nsightkit step 2", "pop nsightkit"}));
  }
  for (char const* text : {"", "   "}) {
    INFO("'" << text << "'");
    ScopedEnv env{"NSIGHTKIT_CAPTURE", text};
    RecordingBackend b;
    std::vector<std::string> diagnostics;
    {
      CaptureWindow w{CaptureSchedule{1, 0, 1}, options_for(b, diagnostics)};
      CHECK_FALSE(w.off());
      CHECK_FALSE(w.schedule_from_environment());
      CHECK(run_steps(w, b, 3) == "WAD");
    }
    CHECK(b.calls == when_on({"start 1", "sync 1", "stop 1"}));
    CHECK(diagnostics.empty());
  }
}

TEST_CASE("a malformed NSIGHTKIT_CAPTURE: one message naming the variable and the bad part") {
  struct Bad {
    char const* text;
    char const* names;  ///< the bad part, as the message must quote it
  };
  std::vector<Bad> const cases{
      {"wait=-1,active=1", "value '-1' of 'wait' is not a non-negative integer"},
      {"wait=1x,active=1", "value '1x' of 'wait'"},
      {"active=+2", "value '+2' of 'active'"},
      {"active=2 3", "value '2 3' of 'active'"},
      {"active=1.5", "value '1.5' of 'active'"},
      {"active=99999999999999999999", "value '99999999999999999999' of 'active' is out of range"},
      {"active=9223372036854775808", "out of range"},
      {"active=1,foo=2", "unknown key 'foo'"},
      {"WAIT=1,active=1", "unknown key 'WAIT'"},
      {"active=1,active=2", "key 'active' is given twice"},
      {"active=0", "active=0 captures nothing"},
      {"wait=3,warmup=1", "'active' is missing"},
      {"wait=1,,active=2", "empty item"},
      {"active=2,", "empty item"},
      {",active=2", "empty item"},
      {"active", "item 'active' is not key=value"},
      {"active=", "value of 'active' is empty"},
      {"off,active=2", "item 'off' is not key=value"},
      {"active=1;wait=2", "value '1;wait=2' of 'active'"},
      {"wait=9223372036854775807,active=1", "wait + warmup + active overflows"},
      {"=3,active=1", "unknown key ''"},
  };
  CaptureSchedule const code{1, 0, 1};
  for (auto const& c : cases) {
    INFO(c.text);
    std::string err;
    CHECK_FALSE(CaptureSchedule::parse(c.text, &err).has_value());
    CHECK_THAT(err, Contains(c.names));

    ScopedEnv env{"NSIGHTKIT_CAPTURE", c.text};
    // Default: one message, capture off, the program goes on.
    RecordingBackend b;
    std::vector<std::string> diagnostics;
    {
      CaptureWindow w{code, options_for(b, diagnostics)};
      CHECK(w.off() == on);
      CHECK(run_steps(w, b, 4) == (on ? "OOOO" : "WADD"));
    }
    CHECK(b.calls.empty());
    if constexpr (on) {
      REQUIRE(diagnostics.size() == 1u);
      CHECK_THAT(diagnostics[0], Contains(std::string{"NSIGHTKIT_CAPTURE=\""} + c.text + "\""));
      CHECK_THAT(diagnostics[0], Contains(c.names));
      CHECK_THAT(diagnostics[0], Contains("capture disabled"));
    } else {
      CHECK(diagnostics.empty());
    }
    // Strict: the constructor throws with the same explanation.
    CaptureOptions strict = options_for(b, diagnostics);
    strict.strict_environment = true;
    if constexpr (on) {
      CHECK_THROWS_AS(CaptureWindow(code, strict), std::invalid_argument);
      CHECK_THROWS_WITH(CaptureWindow(code, strict),
                        Contains("NSIGHTKIT_CAPTURE") && Contains(c.names));
    } else {
      CHECK_NOTHROW(CaptureWindow(code, strict));
    }
  }
}

TEST_CASE("the environment variable can be renamed or ignored") {
  ScopedEnv a{"NSIGHTKIT_CAPTURE", "wait=7,active=1"};
  ScopedEnv b{"MY_LOOP_CAPTURE", "wait=3,active=2"};
  RecordingBackend rb;
  std::vector<std::string> diagnostics;
  CaptureOptions renamed = options_for(rb, diagnostics);
  renamed.environment_variable = "MY_LOOP_CAPTURE";
  CaptureWindow w1{CaptureSchedule{1, 0, 1}, renamed};
  CHECK(w1.schedule() == (on ? CaptureSchedule{3, 0, 2} : CaptureSchedule{1, 0, 1}));
  CaptureOptions ignored = options_for(rb, diagnostics);
  ignored.environment_variable = nullptr;
  CaptureWindow w2{CaptureSchedule{1, 0, 1}, ignored};
  CHECK(w2.schedule() == CaptureSchedule{1, 0, 1});
  CHECK_FALSE(w2.schedule_from_environment());
  CHECK(diagnostics.empty());
}

TEST_CASE("from_environment(): capture only when the variable asks for it") {
  RecordingBackend b;
  std::vector<std::string> diagnostics;
  {
    ScopedEnv unset{"NSIGHTKIT_CAPTURE", nullptr};
    auto w = CaptureWindow::from_environment(options_for(b, diagnostics));
    CHECK(w.off());
    CHECK(run_steps(w, b, 3) == "OOO");
  }
  CHECK(b.calls.empty());
  {
    ScopedEnv set{"NSIGHTKIT_CAPTURE", "wait=5,warmup=2,active=3"};
    auto w = CaptureWindow::from_environment(options_for(b, diagnostics));
    CHECK(w.off() == !on);
    CHECK(run_steps(w, b, 12) == (on ? "WWWWWUUAAADD" : "OOOOOOOOOOOO"));
  }
  CHECK(b.calls == when_on({"start 7", "sync 9", "stop 9"}));
  CHECK(diagnostics.empty());
}

TEST_CASE("an invalid schedule in code throws std::invalid_argument naming the field") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  constexpr auto max = std::numeric_limits<std::int64_t>::max();
  struct Bad {
    CaptureSchedule schedule;
    char const* names;
  };
  std::vector<Bad> const cases{
      {{0, 0, 0}, "active must be at least 1"},
      {{-1, 0, 1}, "wait must not be negative (got -1)"},
      {{0, -2, 1}, "warmup must not be negative"},
      {{0, 0, -3}, "active must not be negative"},
      {{0, 0, 1, -1}, "repeat must not be negative"},
      {{0, 0, 1, 1, -5}, "skip_first must not be negative"},
      {{max, 1, 1}, "overflows"},
      {{1, max, 1}, "overflows"},
  };
  for (auto const& c : cases) {
    INFO(c.names);
    CHECK_THAT(c.schedule.validation_error(), Contains(c.names));
    CHECK_THROWS_AS(CaptureWindow{c.schedule}, std::invalid_argument);
    CHECK_THROWS_WITH(CaptureWindow{c.schedule},
                      Contains("nsightkit::CaptureWindow: invalid schedule") && Contains(c.names));
  }
  CHECK(CaptureSchedule{5, 2, 3}.validation_error().empty());
}

TEST_CASE("a window destroyed inside an active window stops the capture") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  Recorder rec;
  RecordingBackend b;
  std::vector<std::string> diagnostics;
  std::vector<std::string> stopped;
  {
    CaptureWindow w{CaptureSchedule{5, 2, 3}, options_for(b, diagnostics)};
    w.on_stop([&](CaptureEvent const& e) { stopped.push_back(describe(e)); });
    run_steps(w, b, 8);  // steps 0-7: the window opened at step 7 and is still open
    CHECK(w.capturing() == on);
    CHECK(nsk::detail::capture_state.active_windows.load() == (on ? 1 : 0));
  }
  CHECK(b.calls == when_on({"start 7", "sync 7", "stop 7"}));
  CHECK(stopped == when_on({"7-7 cycle 0"}));  // not complete: 8 and 9 never ran
  CHECK(nsk::detail::capture_state.active_windows.load() == 0);
  CHECK(rec.open_ranges() == 0);
  CHECK(diagnostics.empty());
}

TEST_CASE(
    "a window destroyed while a step is open stops the capture and the step still ends safely") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  Recorder rec;
  RecordingBackend b;
  std::vector<std::string> diagnostics;
  auto w = std::make_unique<CaptureWindow>(CaptureSchedule{0, 1, 3}, options_for(b, diagnostics));
  run_steps(*w, b, 2);  // step 0 warmup, step 1 active: capture open
  rec.clear();
  {
    b.step = 2;
    auto s = w->step();
    CHECK(s.captured());
    w.reset();  // the window goes first
    CHECK(nsk::detail::capture_state.active_windows.load() == 0);
    s.end();
    s.end();  // idempotent
  }
  CHECK(b.calls == when_on({"start 1", "sync 2", "stop 2"}));
  CHECK(rec.lines() == expect({"push nsightkit step 2", "end nsightkit", "pop nsightkit"}));
}

TEST_CASE("close() ends an open capture and captures nothing more") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  RecordingBackend b;
  std::vector<std::string> diagnostics;
  std::vector<std::string> stopped;
  CaptureWindow w{CaptureSchedule{1, 0, 2, 0}, options_for(b, diagnostics)};  // forever
  w.on_stop([&](CaptureEvent const& e) { stopped.push_back(describe(e)); });
  CHECK(run_steps(w, b, 2) == "WA");
  w.close();
  w.close();
  CHECK_FALSE(w.capturing());
  CHECK(run_steps(w, b, 6) == "OOOOOO");         // the schedule would open two more windows
  CHECK(w.phase_of(4) == CapturePhase::active);  // phase_of answers from the schedule
  CHECK(b.calls == when_on({"start 1", "sync 1", "stop 1"}));
  CHECK(stopped == when_on({"1-1 cycle 0"}));
}

TEST_CASE("a window destroyed outside an active window makes no calls") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  RecordingBackend b;
  std::vector<std::string> diagnostics;
  {
    CaptureWindow w{CaptureSchedule{5, 2, 3}, options_for(b, diagnostics)};
    run_steps(w, b, 6);
  }
  CHECK(b.calls.empty());
}

#if defined(__unix__)
namespace {
/// Writes each call to a pipe, so a parent process can read what a child did before exiting.
struct PipeBackend final : nsk::ProfilerBackend {
  explicit PipeBackend(int fd) : fd_{fd} {}
  std::string start() override { return put("start\n"); }
  std::string synchronize() override { return put("sync\n"); }
  std::string stop() override { return put("stop\n"); }

 private:
  std::string put(char const* s) {
    std::string const text{s};
    if (::write(fd_, text.data(), text.size()) < 0) return "write failed";
    return {};
  }
  int fd_;
};

/// Runs `child(fd)` in a forked process (which must end with std::exit); returns what it wrote.
template <class F>
std::string in_child(F child, int& status) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::fflush(nullptr);
  pid_t const pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1]);
    std::_Exit(99);  // not reached: the child exits through std::exit
  }
  ::close(fds[1]);
  std::string out;
  char buf[256];
  ssize_t n = 0;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return out;
}

CaptureOptions pipe_options(int fd) {
  CaptureOptions o;
  o.profiler = new PipeBackend{fd};  // leaked: must outlive the exit handler
  o.environment_variable = nullptr;
  return o;
}
}  // namespace

TEST_CASE("exit() inside an active window stops the capture (stack or leaked or static windows)") {
  std::string const stopped = on ? "start\nsync\nstop\n" : "";
  int status = 0;
  SECTION("a window on the stack of the thread that calls exit()") {
    std::string const out = in_child(
        [](int fd) {
          CaptureWindow w{CaptureSchedule{1, 0, 3}, pipe_options(fd)};
          for (int i = 0; i < 2; ++i) auto s = w.step();
          auto open = w.step();  // exit with a step open, inside the window
          std::exit(0);
        },
        status);
    CHECK(out == stopped);
  }
  SECTION("a leaked window") {
    std::string const out = in_child(
        [](int fd) {
          auto* w = new CaptureWindow{CaptureSchedule{0, 0, 5}, pipe_options(fd)};
          for (int i = 0; i < 2; ++i) auto s = w->step();
          std::exit(0);
        },
        status);
    CHECK(out == stopped);
  }
  SECTION(
      "a static window: stopped exactly once (exit handler or destructor, whichever runs first)") {
    std::string const out = in_child(
        [](int fd) {
          static CaptureWindow w{CaptureSchedule{0, 0, 5}, pipe_options(fd)};
          for (int i = 0; i < 2; ++i) auto s = w.step();
          std::exit(0);
        },
        status);
    CHECK(out == stopped);
  }
  SECTION("exit() after the window ended: nothing more") {
    std::string const out = in_child(
        [](int fd) {
          auto* w = new CaptureWindow{CaptureSchedule{0, 0, 1}, pipe_options(fd)};
          for (int i = 0; i < 3; ++i) auto s = w->step();
          std::exit(0);
        },
        status);
    CHECK(out == stopped);
  }
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a misspelt NSIGHTKIT_ variable is named on stderr by a program that only captures") {
  int status = 0;
  std::string const err = in_child(
      [](int fd) {
        ::dup2(fd, 2);
        ::setenv("NSIGHTKIT_CAPTUER", "wait=1,active=1", 1);
        ::unsetenv("NSIGHTKIT_IGNORE_UNKNOWN_VARIABLES");
        nsightkit::detail::environment_checked = false;
        CaptureOptions o;
        o.profiler = new PipeBackend{-1};  // leaked, as in pipe_options
        CaptureWindow w{CaptureSchedule{1, 0, 1}, o};
        std::fflush(stderr);
        std::exit(0);
      },
      status);
  CHECK(status == 0);
  if (on) {
    CHECK_THAT(err, Contains("unknown environment variable NSIGHTKIT_CAPTUER is ignored (did you "
                             "mean NSIGHTKIT_CAPTURE?)"));
  } else {
    CHECK(err.empty());  // a disabled build reads no environment
  }
}
#endif

TEST_CASE("steps may come from any thread, one at a time (a server's workers)") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  Recorder rec;
  RecordingBackend b;
  std::vector<std::string> diagnostics;
  CaptureWindow w{CaptureSchedule{1, 0, 2}, options_for(b, diagnostics)};
  std::string phases;
  // Each step on a thread of its own, one after the other; the threads live until the end, so
  // their ids differ.
  std::vector<std::promise<void>> turn(5);
  std::promise<void> done;
  std::shared_future<void> all_done = done.get_future().share();
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < 4; ++i) {
    threads.emplace_back([&, i, mine = turn[i].get_future()]() mutable {
      mine.wait();
      {
        b.step = w.next_step();
        auto s = w.step();
        phases += letter(s.phase());
      }
      turn[i + 1].set_value();
      all_done.wait();
    });
  }
  turn[0].set_value();
  turn[4].get_future().wait();
  std::vector<std::thread::id> ids;
  for (auto& t : threads) ids.push_back(t.get_id());
  done.set_value();
  for (auto& t : threads) t.join();
  CHECK(phases == "WAAD");
  CHECK(b.calls == when_on({"start 1", "sync 2", "stop 2"}));
  CHECK(diagnostics.empty());
  // Every step's range begins and ends on its thread; the window's range spans two of them.
  CHECK(rec.lines(ids[0]) == expect({"push nsightkit step 0", "pop nsightkit"}));
  CHECK(rec.lines(ids[1]) ==
        expect({"start nsightkit capture", "push nsightkit step 1", "pop nsightkit"}));
  CHECK(rec.lines(ids[2]) == expect({"push nsightkit step 2", "pop nsightkit", "end nsightkit"}));
  CHECK(rec.lines(ids[3]) == expect({"push nsightkit step 3", "pop nsightkit"}));
}

TEST_CASE("a step begun on another thread while one is open is rejected, saying why") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  RecordingBackend b;
  std::vector<std::string> diagnostics;
  CaptureWindow w{CaptureSchedule{0, 0, 2}, options_for(b, diagnostics)};
  std::string error;
  {
    auto open = w.step();
    std::thread t{[&] {
      try {
        auto s = w.step();
      } catch (std::logic_error const& e) {
        error = e.what();
      }
    }};
    t.join();
  }
  CHECK_THAT(error, Contains("step 0 is still open"));
  CHECK_THAT(error, Contains("need a window each"));
  // The rejected call changed nothing: the next step is step 1, captured.
  auto s = w.step();
  CHECK(s.number() == 1);
  CHECK(s.captured());
}

TEST_CASE("a step begun while the previous one is open is rejected") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  Recorder rec;
  RecordingBackend b;
  std::vector<std::string> diagnostics;
  CaptureWindow w{CaptureSchedule{0, 0, 1}, options_for(b, diagnostics)};
  {
    auto first = w.step();
    CHECK_THROWS_AS(w.step(), std::logic_error);
    CHECK_THROWS_WITH(w.step(), Contains("step 0 is still open"));
    first.end();
    auto second = w.step();
    CHECK(second.number() == 1);
  }
  CHECK(rec.lines() == expect({"start nsightkit capture", "push nsightkit step 0", "pop nsightkit",
                               "end nsightkit", "push nsightkit step 1", "pop nsightkit"}));
}

TEST_CASE("a failing profiler backend gives one message and capture continues without it") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  Recorder rec;
  SECTION("start fails") {
    RecordingBackend b;
    b.fail_start = "simulated start failure";
    std::vector<std::string> diagnostics;
    int starts = 0;
    int stops = 0;
    {
      CaptureWindow w{CaptureSchedule{0, 0, 1, 2}, options_for(b, diagnostics)};
      w.on_start([&](CaptureEvent const&) { ++starts; });
      w.on_stop([&](CaptureEvent const&) { ++stops; });
      {
        b.step = 0;
        auto s = w.step();
        CHECK(w.capturing() == on);  // the window is open, without the profiler
      }
      run_steps(w, b, 2);
    }
    CHECK(b.calls == when_on({"start 0"}));  // never again: not at stop, not at the next window
    CHECK(diagnostics == when_on({"CaptureWindow: simulated start failure; capture continues "
                                  "without the profiler backend"}));
    CHECK(starts == (on ? 2 : 0));
    CHECK(stops == (on ? 2 : 0));
    std::size_t window_ranges = 0;
    for (auto const& l : rec.lines()) window_ranges += l == "start nsightkit capture" ? 1u : 0u;
    CHECK(window_ranges == (on ? 2u : 0u));
  }
  SECTION("stop fails") {
    RecordingBackend b;
    b.fail_stop = "simulated stop failure";
    std::vector<std::string> diagnostics;
    {
      CaptureWindow w{CaptureSchedule{0, 0, 1, 2}, options_for(b, diagnostics)};
      run_steps(w, b, 2);
    }
    CHECK(b.calls == when_on({"start 0", "sync 0", "stop 0"}));
    CHECK(diagnostics == when_on({"CaptureWindow: simulated stop failure; capture continues "
                                  "without the profiler backend"}));
  }
  SECTION("the backend throws") {
    RecordingBackend b;
    b.throw_on_start = true;
    std::vector<std::string> diagnostics;
    {
      CaptureWindow w{CaptureSchedule{0, 0, 1}, options_for(b, diagnostics)};
      run_steps(w, b, 1);
    }
    CHECK(diagnostics == when_on({"CaptureWindow: the profiler backend threw: boom; capture "
                                  "continues without the profiler backend"}));
  }
}

TEST_CASE("a throwing callback is reported and does not stop the others") {
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  RecordingBackend b;
  std::vector<std::string> diagnostics;
  int stops = 0;
  {
    CaptureWindow w{CaptureSchedule{0, 0, 1}, options_for(b, diagnostics)};
    w.on_start([](CaptureEvent const&) { throw std::runtime_error("nope"); });
    w.on_stop([&](CaptureEvent const&) { ++stops; });
    run_steps(w, b, 1);
  }
  CHECK(stops == (on ? 1 : 0));
  CHECK(diagnostics == when_on({"CaptureWindow: an on_start callback threw: nope; ignored"}));
}

TEST_CASE("the default CUDA profiler backend: one line without a driver or device, none with one") {
  // This test links no CUDA library: the backend loads the driver at run time. Where there is
  // none (CI), the window says so once; on a GPU machine it captures without a message.
  // test_capture_driver checks each case against a fake driver.
  ScopedEnv clean{"NSIGHTKIT_CAPTURE", nullptr};
  std::string why;
  nsk::detail::cuda_driver::describe_unavailable(why);
  std::vector<std::string> diagnostics;
  CaptureOptions o;  // the default backend
  o.diagnostics = [&](std::string const& m) { diagnostics.push_back(m); };
  int starts = 0;
  int stops = 0;
  {
    CaptureWindow w{CaptureSchedule{1, 0, 2, 2}, o};
    w.on_start([&](CaptureEvent const&) { ++starts; });
    w.on_stop([&](CaptureEvent const&) { ++stops; });
    for (int i = 0; i < 8; ++i) {
      auto s = w.step();
      CHECK(w.capturing() == (on && s.captured()));
    }
  }
  CHECK(starts == (on ? 2 : 0));
  CHECK(stops == (on ? 2 : 0));
  if (!on || why.empty()) {
    CHECK(diagnostics.empty());
  } else {
    // one message for the whole run, not one per window
    CHECK(diagnostics == Lines{"CaptureWindow: no CUDA driver/device (" + why +
                               "): capture continues without the profiler"});
    CHECK(nsk::cuda_profiler_backend().start() == "no CUDA driver/device (" + why + ")");
  }
}

TEST_CASE("a disabled build ignores the environment and still counts steps and phases") {
  ScopedEnv env{"NSIGHTKIT_CAPTURE", "off"};  // ignored by a disabled build
  Recorder rec;
  RecordingBackend b;
  std::vector<std::string> diagnostics;
  {
    CaptureWindow w{CaptureSchedule{0, 1, 1}, options_for(b, diagnostics)};
    std::string const phases = run_steps(w, b, 3);
    CHECK(phases == (on ? "OOO" : "UAD"));
    CHECK(w.next_step() == 3);
  }
  if constexpr (!on) {
    CHECK(rec.lines().empty());
    CHECK(rec.events().empty());
    CHECK(b.calls.empty());
  }
}
