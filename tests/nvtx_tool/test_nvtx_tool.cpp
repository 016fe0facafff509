// The report as this executable's NVTX tool (NVTX's static injection): ranges of the NVTX C API,
// of nvtx3's C++ API and of nsightkit, in the global and named domains, reach the report's paths,
// each counted once, nested as written. No Recorder here: the report is the only tool.
#include <nsightkit/detail/capture_state.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/report.hpp>

#include <nvtx3/nvtx3.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace nsk = nsightkit;

namespace {

nsk::ReportOptions quiet_options() {
  nsk::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  o.gpu = false;
  return o;
}

// NVTX asks for its tool at the module's first NVTX call: the report must be on before it.
bool const enabled_before_any_range = nsk::Report::enable(quiet_options());

struct MyLib {
  static constexpr char const* name{"MyLib"};
};

std::uint64_t calls(nsk::ReportSnapshot const& s, char const* path) {
  nsk::PathStats const* row = s.find(path);
  return row == nullptr ? 0 : row->cpu.count;
}

/// A fresh report with `domains` (empty: all).
void restart(std::vector<std::string> domains = {}) {
  nsk::ReportOptions o = quiet_options();
  o.domains = std::move(domains);
  REQUIRE(nsk::Report::enable(o) == nsk::enabled);
  nsk::Report::reset();
}

std::uint32_t os_tid() {
#if defined(__linux__)
  return static_cast<std::uint32_t>(::syscall(SYS_gettid));
#else
  return 0;
#endif
}

}  // namespace

TEST_CASE("C API ranges of the default domain form paths") {
  REQUIRE(enabled_before_any_range == nsk::enabled);
  restart();
  for (int i = 0; i < 3; ++i) {
    nvtxRangePushA("outer");
    nvtxRangePushA("inner");
    nvtxRangePop();
    nvtxRangePushW(L"w\u00fcrfel");
    nvtxRangePop();
    nvtxRangePop();
  }
  nvtxMarkA("checkpoint");
  auto const s = nsk::Report::snapshot();
  if constexpr (nsk::enabled) {
    CHECK(calls(s, "outer") == 3);
    CHECK(calls(s, "outer/inner") == 3);
    CHECK(calls(s, "outer/w\xC3\xBCrfel") == 3);  // UTF-8 of the wide name
    REQUIRE(s.marks.size() == 1);
    CHECK(s.marks[0].name == "checkpoint");
    CHECK(s.marks[0].count == 1);
  } else {
    CHECK(s.paths.empty());
  }
}

TEST_CASE("nvtx3 C++ ranges, a named domain and registered strings") {
  restart();
  static nvtx3::registered_string_in<MyLib> const step_name{"solve"};
  for (int i = 0; i < 2; ++i) {
    nvtx3::scoped_range outer{"cpp outer"};
    nvtx3::scoped_range_in<MyLib> lib{"factor"};
    { nvtx3::scoped_range_in<MyLib> r{step_name}; }
    nvtx3::mark_in<MyLib>("tick");
  }
  auto const s = nsk::Report::snapshot();
  if constexpr (nsk::enabled) {
    CHECK(calls(s, "cpp outer") == 2);
    CHECK(calls(s, "cpp outer/MyLib@factor") == 2);
    CHECK(calls(s, "cpp outer/MyLib@factor/MyLib@solve") == 2);
    REQUIRE(s.marks.size() == 1);
    CHECK(s.marks[0].domain == "MyLib");
    CHECK(s.marks[0].count == 2);
  }
}

TEST_CASE("payloads and colors of third-party ranges do not change their paths") {
  restart();
  nvtx3::event_attributes const a{"scaled", nvtx3::rgb{10, 20, 30}, nvtx3::payload{7},
                                  nvtx3::category{3}};
  { nvtx3::scoped_range r{a}; }
  { nvtx3::scoped_range r{nvtx3::event_attributes{"scaled", nvtx3::payload{2.5}}}; }
  auto const s = nsk::Report::snapshot();
  if constexpr (nsk::enabled) CHECK(calls(s, "scaled") == 2);
}

TEST_CASE("nsightkit's ranges are counted once though the report is also the NVTX tool") {
  restart();
  for (int i = 0; i < 5; ++i) {
    nsk::ScopedRange a{"mine"};
    nsk::ScopedRangeIn<nsk::GlobalDomain> g{"global mine"};
    nsk::mark("my mark");
  }
  auto const s = nsk::Report::snapshot();
  if constexpr (nsk::enabled) {
    CHECK(calls(s, "mine") == 5);
    CHECK(calls(s, "mine/global mine") == 5);
    REQUIRE(s.marks.size() == 1);
    CHECK(s.marks[0].count == 5);
    std::uint64_t rows = 0;
    for (auto const& r : s.paths) rows += r.cpu.count;
    CHECK(rows == 10);
  }
#if NSIGHTKIT_ENABLED
  // The tool is the report's own: nsightkit's ranges reach it directly, without an NVTX call.
  CHECK(nsk::detail::nvtx_push_state.load() == nsk::detail::NvtxPushState::report_tool);
#endif
}

TEST_CASE("third-party ranges nest with nsightkit's both ways") {
  restart();
  {
    nsk::ScopedRange model{"model"};
    nvtxRangePushA("library call");
    { nsk::ScopedRange inner{"callback"}; }
    nvtxRangePop();
  }
  {
    nvtx3::scoped_range_in<MyLib> outer{"driver"};
    nsk::ScopedRange layer{"layer"};
    nvtxRangePushA("kernel wrapper");
    nvtxRangePop();
  }
  auto const s = nsk::Report::snapshot();
  if constexpr (nsk::enabled) {
    CHECK(calls(s, "model") == 1);
    CHECK(calls(s, "model/library call") == 1);
    CHECK(calls(s, "model/library call/callback") == 1);
    CHECK(calls(s, "MyLib@driver/layer") == 1);
    CHECK(calls(s, "MyLib@driver/layer/kernel wrapper") == 1);
  }
}

TEST_CASE("a start/end range may end on another thread") {
  restart();
  nvtxRangeId_t const id = nvtxRangeStartA("request");
  std::thread other{[id] { nvtxRangeEnd(id); }};
  other.join();
  nvtxRangeId_t const unended = nvtxRangeStartA("never ended");
  (void)unended;
  auto const s = nsk::Report::snapshot();
  if constexpr (nsk::enabled) {
    REQUIRE(s.start_end.size() == 1);
    CHECK(s.start_end[0].name == "request");
    CHECK(s.start_end[0].time.count == 1);
  }
}

TEST_CASE("threads named through NVTX carry their names") {
  restart();
  std::uint32_t worker_tid = 0;
  std::thread worker{[&] {
    worker_tid = os_tid();
    nvtx3::scoped_range r{"work"};
  }};
  worker.join();
  nvtxNameOsThreadA(worker_tid, "loader");  // named from another thread, after it recorded
  nvtxNameOsThreadA(os_tid(), "main loop");
  { nvtx3::scoped_range r{"here"}; }
  auto const s = nsk::Report::snapshot();
  if constexpr (nsk::enabled) {
    bool loader = false, main_loop = false;
    for (auto const& t : s.threads) {
      if (t.id == worker_tid) loader = t.name == "loader";
      if (t.id == os_tid()) main_loop = t.name == "main loop";
    }
    CHECK(loader);
    CHECK(main_loop);
  }
}

TEST_CASE("domains= keeps the named domains' ranges, the others are transparent") {
  SECTION("only nsightkit's domain") { restart({"nsightkit"}); }
  SECTION("nsightkit's and MyLib") { restart({"nsightkit", "MyLib"}); }
  for (int i = 0; i < 2; ++i) {
    nsk::ScopedRange step{nsk::Attributes{nsk::detail::step_category()}, "step"};
    nsk::ScopedRange model{"model"};
    nvtxRangePushA("default-domain call");
    nvtx3::scoped_range_in<MyLib> lib{"factor"};
    { nsk::ScopedRange inner{"inner"}; }
    nvtxRangePop();
  }
  auto const s = nsk::Report::snapshot();
  if constexpr (nsk::enabled) {
    CHECK(s.steps.count == 2);
    CHECK(calls(s, "model") == 2);
    CHECK(calls(s, "model/default-domain call") == 0);
    bool const lib_kept = nsk::Report::options().domains.size() == 2;
    CHECK(calls(s, "model/MyLib@factor") == (lib_kept ? 2u : 0u));
    CHECK(calls(s, lib_kept ? "model/MyLib@factor/inner" : "model/inner") == 2);
  }
  restart();
}

TEST_CASE("domains= parses all and names joined by '+'") {
  auto const o = nsk::ReportOptions::try_parse("json=x.json,domains=nsightkit+default+CCCL");
  REQUIRE(o.has_value());
  CHECK(o->domains == std::vector<std::string>{"nsightkit", "default", "CCCL"});
  auto const all = nsk::ReportOptions::try_parse("domains=all");
  REQUIRE(all.has_value());
  CHECK(all->domains.empty());
  std::string why;
  CHECK_FALSE(nsk::ReportOptions::try_parse("domains=a++b", &why).has_value());
  CHECK(why.find("domains=a++b") != std::string::npos);
  CHECK_FALSE(nsk::ReportOptions::try_parse("domains", &why).has_value());
  CHECK(why.find("needs a value") != std::string::npos);
}
