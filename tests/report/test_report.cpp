// The in-process report (report.hpp): aggregation per path, self time, percentiles on crafted
// durations (injected clock), threads, capture-window steps, start/end ranges and marks, limits,
// the NSIGHTKIT_REPORT grammar, ranks and file names, the outputs, and GPU timing through a fake
// GPU backend. Every expectation also holds in a -DNSIGHTKIT_DISABLE=ON build, where the report
// records nothing (rows() is then empty and the GPU tests are compiled out).
#include <nsightkit/detail/report/engine.hpp>  // the engine's pieces, in either mode
#include <nsightkit/report.hpp>

#include <nsightkit/detail/capture_state.hpp>
#include <nsightkit/detail/thread.hpp>

#include "report_support.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using nsightkit::Report;
using nsightkit::ReportOptions;
using nsightkit::ReportSnapshot;
using nsightkit::ScopedRange;
using Lines = std::vector<std::string>;

namespace {

std::atomic<std::int64_t> fake_now{1'000'000};
std::int64_t fake_clock() noexcept { return fake_now.load(); }
void tick(std::int64_t ns) { fake_now.fetch_add(ns); }

ReportOptions quiet(ReportOptions o = ReportOptions{}) {
  o.table.clear();
  o.at_exit = false;
  o.clock = &fake_clock;
  return o;
}

/// A fresh report for one test; off and empty again afterwards.
struct Session {
  explicit Session(ReportOptions const& o = quiet()) {
    Report::disable();
    Report::reset();
    REQUIRE(Report::enable(o) == nsightkit::enabled);
  }
  ~Session() {
    Report::disable();
    Report::reset();
  }
  Session(Session const&) = delete;
  Session& operator=(Session const&) = delete;
};

/// What the test expects to be recorded: exactly `lines` when enabled, nothing when disabled.
Lines expect(Lines lines) { return nsightkit::enabled ? lines : Lines{}; }

/// Merged rows as "path count=N total=T self=S", in the snapshot's (tree) order.
Lines rows(ReportSnapshot const& s) {
  Lines out;
  for (auto const& r : s.paths) {
    out.push_back(r.path + " count=" + std::to_string(r.cpu.count) + " total=" +
                  std::to_string(r.cpu.total_ns) + " self=" + std::to_string(r.self_ns));
  }
  return out;
}

Lines thread_rows(ReportSnapshot const& s, std::uint32_t tid) {
  Lines out;
  for (auto const& r : s.thread_paths) {
    if (r.thread == tid) out.push_back(r.path + " count=" + std::to_string(r.cpu.count));
  }
  return out;
}

std::uint32_t this_tid() {
#if NSIGHTKIT_ENABLED
  return nsightkit::detail::os_thread_id();
#else
  return 0;
#endif
}

/// A known workload: per step model 45 = 1 + encoder 35 (2 + attn 10 + mlp 20 + 3) + head 5 + 4.
void model_step() {
  ScopedRange model{"model"};
  tick(1);
  {
    ScopedRange enc{"encoder"};
    tick(2);
    {
      ScopedRange a{"attn"};
      tick(10);
    }
    {
      ScopedRange m{"mlp"};
      tick(20);
    }
    tick(3);
  }
  {
    ScopedRange h{"head"};
    tick(5);
  }
  tick(4);
}

using nsk_test::ScopedEnv;

}  // namespace

// ---- off by default ----

TEST_CASE("the report is off by default and registers nothing") {
  REQUIRE_FALSE(Report::is_enabled());
#if NSIGHTKIT_ENABLED
  REQUIRE_FALSE(nsightkit::detail::sinks_active());  // the foundation's fast path stays on
#endif
  { ScopedRange r{"not recorded"}; }
  REQUIRE(Report::snapshot().paths.empty());
  REQUIRE_FALSE(Report::write());  // nothing was ever enabled: nothing is written
}

// ---- aggregation ----

TEST_CASE("exact counts, nesting, totals and self times of a known workload") {
  Session session;
  for (int step = 0; step < 3; ++step) model_step();
  auto const snap = Report::snapshot();
  // Tree order; siblings by total: encoder (105) before head (15), mlp (60) before attn (30).
  REQUIRE(rows(snap) ==
          expect({"model count=3 total=135 self=15", "model/encoder count=3 total=105 self=15",
                  "model/encoder/mlp count=3 total=60 self=60",
                  "model/encoder/attn count=3 total=30 self=30",
                  "model/head count=3 total=15 self=15"}));
  if (nsightkit::enabled) {
    REQUIRE(snap.paths[0].depth == 0);
    REQUIRE(snap.paths[0].parent == static_cast<std::size_t>(-1));
    REQUIRE(snap.paths[2].depth == 2);
    REQUIRE(snap.paths[2].parent == 1);
    REQUIRE(snap.paths[4].parent == 0);
    REQUIRE(snap.paths[2].name == "mlp");
    REQUIRE(snap.paths[2].domain == "nsightkit");
    REQUIRE(snap.paths[1].cpu.mean_ns == Approx(35.0));
    REQUIRE(snap.threads.size() == 1);
    REQUIRE(snap.threads[0].ranges == 15);
    REQUIRE(snap.find("model/encoder/attn") != nullptr);
    REQUIRE(snap.find("model/encoder/attn", this_tid()) != nullptr);
    REQUIRE(snap.find("attn") == nullptr);
    REQUIRE_FALSE(snap.paths[0].cpu.exact == false);
    REQUIRE(snap.paths[0].gpu.count == 0);
  }
}

TEST_CASE("self time is the total minus the children's totals, never negative") {
  Session session;
  {
    ScopedRange outer{"outer"};
    tick(7);
    for (int i = 0; i < 4; ++i) {
      ScopedRange inner{"inner"};
      tick(25);
    }
  }
  auto const snap = Report::snapshot();
  REQUIRE(rows(snap) ==
          expect({"outer count=1 total=107 self=7", "outer/inner count=4 total=100 self=100"}));
}

TEST_CASE("the same name under different parents is a different path - a repeated name nests") {
  Session session;
  {
    ScopedRange a{"a"};
    {
      ScopedRange x{"x"};
      tick(1);
      ScopedRange x2{"x"};
      tick(2);
    }
  }
  {
    ScopedRange b{"b"};
    ScopedRange x{"x"};
    tick(4);
  }
  REQUIRE(
      rows(Report::snapshot()) ==
      expect({"b count=1 total=4 self=0", "b/x count=1 total=4 self=4", "a count=1 total=3 self=0",
              "a/x count=1 total=3 self=1", "a/x/x count=1 total=2 self=2"}));
}

namespace {
struct Io {
  static constexpr char const* name{"io"};
};
struct Other {
  static constexpr char const* name{"other"};
};
}  // namespace

TEST_CASE("formatted and run-time names, and other domains as domain@name") {
  Session session;
  for (int i = 0; i < 2; ++i) {
    ScopedRange layer{"layer{}", i};
    tick(3);
    nsightkit::ScopedRangeIn<Io> read{std::string{"read"}};
    tick(1);
  }
  REQUIRE(rows(Report::snapshot()) ==
          expect({"layer0 count=1 total=4 self=3", "layer0/io@read count=1 total=1 self=1",
                  "layer1 count=1 total=4 self=3", "layer1/io@read count=1 total=1 self=1"}));
}

TEST_CASE("domains that interleave without nesting are each ended correctly") {
  Session session;
  {
    auto* outer = new std::optional<nsightkit::ScopedRangeIn<Other>>;  // ends before the inner one
    outer->emplace("o");
    tick(2);
    {
      ScopedRange inner{"i"};
      tick(3);
      outer->reset();  // pops domain "other" while "i" (domain nsightkit) is still open
      tick(5);
    }
    delete outer;
  }
  REQUIRE(rows(Report::snapshot()) ==
          expect({"other@o count=1 total=5 self=0", "other@o/i count=1 total=8 self=8"}));
}

TEST_CASE(
    "a range already open when the report is enabled is ignored, its children are top-level") {
  Report::disable();
  Report::reset();
  {
    ScopedRange before{"before"};
    REQUIRE(Report::enable(quiet()) == nsightkit::enabled);
    {
      ScopedRange child{"child"};
      tick(2);
    }
  }  // this pop was never pushed for the report: ignored
  {
    ScopedRange after{"after"};
    tick(1);
  }
  REQUIRE(rows(Report::snapshot()) ==
          expect({"child count=1 total=2 self=2", "after count=1 total=1 self=1"}));
  Report::disable();
  Report::reset();
}

TEST_CASE("disable stops recording and keeps the data - it unregisters the report") {
  Session session;
  {
    ScopedRange r{"kept"};
    tick(1);
  }
  Report::disable();
  REQUIRE_FALSE(Report::is_enabled());
#if NSIGHTKIT_ENABLED
  REQUIRE_FALSE(nsightkit::detail::sinks_active());
#endif
  {
    ScopedRange r{"ignored"};
    tick(1);
  }
  REQUIRE(rows(Report::snapshot()) == expect({"kept count=1 total=1 self=1"}));
  // A frame left open across disable/enable never sees its pop; it must not become a prefix.
  REQUIRE(Report::enable(quiet()) == nsightkit::enabled);
  auto* stale = new std::optional<ScopedRange>{std::in_place, "stale"};
  Report::disable();
  stale->reset();  // popped while off
  delete stale;
  REQUIRE(Report::enable(quiet()) == nsightkit::enabled);
  {
    ScopedRange r{"fresh"};
    tick(1);
  }
  REQUIRE(rows(Report::snapshot()) ==
          expect({"fresh count=1 total=1 self=1", "kept count=1 total=1 self=1"}));
}

TEST_CASE("reset drops everything and restarts the run's origin") {
  Session session;
  {
    ScopedRange r{"old"};
    tick(5);
  }
  Report::reset();
  tick(10);
  {
    ScopedRange r{"new"};
    tick(3);
  }
  auto const snap = Report::snapshot();
  REQUIRE(rows(snap) == expect({"new count=1 total=3 self=3"}));
  if (nsightkit::enabled) REQUIRE(snap.run_ns == 13);
}

// ---- percentiles ----

TEST_CASE("percentiles are exact (nearest rank) on crafted durations") {
  Session session;
  for (int k = 0; k < 100; ++k) {
    ScopedRange r{"d"};
    tick((k * 37) % 100 + 1);  // 1..100, shuffled
  }
  auto const snap = Report::snapshot();
  REQUIRE(rows(snap) == expect({"d count=100 total=5050 self=5050"}));
  if (nsightkit::enabled) {
    auto const& t = snap.paths[0].cpu;
    REQUIRE(t.exact);
    REQUIRE(t.min_ns == 1);
    REQUIRE(t.p50_ns == 50);
    REQUIRE(t.p95_ns == 95);
    REQUIRE(t.max_ns == 100);
    REQUIRE(t.mean_ns == Approx(50.5));
  }
}

TEST_CASE("past the exact-sample limit percentiles come from the log histogram, within 1/32") {
  auto o = quiet();
  o.exact_samples = 10;
  Session session{o};
  for (int k = 99; k >= 0; --k) {
    ScopedRange r{"d"};
    tick(1000 + 1000 * k);  // 1 us .. 100 us
  }
  auto const snap = Report::snapshot();
  REQUIRE(rows(snap) == expect({"d count=100 total=5050000 self=5050000"}));
  if (nsightkit::enabled) {
    auto const& t = snap.paths[0].cpu;
    REQUIRE_FALSE(t.exact);
    REQUIRE(t.min_ns == 1000);  // min, max, count, total and mean stay exact
    REQUIRE(t.max_ns == 100000);
    REQUIRE(std::abs(t.p50_ns - 50000) <= 50000 / 32);
    REQUIRE(std::abs(t.p95_ns - 95000) <= 95000 / 32);
    REQUIRE(nsightkit::format_table(snap).find("~") != std::string::npos);
  }
}

TEST_CASE("Distribution: buckets tile the integers - merging keeps exactness when it can") {
  using nsightkit::detail::report::Distribution;
  using nsightkit::detail::report::LogBuckets;
  for (std::int64_t v :
       {0LL, 1LL, 31LL, 32LL, 63LL, 64LL, 65LL, 1000LL, 123456789LL, (1LL << 62) + 5}) {
    auto const i = LogBuckets::index(v);
    REQUIRE(LogBuckets::lower(i) <= v);
    REQUIRE(v < LogBuckets::lower(i) + LogBuckets::width(i));
    REQUIRE(LogBuckets::width(i) * 32 <= std::max<std::int64_t>(LogBuckets::lower(i), 32));
  }
  Distribution a, b, c;
  for (int v = 1; v <= 5; ++v) a.add(v, 100);
  for (int v = 6; v <= 10; ++v) b.add(v, 100);
  a.merge(b);
  REQUIRE(a.exact());
  REQUIRE(a.count() == 10);
  REQUIRE(a.percentile(50) == 5);
  REQUIRE(a.percentile(100) == 10);
  for (int v = 1; v <= 5; ++v) c.add(v * 1000, 0);  // histogram at once
  REQUIRE_FALSE(c.exact());
  a.merge(c);
  REQUIRE_FALSE(a.exact());
  REQUIRE(a.count() == 15);
  REQUIRE(a.max() == 5000);
  REQUIRE(a.min() == 1);
  REQUIRE(Distribution::nearest_rank(50, 4) == 2);
  REQUIRE(Distribution::nearest_rank(0, 4) == 1);
  REQUIRE(Distribution::nearest_rank(100, 4) == 4);
}

// ---- threads ----

TEST_CASE("per-thread rows and merged rows - a thread that exited keeps its data") {
  Session session;
  std::uint32_t worker_tid = 0;
  std::thread worker{[&] {
    worker_tid = this_tid();
    nsightkit::name_current_thread("worker");
    for (int i = 0; i < 3; ++i) {
      ScopedRange r{"load"};
      ScopedRange d{"decode"};
    }
  }};
  worker.join();
  for (int i = 0; i < 2; ++i) {
    ScopedRange r{"load"};
  }
  auto const snap = Report::snapshot();
  Lines merged;
  for (auto const& r : snap.paths)
    merged.push_back(r.path + " count=" + std::to_string(r.cpu.count));
  REQUIRE(merged == expect({"load count=5", "load/decode count=3"}));
  REQUIRE(thread_rows(snap, worker_tid) == expect({"load count=3", "load/decode count=3"}));
  REQUIRE(thread_rows(snap, this_tid()) == expect({"load count=2"}));
  if (nsightkit::enabled) {
    REQUIRE(snap.threads.size() == 2);
    for (auto const& t : snap.threads) {
      if (t.id == worker_tid) {
        REQUIRE(t.name == "worker");
        REQUIRE(t.exited);
        REQUIRE(t.ranges == 6);
      } else {
        REQUIRE(t.id == this_tid());
        REQUIRE_FALSE(t.exited);
        REQUIRE(t.ranges == 2);
      }
    }
    REQUIRE(snap.find("load", worker_tid)->thread == worker_tid);
    REQUIRE(snap.find("load")->thread == 0);
    // The table's last line names each thread as its section does, then its count of ranges.
    std::string const table = nsightkit::format_table(snap);
    INFO(table);
    REQUIRE(table.find("\nranges per thread: thread " + std::to_string(worker_tid) +
                       " \"worker\" (exited): 6; thread " + std::to_string(this_tid()) + ": 2\n") !=
            std::string::npos);
  }
}

// ---- capture window ----

TEST_CASE("capture-window step ranges delimit steps and are never path components") {
  Session session;
  nsightkit::Attributes const step_attr{nsightkit::detail::step_category()};
  for (int i = 0; i < 4; ++i) {
    ScopedRange step{step_attr, std::string{"step "} + std::to_string(i)};
    tick(1);
    {
      ScopedRange fwd{"forward"};
      tick(10);
    }
  }
  auto const snap = Report::snapshot();
  REQUIRE(rows(snap) == expect({"forward count=4 total=40 self=40"}));
  if (nsightkit::enabled) {
    REQUIRE(snap.steps.count == 4);
    REQUIRE(snap.steps.total_ns == 44);
    REQUIRE(snap.steps.p50_ns == 11);
    REQUIRE(nsightkit::format_table(snap).find(
                "capture-window steps (every step of every window): 4 steps") != std::string::npos);
  }
}

TEST_CASE("captured_only aggregates only ranges begun while a capture window is active") {
  auto o = quiet();
  o.captured_only = true;
  Session session{o};
  nsightkit::Attributes const step_attr{nsightkit::detail::step_category()};
  auto& active = nsightkit::detail::capture_state.active_windows;
  for (int i = 0; i < 6; ++i) {
    bool const captured = i >= 2 && i < 5;  // "wait 2, active 3"
    if (captured) active.fetch_add(1);
    {
      ScopedRange step{step_attr, "step"};
      ScopedRange fwd{"forward"};
      tick(i + 1);
      nsightkit::mark("checkpoint");
    }
    if (captured) active.fetch_sub(1);
  }
  auto const snap = Report::snapshot();
  REQUIRE(rows(snap) == expect({"forward count=3 total=12 self=12"}));  // steps 2, 3, 4: 3 + 4 + 5
  if (nsightkit::enabled) {
    REQUIRE(snap.captured_only);
    REQUIRE(snap.steps.count == 3);
    REQUIRE(snap.marks.size() == 1);
    REQUIRE(snap.marks[0].count == 3);
  }
}

// ---- start/end ranges and marks ----

TEST_CASE(
    "start/end ranges are aggregated by name outside the tree, also across threads - marks are "
    "counted") {
  Session session;
  nsightkit::UniqueRange moved{"window"};
  tick(100);
  std::thread other{[r = std::move(moved)]() mutable {
    tick(1);
    r.end();  // ends on another thread
  }};
  other.join();
  {
    nsightkit::UniqueRange u{"window"};
    tick(9);
  }
  for (int i = 0; i < 3; ++i) nsightkit::mark("tick {}", i % 2);
  auto const snap = Report::snapshot();
  REQUIRE(rows(snap).empty());
  if (nsightkit::enabled) {
    REQUIRE(snap.start_end.size() == 1);
    REQUIRE(snap.start_end[0].name == "window");
    REQUIRE(snap.start_end[0].time.count == 2);
    REQUIRE(snap.start_end[0].time.total_ns == 110);
    REQUIRE(snap.start_end[0].time.max_ns == 101);
    REQUIRE(snap.marks.size() == 2);
    REQUIRE(snap.marks[0].name == "tick 0");
    REQUIRE(snap.marks[0].count == 2);
    REQUIRE(snap.marks[1].count == 1);
  } else {
    REQUIRE(snap.start_end.empty());
    REQUIRE(snap.marks.empty());
  }
}

// ---- limits ----

TEST_CASE("past the per-thread path limit new paths are counted under (other paths)") {
  auto o = quiet();
  o.max_paths = 3;
  Session session{o};
  {
    ScopedRange root{"root"};
    for (int i = 0; i < 5; ++i) {
      ScopedRange r{"child{}", i};
      tick(1);
    }
  }
  auto const snap = Report::snapshot();
  REQUIRE(rows(snap) ==
          expect({"root count=1 total=5 self=0", "root/(other paths) count=3 total=3 self=3",
                  "root/child0 count=1 total=1 self=1", "root/child1 count=1 total=1 self=1"}));
  if (nsightkit::enabled) {
    REQUIRE(snap.threads[0].paths_over_limit == 3);
    REQUIRE(nsightkit::format_table(snap).find("beyond the per-thread path limit") !=
            std::string::npos);
  }
}

TEST_CASE("past the trace event limit events are counted as dropped, aggregation goes on") {
  auto o = quiet();
  o.record_trace = true;
  o.max_trace_events = 4;
  Session session{o};
  for (int i = 0; i < 10; ++i) {
    ScopedRange r{"r"};
    tick(1);
  }
  auto const snap = Report::snapshot();
  REQUIRE(rows(snap) == expect({"r count=10 total=10 self=10"}));
  if (nsightkit::enabled) {
    REQUIRE(snap.threads[0].trace_dropped == 6);
    std::string const trace = Report::trace_json();
    std::size_t events = 0;
    for (std::size_t p = trace.find("\"ph\":\"X\""); p != std::string::npos;
         p = trace.find("\"ph\":\"X\"", p + 1)) {
      ++events;
    }
    REQUIRE(events == 4);
    REQUIRE(trace.find("\"events_dropped\":6") != std::string::npos);
  }
}

// ---- outputs ----

TEST_CASE("the table is tree-indented, sorted by total, with percentages of the run") {
  Session session;
  tick(0);
  for (int step = 0; step < 2; ++step) model_step();
  tick(10);  // run time 100: model 90 = 90 %
  auto const snap = Report::snapshot();
  std::string const table = nsightkit::format_table(snap);
  if (nsightkit::enabled) {
    REQUIRE(snap.run_ns == 100);
    INFO(table);
    REQUIRE(table.find("\nmodel ") != std::string::npos);
    REQUIRE(table.find("\n  encoder ") != std::string::npos);
    REQUIRE(table.find("\n    mlp ") != std::string::npos);
    REQUIRE(table.find("90.0%") != std::string::npos);
    REQUIRE(table.find("\n    mlp ") < table.find("\n    attn "));
    REQUIRE(table.find("\n    attn ") < table.find("\n  head "));
  } else {
    REQUIRE(table.find("(no ranges recorded)") != std::string::npos);
  }
}

TEST_CASE("summary JSON and CSV carry every row - strings are escaped") {
  Session session;
  {
    ScopedRange r{std::string{"we\"ird,\nname\\"}};
    tick(3);
    ScopedRange bad{std::string{"bad\xff utf8 \x01"}};
    tick(1);
  }
  auto const snap = Report::snapshot();
  std::string const json = nsightkit::summary_json(snap);
  std::string const csv = nsightkit::summary_csv(snap);
  REQUIRE(json.find("\"format\":\"nsightkit-report\"") != std::string::npos);
  REQUIRE(csv.rfind("scope,tid,thread,path,depth,count,total_ns", 0) == 0);
  if (nsightkit::enabled) {
    REQUIRE(json.find(R"("path":"we\"ird,\nname\\")") != std::string::npos);
    REQUIRE(json.find("bad\xEF\xBF\xBD utf8 \\u0001") != std::string::npos);
    REQUIRE(json.find("\"total_ns\":4") != std::string::npos);
    REQUIRE(csv.find("all,,,\"we\"\"ird,\nname\\\",0,1,4,") != std::string::npos);
  }
}

TEST_CASE("the trace holds metadata, one X event per range, marks and start/end pairs") {
  auto o = quiet();
  o.record_trace = true;
  Session session{o};
  auto const origin = fake_now.load();  // enable() read the clock here: the zero of every ts
  nsightkit::name_current_thread("main thread");
  tick(5);
  {
    ScopedRange a{"outer"};
    tick(2000);
    {
      ScopedRange b{"inner"};
      tick(500);
      nsightkit::mark("m");
    }
    nsightkit::UniqueRange u{"io"};
    tick(1);
  }
  std::string const trace = Report::trace_json();
  REQUIRE(trace.find("\"traceEvents\":[") != std::string::npos);
  if (nsightkit::enabled) {
    auto const tid = std::to_string(this_tid());
    INFO(trace);
    REQUIRE(trace.find("\"name\":\"process_name\"") != std::string::npos);
    REQUIRE(trace.find("\"name\":\"thread_name\",\"pid\":") != std::string::npos);
    REQUIRE(trace.find("{\"name\":\"main thread\"}") != std::string::npos);
    REQUIRE(trace.find("\"ph\":\"X\",\"name\":\"outer\",\"cat\":\"nsightkit\",\"pid\":") !=
            std::string::npos);
    REQUIRE(trace.find(",\"tid\":" + tid +
                       ",\"ts\":0.005,\"dur\":2.501,\"args\":{\"path\":\"outer\"}") !=
            std::string::npos);
    REQUIRE(trace.find(",\"ts\":2.005,\"dur\":0.500,\"args\":{\"path\":\"outer/inner\"}") !=
            std::string::npos);
    REQUIRE(trace.find("\"ph\":\"i\",\"s\":\"t\",\"name\":\"m\"") != std::string::npos);
    REQUIRE(trace.find("\"ph\":\"b\",\"name\":\"io\"") != std::string::npos);
    REQUIRE(trace.find("\"ph\":\"e\",\"name\":\"io\"") != std::string::npos);
    // The injected clock is not one other processes share: said, with its origin.
    REQUIRE(trace.find("\"clock\":\"custom\",\"clock_source\":\"ReportOptions::clock\","
                       "\"time_origin_ns\":" +
                       std::to_string(origin) + ",") != std::string::npos);
  }
}

TEST_CASE("a range's payload is in its trace event - NaN becomes null") {
  auto o = quiet();
  o.record_trace = true;
  Session session{o};
  {
    ScopedRange bytes{nsightkit::Attributes{nsightkit::Payload{std::uint64_t{1} << 40}}, "copy"};
    tick(10);
  }
  { ScopedRange loss{nsightkit::Attributes{nsightkit::Payload{2.5}}, "loss"}; }
  { ScopedRange delta{nsightkit::Attributes{nsightkit::Payload{-7}}, "delta"}; }
  { ScopedRange bad{nsightkit::Attributes{nsightkit::Payload{std::nan("")}}, "bad"}; }
  { ScopedRange plain{"plain"}; }
  std::string const trace = Report::trace_json();
  if (nsightkit::enabled) {
    INFO(trace);
    REQUIRE(trace.find("\"args\":{\"path\":\"copy\",\"payload\":1099511627776}") !=
            std::string::npos);
    REQUIRE(trace.find("\"args\":{\"path\":\"loss\",\"payload\":2.5}") != std::string::npos);
    REQUIRE(trace.find("\"args\":{\"path\":\"delta\",\"payload\":-7}") != std::string::npos);
    REQUIRE(trace.find("\"args\":{\"path\":\"bad\",\"payload\":null}") != std::string::npos);
    REQUIRE(trace.find("\"args\":{\"path\":\"plain\"}") != std::string::npos);
  }
}

TEST_CASE("write() writes the configured files, named with the rank") {
  ScopedEnv rank{"OMPI_COMM_WORLD_RANK", "7"};
  auto o = quiet();
  std::string const dir = "report_write_test";
  REQUIRE(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()) == 0);
  o.json = dir + "/summary.json";
  o.csv = dir + "/s_{rank}_of.csv";
  o.trace = dir + "/trace";
  o.table = dir + "/table.txt";
  Session session{o};
  {
    ScopedRange r{"x"};
    tick(1);
  }
  REQUIRE(Report::write() == nsightkit::enabled);
  auto exists = [](std::string const& p) {
    std::FILE* f = std::fopen(p.c_str(), "rb");
    if (f != nullptr) std::fclose(f);
    return f != nullptr;
  };
  REQUIRE(exists(dir + "/summary.rank7.json") == nsightkit::enabled);
  REQUIRE(exists(dir + "/s_7_of.csv") == nsightkit::enabled);
  REQUIRE(exists(dir + "/trace.rank7") == nsightkit::enabled);
  REQUIRE(exists(dir + "/table.rank7.txt") == nsightkit::enabled);
  REQUIRE_FALSE(exists(dir + "/summary.json"));
  // Missing directories are created; a path that cannot be a file is reported, not a crash.
  o.json = dir + "/no/such/dir/summary.json";
  REQUIRE(Report::enable(o) == nsightkit::enabled);
  REQUIRE(Report::write() == nsightkit::enabled);
  REQUIRE(exists(dir + "/no/such/dir/summary.rank7.json") == nsightkit::enabled);
  REQUIRE(std::system(("mkdir -p " + dir + "/is_a_dir.rank7.json").c_str()) == 0);
  o.json = dir + "/is_a_dir.json";
  REQUIRE(Report::enable(o) == nsightkit::enabled);
  REQUIRE_FALSE(Report::write());
}

// ---- the NSIGHTKIT_REPORT grammar ----

TEST_CASE("report specs that parse") {
  auto o = ReportOptions::try_parse("table");
  REQUIRE(o);
  REQUIRE(o->table == "stderr");
  REQUIRE(o->json.empty());
  REQUIRE(o->gpu);

  o = ReportOptions::try_parse(" table=out.txt , json=s.json,csv=a/b.csv,trace=t.json ");
  REQUIRE(o);
  REQUIRE(o->table == "out.txt");
  REQUIRE(o->json == "s.json");
  REQUIRE(o->csv == "a/b.csv");
  REQUIRE(o->trace == "t.json");

  o = ReportOptions::try_parse("trace=t.json");  // an output given: no table unless asked
  REQUIRE(o);
  REQUIRE(o->table.empty());

  o = ReportOptions::try_parse("window-only");  // modifiers alone: the table on stderr
  REQUIRE(o);
  REQUIRE(o->captured_only);
  REQUIRE(o->table == "stderr");

  o = ReportOptions::try_parse("1");
  REQUIRE(o);
  REQUIRE(o->table == "stderr");

  o = ReportOptions::try_parse(
      "table=stdout,threads,gpu=off,samples=0,trace-events=10,paths=5,window-only=off");
  REQUIRE(o);
  REQUIRE(o->table == "stdout");
  REQUIRE(o->per_thread);
  REQUIRE_FALSE(o->gpu);
  REQUIRE(o->exact_samples == 0);
  REQUIRE(o->max_trace_events == 10);
  REQUIRE(o->max_paths == 5);
  REQUIRE_FALSE(o->captured_only);

  o = ReportOptions::try_parse("json=a=b.json");  // the first '=' separates
  REQUIRE(o);
  REQUIRE(o->json == "a=b.json");

  for (char const* off : {"", "0", "off", "none", "false", "  "}) {
    std::string why = "unchanged";
    REQUIRE_FALSE(ReportOptions::try_parse(off, &why));
    REQUIRE(why.empty());  // off is not an error
  }
}

TEST_CASE("report specs that do not parse name the bad part") {
  struct Bad {
    char const* spec;
    char const* message;
  };
  for (Bad const& b :
       {Bad{"tabel", "unknown item 'tabel'"}, Bad{"table,jsn=x.json", "unknown item 'jsn=x.json'"},
        Bad{"json", "'json' needs a file path"}, Bad{"json=", "empty value in 'json='"},
        Bad{"table,,json=x", "empty item"}, Bad{"table,", "empty item"},
        Bad{"json=a,json=b", "'json' given twice"}, Bad{"samples=-1", "bad number in 'samples=-1'"},
        Bad{"samples=lots", "bad number in 'samples=lots'"},
        Bad{"paths=0", "bad number in 'paths=0'"},
        Bad{"gpu=maybe", "bad value in 'gpu=maybe' (use on, off, auto, events or cupti)"},
        Bad{"table,off", "'off' turns the report off"}}) {
    INFO(b.spec);
    std::string why;
    REQUIRE_FALSE(ReportOptions::try_parse(b.spec, &why));
    INFO(why);
    REQUIRE(why.find(b.message) != std::string::npos);
    REQUIRE(why.find("expected a comma-separated list of: table[=stderr|stdout|PATH]") !=
            std::string::npos);
  }
  REQUIRE_THROWS_AS(ReportOptions::parse("bogus"), std::invalid_argument);
  REQUIRE_THROWS_WITH(ReportOptions::parse("bogus"), Catch::Contains("'bogus'"));
  REQUIRE_THROWS_WITH(ReportOptions::parse("off"), Catch::Contains("turns the report off"));
  REQUIRE(ReportOptions::parse("csv=x.csv").csv == "x.csv");
}

TEST_CASE(
    "enable_from_environment: unset and off stay silent, bad values stay off, good values enable") {
  Report::disable();
  Report::reset();
  {
    ScopedEnv env{"NSIGHTKIT_REPORT", nullptr};
    REQUIRE_FALSE(Report::enable_from_environment());
  }
  {
    ScopedEnv env{"NSIGHTKIT_REPORT", "off"};
    REQUIRE_FALSE(Report::enable_from_environment());
  }
  {
    ScopedEnv env{"NSIGHTKIT_REPORT", "table,bogus"};  // prints one message on stderr
    REQUIRE_FALSE(Report::enable_from_environment());
    REQUIRE_FALSE(Report::is_enabled());
  }
  {
    ScopedEnv env{"NSIGHTKIT_REPORT", "json=env_summary.json,threads"};
    REQUIRE(Report::enable_from_environment() == nsightkit::enabled);
    REQUIRE(Report::is_enabled() == nsightkit::enabled);
    if (nsightkit::enabled) {
      REQUIRE(Report::options().json == "env_summary.json");
      REQUIRE(Report::options().per_thread);
      REQUIRE(Report::options().at_exit);
    }
  }
  auto o = Report::options();
  o.at_exit = false;  // this test binary must not write at exit
  o.json.clear();
  REQUIRE(Report::enable(o) == nsightkit::enabled);
  Report::disable();
  Report::reset();
}

// ---- ranks and file names ----

TEST_CASE("the rank comes from the first launcher variable set, in documented order") {
  ScopedEnv a{"OMPI_COMM_WORLD_RANK", nullptr};
  ScopedEnv b{"PMI_RANK", nullptr};
  ScopedEnv c{"SLURM_PROCID", nullptr};
  ScopedEnv d{"RANK", nullptr};
  ScopedEnv e{"LOCAL_RANK", nullptr};
  ScopedEnv f{"WORLD_SIZE", nullptr};
  ScopedEnv g{"LOCAL_WORLD_SIZE", nullptr};
  REQUIRE_FALSE(Report::rank());
  ::setenv("LOCAL_RANK", "1", 1);  // a rank among one host's processes: not the process's rank
  REQUIRE_FALSE(Report::rank());
  ::setenv("RANK", "5", 1);
  REQUIRE(Report::rank() == 5);
  ::setenv("SLURM_PROCID", "4", 1);
  REQUIRE(Report::rank() == 4);
  ::setenv("PMI_RANK", "3", 1);
  REQUIRE(Report::rank() == 3);
  ::setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  REQUIRE(Report::rank() == 2);
  ::setenv("OMPI_COMM_WORLD_RANK", "two", 1);  // not a rank: warned about once and skipped
  REQUIRE(Report::rank() == 3);
  REQUIRE(Report::output_path("trace.json") == "trace.rank3.json");
}

TEST_CASE("output file names: .rankN before the extension, {rank} and {pid} fields") {
  using nsightkit::detail::report::expand_output_path;
  REQUIRE(expand_output_path("out.json", -1, 42) == "out.json");
  REQUIRE(expand_output_path("out.json", 3, 42) == "out.rank3.json");
  REQUIRE(expand_output_path("out", 3, 42) == "out.rank3");
  REQUIRE(expand_output_path("dir.d/out", 3, 42) == "dir.d/out.rank3");
  REQUIRE(expand_output_path("dir/.trace", 3, 42) == "dir/.trace.rank3");
  REQUIRE(expand_output_path("a.b.json", 0, 42) == "a.b.rank0.json");
  REQUIRE(expand_output_path("t_{rank}_{pid}.json", 3, 42) == "t_3_42.json");
  REQUIRE(expand_output_path("t_{pid}.json", 3, 42) == "t_42.rank3.json");
  REQUIRE(expand_output_path("t_{rank}.json", -1, 42) == "t_0.json");
}

// ---- GPU timing, through a fake GPU backend (the CUDA one is tested on a device) ----
#if NSIGHTKIT_ENABLED
namespace fake {
constexpr int not_ready = 600;
struct Event {
  std::int64_t t{-1};
  bool done{false};
};
struct Gpu {
  std::int64_t now{0};
  int device_status{0};
  bool capturing{false};
  int created{0};
  int streams{0};
  int syncs{0};
  std::vector<std::unique_ptr<Event>> events;  // never freed: the report's pool keeps handles

  void restart() {
    now = 0;
    device_status = 0;
    capturing = false;
    created = 0;
    syncs = 0;
  }
};
Gpu gpu;
int current_device(int* d) noexcept {
  *d = 0;
  return gpu.device_status;
}
int event_create(void** e) noexcept {
  gpu.events.push_back(std::make_unique<Event>());
  *e = gpu.events.back().get();
  ++gpu.created;
  return 0;
}
int event_record(void* e, void*) noexcept {
  auto* ev = static_cast<Event*>(e);
  ev->t = gpu.now;
  ev->done = false;
  return 0;
}
void complete_all();
int event_query(void* e) noexcept { return static_cast<Event*>(e)->done ? 0 : not_ready; }
int event_synchronize(void*) noexcept {  // one stream: waiting for an event completes all before it
  ++gpu.syncs;
  complete_all();
  return 0;
}
int elapsed_ns(void* a, void* b, double* ns) noexcept {
  auto const* x = static_cast<Event*>(a);
  auto const* y = static_cast<Event*>(b);
  if (!x->done || !y->done) return not_ready;
  *ns = static_cast<double>(y->t - x->t);
  return 0;
}
int stream_capturing(void*, bool* c) noexcept {
  *c = gpu.capturing;
  return 0;
}
int create_stream(void** s) noexcept {
  ++gpu.streams;
  *s = &gpu;
  return 0;
}
bool is_shutdown(int) noexcept { return false; }
char const* error_name(int) noexcept { return "fakeErrorNoDevice"; }
char const* error_string(int) noexcept { return "no fake device"; }
void complete_all() {
  for (auto& e : gpu.events) {
    if (e->t >= 0) e->done = true;
  }
}
constexpr nsightkit::detail::report::EventApi api{
    not_ready,   &current_device,   &event_create,  &event_record, &event_query, &event_synchronize,
    &elapsed_ns, &stream_capturing, &create_stream, &is_shutdown,  &error_name,  &error_string};

/// The fake's equivalent of CurrentStream.
struct Current {
  explicit Current(void* stream) : previous_{nsightkit::detail::report::current_gpu} {
    nsightkit::detail::report::current_gpu = nsightkit::detail::report::GpuContext{stream, &api};
  }
  ~Current() { nsightkit::detail::report::current_gpu = previous_; }
  Current(Current const&) = delete;
  Current& operator=(Current const&) = delete;

 private:
  nsightkit::detail::report::GpuContext previous_;
};
int stream_a = 0;
}  // namespace fake

TEST_CASE("GPU time per path from event pairs, resolved without waiting, events pooled") {
  fake::gpu.restart();
  auto o = quiet();
  o.record_trace = true;
  Session session{o};
  {
    fake::Current on{&fake::stream_a};
    for (int i = 0; i < 50; ++i) {
      ScopedRange layer{"layer"};
      {
        ScopedRange k2{"k2"};
        fake::gpu.now += 2000;  // a 2 us "kernel"
        tick(100);              // CPU time differs from GPU time on purpose
      }
      {
        ScopedRange k6{"k6"};
        fake::gpu.now += 6000;
        tick(100);
      }
      fake::complete_all();  // the GPU caught up; the next ranges' ends poll without waiting
    }
  }
  REQUIRE(fake::gpu.syncs == 0);  // nothing waited so far
  auto const snap = Report::snapshot();
  auto const* layer = snap.find("layer");
  auto const* k2 = snap.find("layer/k2");
  auto const* k6 = snap.find("layer/k6");
  REQUIRE(layer != nullptr);
  REQUIRE(k2->gpu.count == 50);
  REQUIRE(k2->gpu.total_ns == 100000);
  REQUIRE(k6->gpu.p50_ns == 6000);
  REQUIRE(layer->gpu.total_ns == 400000);
  REQUIRE(k2->cpu.total_ns == 5000);
  REQUIRE(snap.gpu.ranges_timed == 150);
  REQUIRE(snap.gpu.ranges_pending == 0);
  // Steady state reuses events: a handful in flight, not two per range (300).
  REQUIRE(fake::gpu.created <= 12);
  REQUIRE(snap.gpu.events_created == static_cast<std::uint64_t>(fake::gpu.created));
  REQUIRE(fake::gpu.streams == 1);  // one anchor stream per device
  // GPU intervals on their own track, placed through the anchor.
  std::string const trace = Report::trace_json();
  REQUIRE(trace.find("\"cat\":\"nsightkit gpu\"") != std::string::npos);
  REQUIRE(trace.find("\"name\":\"thread_name\",\"pid\":") != std::string::npos);
  REQUIRE(trace.find("GPU stream") != std::string::npos);
  REQUIRE(trace.find(",\"dur\":6.000,\"args\":{\"path\":\"layer/k6\"") != std::string::npos);
  REQUIRE(nsightkit::format_table(snap).find("GPU total") != std::string::npos);
}

TEST_CASE("pairs still running at the snapshot are waited for there, and only there") {
  fake::gpu.restart();
  Session session;
  {
    fake::Current on{&fake::stream_a};
    for (int i = 0; i < 3; ++i) {
      ScopedRange k{"k"};
      fake::gpu.now += 1000;
    }
  }
  REQUIRE(fake::gpu.syncs == 0);
  auto const snap = Report::snapshot();
  REQUIRE(fake::gpu.syncs > 0);
  REQUIRE(snap.find("k")->gpu.count == 3);
  REQUIRE(snap.find("k")->gpu.total_ns == 3000);
  REQUIRE(snap.gpu.ranges_pending == 0);
}

TEST_CASE("ranges on a capturing stream are not timed - no current stream means no GPU work") {
  fake::gpu.restart();
  Session session;
  { ScopedRange cpu_only{"cpu only"}; }
  REQUIRE(fake::gpu.created == 0);
  {
    fake::Current on{&fake::stream_a};
    fake::gpu.capturing = true;
    ScopedRange k{"captured into a graph"};
  }
  auto const snap = Report::snapshot();
  REQUIRE(snap.gpu.ranges_skipped == 1);
  REQUIRE(snap.find("captured into a graph")->gpu.count == 0);
  REQUIRE(snap.find("captured into a graph")->cpu.count == 1);
}

TEST_CASE("a failing GPU backend stops GPU timing with one message - CPU times go on") {
  fake::gpu.restart();
  fake::gpu.device_status = 35;
  Session session;
  {
    fake::Current on{&fake::stream_a};
    for (int i = 0; i < 3; ++i) {
      ScopedRange k{"k"};
      tick(2);
    }
  }
  auto const snap = Report::snapshot();
  REQUIRE(snap.find("k")->cpu.count == 3);
  REQUIRE(snap.find("k")->gpu.count == 0);
  REQUIRE(snap.gpu.error == "cuCtxGetDevice returned fakeErrorNoDevice (35): no fake device");
  REQUIRE(nsightkit::format_table(snap).find("GPU timing stopped: cuCtxGetDevice") !=
          std::string::npos);
  // The failure is process-wide and sticky: reset the flag so later tests can time again.
  nsightkit::detail::report::events_source().clear_failure();
}
#endif
