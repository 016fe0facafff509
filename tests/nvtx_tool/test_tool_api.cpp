// The NVTX tool library's C ABI (detail/tool_api.hpp), called as the Python package calls it: this
// program knows nothing of nsightkit's C++ API, it dlopens the library (NSIGHTKIT_TEST_TOOL) and
// calls its C functions. A window's phases and edges, NSIGHTKIT_CAPTURE, misuse, requested
// captures, and the report a block starts and writes (read back from its summary JSON).
#include <nsightkit/detail/tool_api.hpp>

#include <nvtx3/nvToolsExt.h>
#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <unistd.h>

#ifndef NSIGHTKIT_TEST_TOOL
#error "NSIGHTKIT_TEST_TOOL names the tool library under test"
#endif

namespace api = nsightkit::detail::tool_api;

namespace {

/// The library's functions, looked up once.
struct Tool {
  void* handle{::dlopen(NSIGHTKIT_TEST_TOOL, RTLD_NOW | RTLD_LOCAL)};
  template <class F>
  F* get(F*, char const* name) const {
    void* f = handle == nullptr ? nullptr : ::dlsym(handle, name);
    if (f == nullptr) FAIL("missing " << name << ": " << ::dlerror());
    return reinterpret_cast<F*>(f);
  }
#define NSIGHTKIT_TEST_FN(name)                                                                    \
  decltype(&::name) name = get(static_cast<decltype(&::name)>(nullptr), #name)
  NSIGHTKIT_TEST_FN(nsightkit_tool_api_version);
  NSIGHTKIT_TEST_FN(nsightkit_tool_window_new);
  NSIGHTKIT_TEST_FN(nsightkit_tool_window_free);
  NSIGHTKIT_TEST_FN(nsightkit_tool_window_step);
  NSIGHTKIT_TEST_FN(nsightkit_tool_step_end);
  NSIGHTKIT_TEST_FN(nsightkit_tool_step_number);
  NSIGHTKIT_TEST_FN(nsightkit_tool_step_phase);
  NSIGHTKIT_TEST_FN(nsightkit_tool_phase_name);
  NSIGHTKIT_TEST_FN(nsightkit_tool_window_phase_of);
  NSIGHTKIT_TEST_FN(nsightkit_tool_window_next_step);
  NSIGHTKIT_TEST_FN(nsightkit_tool_window_state);
  NSIGHTKIT_TEST_FN(nsightkit_tool_window_schedule);
  NSIGHTKIT_TEST_FN(nsightkit_tool_window_close);
  NSIGHTKIT_TEST_FN(nsightkit_tool_request_capture);
  NSIGHTKIT_TEST_FN(nsightkit_tool_report_owner);
  NSIGHTKIT_TEST_FN(nsightkit_tool_report_start);
  NSIGHTKIT_TEST_FN(nsightkit_tool_report_finish);
  NSIGHTKIT_TEST_FN(nsightkit_tool_domain_seen);
#undef NSIGHTKIT_TEST_FN
};

Tool const& tool() {
  static Tool const t;
  return t;
}

/// A window made through the ABI (its status and message kept), freed at the end of the scope.
struct Window {
  explicit Window(std::vector<std::int64_t> schedule, unsigned flags = 0,
                  unsigned backends = 2u /* the NVTX range: no driver call */) {
    flags |= api::no_synchronize;  // nor a synchronize
    status = tool().nsightkit_tool_window_new(schedule.data(), backends, flags, "capture",
                                              "NSIGHTKIT_CAPTURE", &handle, error, sizeof error);
  }
  ~Window() { tool().nsightkit_tool_window_free(handle); }
  Window(Window const&) = delete;
  Window& operator=(Window const&) = delete;

  /// Runs `n` steps; each one's phase name.
  std::vector<std::string> run(int n) {
    std::vector<std::string> phases;
    for (int i = 0; i < n; ++i) {
      void* step = nullptr;
      char e[512];
      REQUIRE(tool().nsightkit_tool_window_step(handle, &step, e, sizeof e) == api::ok);
      phases.emplace_back(tool().nsightkit_tool_phase_name(tool().nsightkit_tool_step_phase(step)));
      tool().nsightkit_tool_step_end(step);
    }
    return phases;
  }

  void* handle{nullptr};
  int status{-1};
  char error[1024]{};
};

std::vector<std::string> split(char const* letters) {
  std::vector<std::string> out;
  for (char const* c = letters; *c != 0; ++c) {
    switch (*c) {
      case 'W': out.emplace_back("wait"); break;
      case 'U': out.emplace_back("warmup"); break;
      case 'A': out.emplace_back("active"); break;
      case 'D': out.emplace_back("done"); break;
      default: out.emplace_back("off"); break;
    }
  }
  return out;
}

std::string temp_path(char const* name) {
  return "tool_api_" + std::to_string(::getpid()) + "_" + name;
}

nlohmann::json read_json(std::string const& path) {
  std::ifstream in{path};
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

std::uint64_t calls(nlohmann::json const& summary, std::string const& path) {
  for (auto const& row : summary.at("paths")) {
    if (row.at("path") == path) return row.at("count").get<std::uint64_t>();
  }
  return 0;
}

struct NoCaptureVariable {
  NoCaptureVariable() { ::unsetenv("NSIGHTKIT_CAPTURE"); }
  ~NoCaptureVariable() { ::unsetenv("NSIGHTKIT_CAPTURE"); }
};

}  // namespace

TEST_CASE("the library speaks this version of the C ABI") {
  REQUIRE(tool().handle != nullptr);
  CHECK(tool().nsightkit_tool_api_version() == api::version);
}

TEST_CASE("a window's steps have the C++ window's phases and edges") {
  NoCaptureVariable env;
  Window w{{2, 1, 3, 1, 0, 0}};
  REQUIRE(w.status == api::ok);
  std::vector<std::string> phases;
  std::vector<bool> capturing;
  for (int i = 0; i < 8; ++i) {
    void* step = nullptr;
    char e[256];
    REQUIRE(tool().nsightkit_tool_window_step(w.handle, &step, e, sizeof e) == api::ok);
    CHECK(tool().nsightkit_tool_step_number(step) == i);
    phases.emplace_back(tool().nsightkit_tool_phase_name(tool().nsightkit_tool_step_phase(step)));
    capturing.push_back((tool().nsightkit_tool_window_state(w.handle) & api::capturing) != 0);
    tool().nsightkit_tool_step_end(step);
  }
  CHECK(phases == split("WWUAAADD"));
  CHECK(capturing == std::vector<bool>{false, false, false, true, true, true, false, false});
  CHECK(tool().nsightkit_tool_window_next_step(w.handle) == 8);
  CHECK(std::string{tool().nsightkit_tool_phase_name(
            tool().nsightkit_tool_window_phase_of(w.handle, 4))} == "active");
  std::int64_t s[6] = {};
  tool().nsightkit_tool_window_schedule(w.handle, s);
  CHECK(std::vector<std::int64_t>(s, s + 6) == std::vector<std::int64_t>{2, 1, 3, 1, 0, 0});
  CHECK(tool().nsightkit_tool_window_state(w.handle) == 0u);
  CHECK(std::string{tool().nsightkit_tool_phase_name(99)} == "?");
}

TEST_CASE("an open step refuses the next, with the C++ window's message") {
  NoCaptureVariable env;
  Window w{{0, 0, 1, 0, 0, 0}};
  REQUIRE(w.status == api::ok);
  void* first = nullptr;
  void* second = nullptr;
  char e[1024] = {};
  REQUIRE(tool().nsightkit_tool_window_step(w.handle, &first, e, sizeof e) == api::ok);
  CHECK(tool().nsightkit_tool_window_step(w.handle, &second, e, sizeof e) == api::refused);
  CHECK(second == nullptr);
  CHECK_THAT(e, Catch::Contains("step 0 is still open"));
  tool().nsightkit_tool_step_end(first);
  CHECK(w.run(1) == split("A"));
}

TEST_CASE("an invalid schedule is an invalid argument, named") {
  NoCaptureVariable env;
  Window w{{0, 0, 0, 1, 0, 0}};
  CHECK(w.status == api::invalid);
  CHECK(w.handle == nullptr);
  CHECK_THAT(w.error, Catch::Contains("invalid schedule") && Catch::Contains("active"));
  Window negative{{-1, 0, 1, 1, 0, 0}};
  CHECK(negative.status == api::invalid);
  CHECK_THAT(negative.error, Catch::Contains("wait"));
}

TEST_CASE("NSIGHTKIT_CAPTURE replaces the schedule, as in C++") {
  NoCaptureVariable env;
  ::setenv("NSIGHTKIT_CAPTURE", "wait=1,active=2", 1);
  Window w{{5, 0, 1, 1, 0, 0}};
  REQUIRE(w.status == api::ok);
  CHECK(tool().nsightkit_tool_window_state(w.handle) == api::schedule_from_environment);
  std::int64_t s[6] = {};
  tool().nsightkit_tool_window_schedule(w.handle, s);
  CHECK(std::vector<std::int64_t>(s, s + 6) == std::vector<std::int64_t>{1, 0, 2, 1, 0, 0});
  CHECK(w.run(5) == split("WAADD"));

  ::setenv("NSIGHTKIT_CAPTURE", "wait=-1,active=2", 1);
  Window bad{{0, 0, 1, 1, 0, 0}};
  REQUIRE(bad.status == api::ok);  // a bad value: one message, capture off
  CHECK((tool().nsightkit_tool_window_state(bad.handle) & api::off) != 0);
  CHECK(bad.run(2) == split("OO"));
  Window strict{{0, 0, 1, 1, 0, 0}, api::strict_environment};
  CHECK(strict.status == api::invalid);
  CHECK_THAT(strict.error, Catch::Contains("NSIGHTKIT_CAPTURE") && Catch::Contains("'-1'"));

  ::unsetenv("NSIGHTKIT_CAPTURE");
  Window from_env{{0, 0, 1, 1, 0, 0}, api::from_environment};
  REQUIRE(from_env.status == api::ok);
  CHECK(tool().nsightkit_tool_window_state(from_env.handle) == api::off);
  CHECK(from_env.run(2) == split("OO"));
}

TEST_CASE("an on-demand window captures the steps after a request") {
  NoCaptureVariable env;
  Window w{{0, 1, 2, 1, 0, 1}};
  REQUIRE(w.status == api::ok);
  CHECK(w.run(2) == split("WW"));
  tool().nsightkit_tool_request_capture();
  CHECK(w.run(4) == split("UAAW"));
}

TEST_CASE("a report block: bad specifications, the outputs, captured steps, NVTX modules") {
  NoCaptureVariable env;
  char e[4096] = {};
  CHECK(tool().nsightkit_tool_report_owner() == api::owner_none);
  CHECK(tool().nsightkit_tool_report_start("table,tabel", e, sizeof e) == api::invalid);
  CHECK_THAT(e, Catch::Contains("unknown item 'tabel'") && Catch::Contains("expected"));
  CHECK(tool().nsightkit_tool_report_start("off", e, sizeof e) == api::invalid);
  CHECK_THAT(e, Catch::Contains("turns the report off"));
  CHECK(tool().nsightkit_tool_report_finish(1, e, sizeof e) == api::refused);
  CHECK_THAT(e, Catch::Contains("does not run"));
  // No CUPTI source in this library (or no GPU here): gpu=cupti is refused, not degraded.
  CHECK(tool().nsightkit_tool_report_start("json=x.json,gpu=cupti", e, sizeof e) == api::refused);
  CHECK_THAT(e, Catch::Contains("gpu=cupti, but"));

  std::string const all = temp_path("all.json");
  std::string const spec = "table=" + temp_path("table.txt") + ",json=" + all;
  REQUIRE(tool().nsightkit_tool_report_start(spec.c_str(), e, sizeof e) == api::ok);
  CHECK(tool().nsightkit_tool_report_owner() == api::owner_this);
  CHECK(tool().nsightkit_tool_report_start(spec.c_str(), e, sizeof e) == api::refused);
  CHECK_THAT(e, Catch::Contains("already runs"));
  // This program's NVTX starts now, with the library as its tool: its domain and ranges reach
  // the report (the probe nsightkit.profile() makes through the nvtx package).
  ::setenv("NVTX_INJECTION64_PATH", NSIGHTKIT_TEST_TOOL, 1);
  CHECK(tool().nsightkit_tool_domain_seen("tool api probe") == 0);
  nvtxDomainHandle_t const d = nvtxDomainCreateA("tool api probe");
  CHECK(tool().nsightkit_tool_domain_seen("tool api probe") == 1);
  {
    Window w{{2, 1, 3, 1, 0, 0}};
    REQUIRE(w.status == api::ok);
    for (int i = 0; i < 8; ++i) {
      void* step = nullptr;
      REQUIRE(tool().nsightkit_tool_window_step(w.handle, &step, e, sizeof e) == api::ok);
      nvtxRangePushA("train_step");
      nvtxEventAttributes_t a{};
      a.version = NVTX_VERSION;
      a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
      a.messageType = NVTX_MESSAGE_TYPE_ASCII;
      a.message.ascii = "inner";
      nvtxDomainRangePushEx(d, &a);
      nvtxDomainRangePop(d);
      nvtxRangePop();
      tool().nsightkit_tool_step_end(step);
    }
  }
  REQUIRE(tool().nsightkit_tool_report_finish(1, e, sizeof e) == api::ok);
  nvtxRangePushA("after the block");  // the report is off: not counted anywhere
  nvtxRangePop();
  nlohmann::json const s = read_json(all);
  CHECK(s.at("steps").at("count") == 8);
  CHECK(calls(s, "train_step") == 8);
  CHECK(calls(s, "train_step/tool api probe@inner") == 8);
  CHECK(s.at("start_end_ranges").at(0).at("name") == "capture");
  CHECK(s.at("start_end_ranges").at(0).at("time").at("count") == 1);

  // A second block holds its own run only; `window-only` counts the active steps.
  std::string const captured = temp_path("captured.json");
  std::string const spec2 = "window-only,table=" + temp_path("table2.txt") + ",json=" + captured;
  REQUIRE(tool().nsightkit_tool_report_start(spec2.c_str(), e, sizeof e) == api::ok);
  {
    Window w{{2, 1, 3, 1, 0, 0}};
    REQUIRE(w.status == api::ok);
    for (int i = 0; i < 8; ++i) {
      void* step = nullptr;
      REQUIRE(tool().nsightkit_tool_window_step(w.handle, &step, e, sizeof e) == api::ok);
      nvtxRangePushA("train_step");
      nvtxRangePop();
      tool().nsightkit_tool_step_end(step);
    }
  }
  REQUIRE(tool().nsightkit_tool_report_finish(1, e, sizeof e) == api::ok);
  nlohmann::json const c = read_json(captured);
  CHECK(c.at("captured_only") == true);
  CHECK(c.at("steps").at("count") == 3);
  CHECK(calls(c, "train_step") == 3);
  CHECK(calls(c, "after the block") == 0);

  // An output that cannot be written is refused before the block, not found at its end.
  std::string const nowhere = "json=" + all + "/not-a-directory/x.json";
  CHECK(tool().nsightkit_tool_report_start(nowhere.c_str(), e, sizeof e) == api::refused);
  CHECK_THAT(e, Catch::Contains("summary JSON cannot be written"));
  for (std::string const& f : {all, captured, temp_path("table.txt"), temp_path("table2.txt")})
    ::unlink(f.c_str());
  ::unsetenv("NVTX_INJECTION64_PATH");
}
