// A small consumer of nsightkit for the packaging tests that only need to know that a program
// compiles, links and runs with the NVTX3 headers and the {fmt} mode a route chose: a range with
// a name formatted by {fmt}, a mark, and the Recorder checking what reached NVTX.
//
// usage: probe [fmt-header-only|fmt-library]   the {fmt} mode the build was asked for (checked)
// Exit code 0 on success; prints one line either way.
#include <nsightkit/range.hpp>
#include <nsightkit/testing.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
#if defined(FMT_HEADER_ONLY)
  char const* const fmt_mode = "fmt-header-only";
#else
  char const* const fmt_mode = "fmt-library";
#endif
  if (argc > 1 && std::strcmp(argv[1], fmt_mode) != 0) {
    std::fprintf(stderr, "probe: built with %s, expected %s\n", fmt_mode, argv[1]);
    return 1;
  }
  nsightkit::testing::Recorder rec;
  {
    nsightkit::ScopedRange step{"step {}", 7};  // formatted by {fmt}
    nsightkit::mark("probe");
  }
  std::vector<std::string> const expected =
      nsightkit::enabled ? std::vector<std::string>{"push nsightkit step 7", "mark nsightkit probe",
                                                    "pop nsightkit"}
                         : std::vector<std::string>{};
  if (rec.lines() != expected) {
    std::fprintf(stderr, "probe: %zu NVTX events, expected %zu:\n", rec.lines().size(),
                 expected.size());
    for (auto const& l : rec.lines()) std::fprintf(stderr, "  %s\n", l.c_str());
    return 1;
  }
  std::printf("probe ok: %zu NVTX events, %s\n", expected.size(), fmt_mode);
  return 0;
}
