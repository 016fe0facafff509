// A consumer of nsightkit: checks through the Recorder that its ranges reach NVTX (or, built with
// NSIGHTKIT_DISABLE, that nothing does). Exit code 0 on success.
#include <nsightkit/nsightkit.hpp>
#include <nsightkit/testing.hpp>

#include <cstdio>
#include <string>
#include <vector>

static void work(int i) {
  NSIGHTKIT_FUNC_RANGE();
  nsightkit::ScopedRange r{"item {}", i};
}

int main() {
  nsightkit::testing::Recorder rec;
  work(1);
  std::vector<std::string> const expected =
      nsightkit::enabled ? std::vector<std::string>{"push nsightkit work", "push nsightkit item 1",
                                                    "pop nsightkit", "pop nsightkit"}
                         : std::vector<std::string>{};
  if (rec.lines() != expected) {
    std::fprintf(stderr, "consumer: unexpected NVTX events (%zu)\n", rec.lines().size());
    for (auto const& l : rec.lines()) std::fprintf(stderr, "  %s\n", l.c_str());
    return 1;
  }
  std::printf("consumer ok: nsightkit %s, instrumentation %s\n", nsightkit::version_string,
              nsightkit::enabled ? "enabled" : "disabled");
  return 0;
}
