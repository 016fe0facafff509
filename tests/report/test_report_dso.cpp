// One report per process across shared libraries that embed nsightkit (docs/design.md,
// "Process-wide state in a header-only library"). The host links one plugin and loads another with
// dlopen(RTLD_LOCAL); both are built with -fvisibility=hidden. The linked plugin must share the
// host's report. The loaded one either shares it too (GCC: unique symbols) or is detected as a
// second copy that stays off with a message (clang) — never two reports that each silently hold
// half of the ranges.
#include <nsightkit/detail/report/engine.hpp>  // the engine's pieces, in either mode
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <string>
#include <vector>

extern "C" void report_plugin_record(int i);
extern "C" void const* report_plugin_state();

namespace {
nsightkit::ReportOptions quiet() {
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  return o;
}

/// The merged paths, sorted (real clock: the report's order by total is not predictable here).
std::vector<std::string> paths() {
  std::vector<std::string> out;
  for (auto const& r : nsightkit::Report::snapshot().paths) out.push_back(r.path);
  std::sort(out.begin(), out.end());
  return out;
}

void const* host_state() {
#if NSIGHTKIT_ENABLED
  return nsightkit::detail::report::state();
#else
  return nullptr;
#endif
}
}  // namespace

TEST_CASE("a linked plugin built with hidden visibility records into the host's report") {
  nsightkit::Report::reset();
  REQUIRE(nsightkit::Report::enable(quiet()) == nsightkit::enabled);
  report_plugin_record(1);
  { nsightkit::ScopedRange r{"host"}; }
  REQUIRE(report_plugin_state() == host_state());
  if (nsightkit::enabled) {
    REQUIRE(host_state() != nullptr);
    REQUIRE(paths() == std::vector<std::string>{"host", "plugin1", "plugin1/work"});
  } else {
    REQUIRE(paths().empty());
  }
  nsightkit::Report::disable();
  nsightkit::Report::reset();
}

TEST_CASE(
    "an RTLD_LOCAL plugin shares the report or is detected as a second copy, never silently "
    "split") {
  nsightkit::Report::reset();
  REQUIRE(nsightkit::Report::enable(quiet()) == nsightkit::enabled);
  void* lib = dlopen(NSK_REPORT_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib != nullptr);
  auto* record = reinterpret_cast<void (*)(int)>(dlsym(lib, "report_plugin_record"));
  auto* state = reinterpret_cast<void const* (*)()>(dlsym(lib, "report_plugin_state"));
  auto* enable = reinterpret_cast<int (*)()>(dlsym(lib, "report_plugin_enable"));
  auto* duplicate = reinterpret_cast<int (*)()>(dlsym(lib, "report_plugin_duplicate"));
  REQUIRE((record && state && enable && duplicate));
  int const enabled_there = enable();
  record(2);
  if (!nsightkit::enabled) {
    REQUIRE(enabled_there == 0);
    REQUIRE(paths().empty());
  } else if (state() == host_state()) {
    INFO("unified: the plugin's ranges are in the host's report");
    REQUIRE(enabled_there == 1);
    REQUIRE(duplicate() == 0);
    REQUIRE(paths() == std::vector<std::string>{"plugin2", "plugin2/work"});
  } else {
    INFO("not unified: the plugin's copy must have detected the host's report and stayed off");
    REQUIRE(enabled_there == 0);
    REQUIRE(duplicate() == 1);
    REQUIRE(state() == nullptr);
  }
  nsightkit::Report::disable();
  nsightkit::Report::reset();
}
