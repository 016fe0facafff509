// A program that carries its own report (compiled nsightkit, Report::enable()) and then loads the
// NVTX tool library, as a Python process does when a C++ extension built with nsightkit started
// its report: the library's C ABI refuses a capture window and a report block, naming why, since
// that report cannot see the library's capture state or outputs.
#include <nsightkit/detail/tool_api.hpp>
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <cstdint>

#include <dlfcn.h>

#ifndef NSIGHTKIT_TEST_TOOL
#error "NSIGHTKIT_TEST_TOOL names the tool library under test"
#endif

namespace api = nsightkit::detail::tool_api;

TEST_CASE("the program's own report refuses the tool library's window and report block") {
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  o.gpu = false;
  REQUIRE(nsightkit::Report::enable(o));
  void* lib = ::dlopen(NSIGHTKIT_TEST_TOOL, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib != nullptr);
  auto const owner = reinterpret_cast<decltype(&nsightkit_tool_report_owner)>(
      ::dlsym(lib, "nsightkit_tool_report_owner"));
  auto const window_new = reinterpret_cast<decltype(&nsightkit_tool_window_new)>(
      ::dlsym(lib, "nsightkit_tool_window_new"));
  auto const report_start = reinterpret_cast<decltype(&nsightkit_tool_report_start)>(
      ::dlsym(lib, "nsightkit_tool_report_start"));
  REQUIRE((owner != nullptr && window_new != nullptr && report_start != nullptr));

  CHECK(owner() == api::owner_program);
  std::int64_t const schedule[6] = {0, 0, 1, 1, 0, 0};
  void* window = reinterpret_cast<void*>(1);
  char e[2048] = {};
  CHECK(window_new(schedule, 3u, 0u, "capture", "NSIGHTKIT_CAPTURE", &window, e, sizeof e) ==
        api::refused);
  CHECK(window == nullptr);
  CHECK_THAT(e, Catch::Contains("compiled into the program") &&
                    Catch::Contains("a Python capture window"));
  CHECK(report_start("table", e, sizeof e) == api::refused);
  CHECK_THAT(e, Catch::Contains("compiled into the program") && Catch::Contains("this report"));
}
