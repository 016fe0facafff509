// A small consumer of nsightkit for the packaging tests that only need to know that a program
// compiles, links and runs with the NVTX3 headers a route chose: a range with a formatted name, a
// mark, and the Recorder checking what reached NVTX.
//
// usage: probe      Exit code 0 on success; prints one line either way.
#include <nsightkit/range.hpp>
#include <nsightkit/testing.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main() {
#if defined(NSIGHTKIT_COMPILED)
  char const* const mode = "compiled";
#else
  char const* const mode = "header-only";
#endif
  nsightkit::testing::Recorder rec;
  {
    nsightkit::ScopedRange step{"step {}", 7};  // formatted (by libnsightkit when compiled)
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
  std::printf("probe ok: %zu NVTX events, %s\n", expected.size(), mode);
  return 0;
}
