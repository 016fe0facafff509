#include "support.hpp"

#include <nsightkit/module.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/report.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using nsightkit::ScopedRange;
using nsightkit::ScopedRangeIn;
using nsightkit::UniqueRange;
using nsightkit::testing::EventKind;
using nsightkit::testing::Recorder;
using nsk_test::expect;
using Lines = std::vector<std::string>;

namespace {
struct Model {
  static constexpr char const* name{"model"};
};
struct Unused {
  static constexpr char const* name{"unused-domain"};
};
}  // namespace

TEST_CASE("ScopedRange is a non-copyable, non-movable stack guard") {
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<ScopedRange>);
  STATIC_REQUIRE_FALSE(std::is_move_constructible_v<ScopedRange>);
  STATIC_REQUIRE_FALSE(std::is_copy_assignable_v<ScopedRange>);
  STATIC_REQUIRE(std::is_nothrow_destructible_v<ScopedRange>);
  STATIC_REQUIRE(std::is_nothrow_constructible_v<ScopedRange, char const*>);
  STATIC_REQUIRE(std::is_move_constructible_v<UniqueRange>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<UniqueRange>);
}

TEST_CASE("with the report on, another NVTX tool (the Recorder) still gets every range") {
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  o.gpu = false;
  nsightkit::Report::reset();
  REQUIRE(nsightkit::Report::enable(o) == nsightkit::enabled);
  // Names of its own: strings are registered once per process, and a later test counts them.
  Recorder rec;
  for (int i = 0; i < 2; ++i) {
    ScopedRange outer{"reported outer"};
    nsightkit::ModuleScope layer{"reported layer"};
  }
  auto const snap = nsightkit::Report::snapshot();
  nsightkit::Report::disable();
  nsightkit::Report::reset();
  Lines want;
  for (int i = 0; i < 2; ++i) {
    want.insert(want.end(), {"push nsightkit reported outer", "push nsightkit reported layer",
                             "pop nsightkit", "pop nsightkit"});
  }
  REQUIRE(rec.lines() == expect(want));
  if constexpr (nsightkit::enabled) {
    REQUIRE(snap.find("reported outer")->cpu.count == 2);
    REQUIRE(snap.find("reported outer/reported layer")->cpu.count == 2);
  }
#if NSIGHTKIT_ENABLED
  CHECK(nsightkit::detail::nvtx_push_state.load() == nsightkit::detail::NvtxPushState::tool);
#endif
}

TEST_CASE("a static name pushes on construction and pops on destruction") {
  Recorder rec;
  {
    ScopedRange r{"forward"};
    REQUIRE(rec.lines() == expect({"push nsightkit forward"}));
  }
  REQUIRE(rec.lines() == expect({"push nsightkit forward", "pop nsightkit"}));
  REQUIRE(rec.open_ranges() == 0);
}

TEST_CASE("a static name is a registered string, registered once per domain") {
  Recorder rec;
  for (int i = 0; i < 5; ++i) {
    ScopedRange r{"registered-once"};
  }
  std::size_t registrations = 0;
  for (auto const& e : rec.events()) {
    if (e.kind == EventKind::register_string && e.message == "registered-once") ++registrations;
  }
  CHECK(registrations == (nsightkit::enabled ? 1u : 0u));
  for (auto const& e : rec.range_events()) {
    if (e.kind == EventKind::push) CHECK(e.registered);
  }
  // The same text in another domain is a different registration.
  { ScopedRangeIn<Model> r{"registered-once"}; }
  registrations = 0;
  for (auto const& e : rec.events()) {
    if (e.kind == EventKind::register_string && e.message == "registered-once") ++registrations;
  }
  CHECK(registrations == (nsightkit::enabled ? 2u : 0u));
}

TEST_CASE("a buffer reused with new text is never misnamed") {
  Recorder rec;
  char buf[32];
  for (int i = 0; i < 3; ++i) {
    std::snprintf(buf, sizeof buf, "buffer-%d", i);
    ScopedRange r{static_cast<char const*>(buf)};
  }
  REQUIRE(rec.lines() ==
          expect({"push nsightkit buffer-0", "pop nsightkit", "push nsightkit buffer-1",
                  "pop nsightkit", "push nsightkit buffer-2", "pop nsightkit"}));
}

TEST_CASE("nested and repeated static names keep their own handles, each registered once") {
  // More names than one set of the per-thread handle cache holds, nested and repeated, with a
  // buffer reused between them: every push names its own text, and each name is registered once.
  static char const* const names[] = {"outer", "middle", "inner", "a", "bb", "ccc", "dddd"};
  Recorder rec;
  char buf[32];
  Lines want;
  for (int round = 0; round < 4; ++round) {
    {
      ScopedRange o{names[0]};
      ScopedRange m{names[1]};
      ScopedRange i{names[2]};
      want.insert(want.end(),
                  {"push nsightkit outer", "push nsightkit middle", "push nsightkit inner"});
      for (std::size_t k = 3; k < sizeof names / sizeof names[0]; ++k) {
        { ScopedRange r{names[k]}; }
        std::snprintf(buf, sizeof buf, "buf-%d-%zu", round, k);
        { ScopedRange r{static_cast<char const*>(buf)}; }
        want.insert(want.end(), {std::string{"push nsightkit "} + names[k], "pop nsightkit",
                                 std::string{"push nsightkit "} + buf, "pop nsightkit"});
      }
    }
    want.insert(want.end(), {"pop nsightkit", "pop nsightkit", "pop nsightkit"});
  }
  REQUIRE(rec.lines() == expect(want));
  for (char const* n : names) {
    std::size_t registrations = 0;
    for (auto const& e : rec.events()) {
      if (e.kind == EventKind::register_string && e.message == n) ++registrations;
    }
    CHECK(registrations == (nsightkit::enabled ? 1u : 0u));
  }
}

TEST_CASE("formatted names are formatted and passed as plain messages") {
  Recorder rec;
  {
    ScopedRange r{"layer{}/conv{}", 3, 1};
    ScopedRange s{"{:.2f} ms", 1.234};
  }
  REQUIRE(rec.lines() == expect({"push nsightkit layer3/conv1", "push nsightkit 1.23 ms",
                                 "pop nsightkit", "pop nsightkit"}));
  for (auto const& e : rec.range_events()) CHECK_FALSE(e.registered);
}

TEST_CASE("names from std::string and very long formatted names") {
  Recorder rec;
  std::string const dynamic = "dyn-" + std::to_string(42);
  std::string const long_part(2000, 'x');
  {
    ScopedRange a{dynamic};
    ScopedRange b{"long {}", long_part};
  }
  REQUIRE(rec.lines() == expect({"push nsightkit dyn-42", "push nsightkit long " + long_part,
                                 "pop nsightkit", "pop nsightkit"}));
}

namespace {
struct Exploding {};
}  // namespace
template <>
struct fmt::formatter<Exploding> {
  constexpr auto parse(format_parse_context& ctx) { return ctx.begin(); }
  template <class Ctx>
  auto format(Exploding const&, Ctx& ctx) const -> decltype(ctx.out()) {
    throw std::runtime_error("formatter failed");
  }
};

TEST_CASE("a throwing formatter yields a placeholder name, never an exception") {
  Recorder rec;
  { ScopedRange r{"bad {}", Exploding{}}; }
  REQUIRE(rec.lines() ==
          expect({"push nsightkit <nsightkit: name formatting failed>", "pop nsightkit"}));
}

TEST_CASE("ranges nest and report their depth") {
  Recorder rec;
  {
    ScopedRange a{"a"};
    {
      ScopedRange b{"b"};
      { ScopedRange c{"c"}; }
    }
    ScopedRange d{"d"};
  }
  REQUIRE(rec.lines() ==
          expect({"push nsightkit a", "push nsightkit b", "push nsightkit c", "pop nsightkit",
                  "pop nsightkit", "push nsightkit d", "pop nsightkit", "pop nsightkit"}));
  std::vector<int> depths;
  for (auto const& e : rec.range_events()) depths.push_back(e.depth);
  if (nsightkit::enabled) CHECK(depths == std::vector<int>{1, 2, 3, 3, 2, 2, 2, 1});
}

namespace {
void throws_three_deep(int level) {
  ScopedRange r{"level {}", level};
  if (level == 3) throw std::runtime_error("deep");
  throws_three_deep(level + 1);
}
}  // namespace

TEST_CASE("an exception unwinding through ranges pops every one of them") {
  Recorder rec;
  REQUIRE_THROWS_AS(throws_three_deep(1), std::runtime_error);
  REQUIRE(rec.lines() ==
          expect({"push nsightkit level 1", "push nsightkit level 2", "push nsightkit level 3",
                  "pop nsightkit", "pop nsightkit", "pop nsightkit"}));
  REQUIRE(rec.open_ranges() == 0);
}

TEST_CASE("domains: custom tags and NVTX's global domain") {
  Recorder rec;
  {
    ScopedRangeIn<Model> m{"backbone"};
    ScopedRangeIn<nsightkit::GlobalDomain> g{"global {}", 1};
  }
  REQUIRE(rec.lines() ==
          expect({"push model backbone", "push <global> global 1", "pop <global>", "pop model"}));
}

TEST_CASE("a domain is created once, on first use") {
  Recorder rec;
  { ScopedRangeIn<Unused> r{"first"}; }
  { ScopedRangeIn<Unused> r{"second"}; }
  std::size_t creates = 0;
  for (auto const& e : rec.events()) {
    if (e.kind == EventKind::domain_create && e.domain == "unused-domain") ++creates;
  }
  CHECK(creates == (nsightkit::enabled ? 1u : 0u));
}

TEST_CASE("threads nest independently") {
  Recorder rec;
  auto work = [](char const* who) {
    ScopedRange outer{"outer {}", who};
    for (int i = 0; i < 50; ++i) {
      ScopedRange inner{"inner {}", i};
    }
  };
  std::thread t1{work, "t1"};
  std::thread t2{work, "t2"};
  std::thread::id const id1 = t1.get_id();
  std::thread::id const id2 = t2.get_id();
  t1.join();
  t2.join();
  for (auto const& [id, who] : {std::pair{id1, "t1"}, std::pair{id2, "t2"}}) {
    Lines expected{std::string{"push nsightkit outer "} + who};
    for (int i = 0; i < 50; ++i) {
      expected.push_back("push nsightkit inner " + std::to_string(i));
      expected.push_back("pop nsightkit");
    }
    expected.push_back("pop nsightkit");
    REQUIRE(rec.lines(id) == expect(expected));
    int max_depth = 0;
    for (auto const& e : rec.events(id)) max_depth = std::max(max_depth, e.depth);
    CHECK(max_depth == (nsightkit::enabled ? 2 : 0));
  }
}

namespace {
int side_effects = 0;
[[maybe_unused]] int counted(int v) {
  ++side_effects;
  return v;
}
void named_function() { NSIGHTKIT_FUNC_RANGE(); }
void two_in_one_scope([[maybe_unused]] int i) {
  NSIGHTKIT_RANGE("first {}", i);
  NSIGHTKIT_RANGE("second");
  NSIGHTKIT_RANGE_IN(Model, "third {} {}", i, counted(i));
}
}  // namespace

TEST_CASE("macros: function ranges, formatted ranges, several in one scope") {
  Recorder rec;
  side_effects = 0;
  named_function();
  named_function();
  two_in_one_scope(7);
  REQUIRE(rec.lines() ==
          expect({"push nsightkit named_function", "pop nsightkit", "push nsightkit named_function",
                  "pop nsightkit", "push nsightkit first 7", "push nsightkit second",
                  "push model third 7 7", "pop model", "pop nsightkit", "pop nsightkit"}));
  // Enabled: arguments are evaluated exactly once; disabled: never.
  CHECK(side_effects == (nsightkit::enabled ? 1 : 0));
  std::size_t func_registrations = 0;
  for (auto const& e : rec.events()) {
    if (e.kind == EventKind::register_string && e.message == "named_function") ++func_registrations;
  }
  CHECK(func_registrations == (nsightkit::enabled ? 1u : 0u));
}

TEST_CASE("marks carry names and attributes") {
  Recorder rec;
  nsightkit::mark("checkpoint");
  nsightkit::mark("epoch {}", 2);
  nsightkit::mark(nsightkit::Payload{5}, "with payload");
  nsightkit::mark_in<Model>("model mark");
  REQUIRE(rec.lines() == expect({"mark nsightkit checkpoint", "mark nsightkit epoch 2",
                                 "mark nsightkit with payload", "mark model model mark"}));
  if (nsightkit::enabled) CHECK(rec.range_events()[2].payload.i == 5);
}

TEST_CASE("UniqueRange: start/end, move, end on another thread, end once") {
  Recorder rec;
  {
    UniqueRange a{"window {}", 1};
    UniqueRange moved = std::move(a);
    a.end();  // moved-from: ends nothing
    std::thread t{[r = std::move(moved)]() mutable { r.end(); }};
    t.join();
  }
  UniqueRange b{"second"};
  b.end();
  b.end();
  auto const ev = rec.range_events();
  REQUIRE(rec.lines() == expect({"start nsightkit window 1", "end nsightkit",
                                 "start nsightkit second", "end nsightkit"}));
  if (nsightkit::enabled) {
    CHECK(ev[0].range_id == ev[1].range_id);
    CHECK(ev[0].thread != ev[1].thread);
    CHECK(ev[2].range_id == ev[3].range_id);
  }
  CHECK(rec.open_ranges() == 0);
}

TEST_CASE("naming the current thread uses the OS thread id") {
  Recorder rec;
  nsightkit::name_current_thread("main-test-thread");
  std::vector<std::string> names;
  for (auto const& e : rec.events()) {
    if (e.kind == EventKind::name_os_thread) {
      names.push_back(e.message);
      CHECK(e.object != 0u);
    }
  }
  REQUIRE(names == expect({"main-test-thread"}));
}

namespace {
struct Many {
  static constexpr char const* name{"many"};
};
}  // namespace

TEST_CASE("past the registration limit, static names fall back to plain messages") {
  Recorder rec;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < 4100; ++i) names.push_back("n" + std::to_string(i));
  for (auto const& n : names) {
    ScopedRangeIn<Many> r{n.c_str()};
  }
  auto const ev = rec.range_events();
  if (!nsightkit::enabled) {
    REQUIRE(ev.empty());
    return;
  }
  REQUIRE(ev.size() == 2 * names.size());
  CHECK(ev[0].registered);
  CHECK(ev[0].message == "n0");
  auto const& last_push = ev[ev.size() - 2];
  CHECK(last_push.message == "n4099");
  CHECK_FALSE(last_push.registered);
  CHECK(rec.count(EventKind::register_string) == 4096u);
}

#if NSIGHTKIT_ENABLED
namespace {
// An in-process consumer, as the report will be.
struct CollectingSink final : nsightkit::detail::RangeSink {
  std::vector<std::string> seen;
  void on_push(nsightkit::detail::RangeBegin const& b) noexcept override {
    seen.push_back(std::string{"push "} + b.domain + " " + std::string{b.name});
  }
  void on_pop(char const* domain) noexcept override {
    seen.push_back(std::string{"pop "} + domain);
  }
  void on_start(std::uint64_t, nsightkit::detail::RangeBegin const& b) noexcept override {
    seen.push_back("start " + std::string{b.name});
  }
  void on_end(std::uint64_t) noexcept override { seen.push_back("end"); }
  void on_mark(nsightkit::detail::RangeBegin const& b) noexcept override {
    seen.push_back("mark " + std::string{b.name});
  }
  void on_thread_name(std::string_view n) noexcept override {
    seen.push_back("thread " + std::string{n});
  }
};
}  // namespace

TEST_CASE("nsightkit sinks see every range, mark and thread name") {
  CollectingSink sink;
  REQUIRE(nsightkit::detail::add_sink(&sink));
  REQUIRE_FALSE(nsightkit::detail::add_sink(&sink));  // no double registration
  {
    ScopedRange r{"s{}", 1};
    ScopedRangeIn<Model> m{"static"};
    nsightkit::mark("m");
    UniqueRange u{"u"};
    nsightkit::name_current_thread("named");
  }
  REQUIRE(nsightkit::detail::remove_sink(&sink));
  { ScopedRange after{"after removal"}; }
  REQUIRE(sink.seen == Lines{"push nsightkit s1", "push model static", "mark m", "start u",
                             "thread named", "end", "pop model", "pop nsightkit"});
}
#endif
